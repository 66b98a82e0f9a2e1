"""Start-up of every Python process of a test file's tree, put first on ``PYTHONPATH`` by ci_runner.

Python imports the first ``sitecustomize`` on its path at start-up; this one, in every process
that inherits the runner's ``PYTHONPATH`` (the file's own and its Python children):

1. registers a stack dump: on ``SIGUSR2``, :mod:`faulthandler` writes the stack of every thread
   to ``$CI_RUNNER_STACK_PREFIX<pid>`` (reopened for a forked child). That file marks the
   process as ready: the runner sends the signal only to processes that have one and that catch
   the signal, since its default action would kill any other process;
2. hooks unittest's result reporting and its loader when ``unittest`` is first imported, so
   unittest cases are written to the case record however they are started, and only the cases
   the runner selects load (:mod:`ci_runner_unittest_hook`);
3. runs the ``sitecustomize`` it shadows, if there is one further along the path.

Standard library only, and cheap (about 1 ms a process beyond what any ``sitecustomize`` costs):
besides ``signal`` and ``faulthandler``, nothing is imported until a test reports a case. The
variable names are those :mod:`ci_runner_case_record` defines (a test checks they agree).
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_RECORD = "CI_RUNNER_CASE_RECORD"
_DEPTH = "CI_RUNNER_CASE_DEPTH"
_STACK_PREFIX = "CI_RUNNER_STACK_PREFIX"
_STACK_SIGNAL = "SIGUSR2"
CI_RUNNER_DEPTH = None  # this process's depth (ci_runner_case_record reads it)
_dump_files = []  # kept open for faulthandler, one per process (a forked child adds its own)


def _register_stack_dump(prefix, signal_name):
    import faulthandler
    import signal

    signum = getattr(signal, signal_name)

    def register():
        try:
            handle = open(f"{prefix}{os.getpid()}", "w")  # noqa: SIM115
            faulthandler.register(signum, file=handle, all_threads=True, chain=False)
        except (OSError, ValueError, RuntimeError):
            return  # the runner's directory is gone: this process simply gets no stack dump
        _dump_files.append(handle)

    register()
    os.register_at_fork(after_in_child=register)


class _UnittestHook:
    """A meta path finder that patches ``unittest.result`` (case reporting) and
    ``unittest.loader`` (the runner's case selection) right after each is first loaded."""

    def __init__(self):
        self.pending = {"unittest.result": _hook_unittest, "unittest.loader": _hook_loader}

    def find_spec(self, name, path=None, target=None):
        hook = self.pending.pop(name, None)
        if hook is None:
            return None
        spec = _path_finder().find_spec(name, path, target)
        loader = getattr(spec, "loader", None)
        run = getattr(loader, "exec_module", None)
        if run is None:
            return None

        def exec_module(module):
            run(module)
            hook(module)

        loader.exec_module = exec_module
        return spec


def _hook_unittest(result_module):
    try:
        import ci_runner_unittest_hook

        ci_runner_unittest_hook.install(result_module)
    except Exception:  # never break a test process for a report
        pass


def _hook_loader(loader_module):
    try:
        import ci_runner_unittest_hook

        ci_runner_unittest_hook.install_loader(loader_module)
    except Exception:  # never break a test process for a report
        pass


def _path_finder():
    """importlib's PathFinder, from the module start-up already loaded (importing
    ``importlib.machinery`` would load ``importlib`` and ``warnings`` in every process)."""
    return sys.modules["_frozen_importlib_external"].PathFinder


def _chain():
    """Run the ``sitecustomize`` this one shadows, reporting its errors as ``site`` does."""
    others = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = _path_finder().find_spec("sitecustomize", others)
    if spec is None or spec.loader is None:
        return
    module = type(sys)("sitecustomize")
    module.__file__ = spec.origin
    module.__spec__ = spec
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        if sys.flags.verbose:
            sys.excepthook(*sys.exc_info())
        else:
            sys.stderr.write(
                "Error in sitecustomize; set PYTHONVERBOSE for traceback:\n"
                f"{err.__class__.__name__}: {err}\n"
            )


def _install():
    global CI_RUNNER_DEPTH
    if os.environ.get(_RECORD):
        try:
            CI_RUNNER_DEPTH = max(0, int(os.environ.get(_DEPTH, "0")))
        except ValueError:
            CI_RUNNER_DEPTH = 0
        os.environ[_DEPTH] = str(CI_RUNNER_DEPTH + 1)  # this process's Python children
        finder = _UnittestHook()
        for name, hook in list(finder.pending.items()):
            if name in sys.modules:
                finder.pending.pop(name)
                hook(sys.modules[name])
        if finder.pending:
            sys.meta_path.insert(0, finder)
    prefix = os.environ.get(_STACK_PREFIX)
    if prefix:
        _register_stack_dump(prefix, _STACK_SIGNAL)


try:  # noqa: SIM105 - plain try: no contextlib import at start-up
    _install()
except Exception:  # never break a test process for a report
    pass
_chain()
