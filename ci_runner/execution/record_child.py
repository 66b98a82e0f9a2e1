"""The child side of ``--record-deps``: what a Python process of a recorded file runs and opens.

Every Python process of the file's tree starts this module: the package's ``.pth`` file
(``a1_ci_runner_record.pth``, which ``setup.py`` installs next to the package) calls :func:`start`
where ``CI_RUNNER_RECORD_DEPS`` names the run's recording configuration. On Python >= 3.12 the
process notes the code objects of the repository it runs with ``sys.monitoring``
(:mod:`ci_runner.execution.executed_code`: a record's unit is a function, so no line events and
no coverage.py, whose import alone costs a process about 0.08 s); on older interpreters
coverage.py starts at once and measures lines with its C tracer. Where the ``.pth`` file is not
installed the runner sets ``COVERAGE_PROCESS_START`` instead and coverage.py starts itself in
every process (its own ``.pth``). Where coverage runs it loads this module as its plugin
(``patch = fork, execv, _exit`` carry it into forked and exec'd images). Either way the module
installs an audit hook (PEP 578) that notes, for paths under the repository root:

* ``open``: files opened by anything but the import system, pytest's assertion rewriter (an
  import loader), the interpreter starting its script (imported and run code is recorded as
  code) and ``shutil.rmtree`` (it opens directories by name relative to a descriptor, to delete
  them); each under the test case running in the process then (the case-context plugin's, as the
  code is measured; "" outside every case and in every other process), as are listings;
* ``os.listdir`` / ``os.scandir``: directories listed, except by the import system (its own
  caches), by pytest's collection (the directory of each test file it runs: a file added there
  matters only as a ``conftest.py``, which runs everything by rule, an ``__init__.py`` or an
  imported module, which the decision covers) and by ``importlib.metadata`` (it looks for
  installed distributions on ``sys.path``);
* ``import``: module names whose import was attempted (found or not), so a new file that an
  existing import would now find is attributed;
* ``subprocess.Popen`` / ``os.exec`` / ``os.posix_spawn``: programs whose reads are not
  recorded: a program that is a file of the tree (not one installed into the running
  environment), a non-Python program given a repository path (or run in the repository with no
  path outside it), except those that read no file of the tree (``uname``, ``hostname``, ``git
  rev-parse``, ``git config``, ``hg path``, ``ldconfig -p``, ``lscpu``, a version query such as
  ``nvcc --version``, ...) or that cannot start, or a Python child that will not record (its
  environment drops the recording's variable, or ``-S``).

Each process marks its start (``<out>/<token>.start``) and writes ``<out>/<token>.json`` when it
exits (``atexit``; ``os._exit`` wrapped, as forked children leave through it; before an
``exec``). A process killed by a signal writes nothing, and the runner then knows its record
is incomplete.

A case's child processes: while a case runs (not while a fixture wider than a function is set
up), the process running it exports ``CI_RUNNER_RECORD_CASE``, a nonce of that run of the case,
and notes when the run ended. A Python process started with it (exec'd or forked, and their own
children) records everything under the context ``ci-runner-case-child:<nonce>`` (coverage's
static context where coverage measures) and notes its opens under it, and writes in its notes
when it ended. The runner gives that process's code and reads to the case only when every such
process ended before the case did (:func:`ci_runner.execution.dep_recording.child_runs`); one
that outlived it (a server, a background job) leaves them to the file, which every case shares.

Standard library only: it runs in every child. The audit hook returns at once for the events
it does not note, which are nearly all of them.
"""

from __future__ import annotations

import _thread
import atexit
import glob
import json
import os
import shutil
import sys
import time
import uuid

from ci_runner.execution.executed_code import ExecutedCode

_IMPORT_SYSTEM = ("<frozen importlib._bootstrap", "<frozen zipimport>")
# Listings that find no file a test reads: pytest collecting a test file's directory and
# importlib.metadata looking for installed distributions on sys.path.
_LISTERS = (f"{os.sep}_pytest{os.sep}", f"{os.sep}importlib{os.sep}metadata{os.sep}")
# pytest's assertion rewriter is an import loader: the module it reads is imported code
_REWRITER = f"{os.sep}_pytest{os.sep}assertion{os.sep}rewrite.py"
# pytest's configuration discovery reads only its own table of pyproject.toml
_PYTEST_CONFIG = f"{os.sep}_pytest{os.sep}config{os.sep}findpaths.py"
# The start hook's file (this package's ``.pth``), and where an installation keeps such files.
START_HOOK_NAME = "a1_ci_runner_record.pth"
_SITE_DIRECTORIES = (
    "lib*/python3*/site-packages", "lib*/python3*/dist-packages", "local/lib*/python3*/dist-packages"
)  # fmt: skip
# Programs that read no file of the tree whatever their arguments (``platform.processor()``
# runs ``uname -p``, so every pytest-xdist worker does)
_READ_NO_FILE = frozenset({"uname", "hostname", "nproc", "sleep", "true", "false"})
# ``ldconfig -p`` prints the system's library cache (/etc/ld.so.cache) and nothing else;
# ``ctypes.util.find_library`` runs it, so every process of soundfile, numba or triton does.
# Any other argument (``-C FILE``, ``-f CONF``, a directory) may name a file of the tree.
_LDCONFIG_PRINT = frozenset({"-p", "--print-cache"})
# A version query of a program of the system (torch's and triton's probes: ``nvcc --version``,
# ``c++ --version``, ``c++ -dumpfullversion -dumpversion``) reads no file of the tree.
_VERSION_QUERIES = frozenset({"--version", "-dumpversion", "-dumpfullversion", "-dumpmachine"})
_COMPILERS = frozenset({"cc", "c++", "gcc", "g++", "clang", "clang++", "nvcc"})  # ``g++ -v``
# Version-control queries of the repository's metadata (config, refs, the commit id, whether the
# work tree is dirty), never a tracked file's bytes, unless an argument names an object by path
# (``HEAD:file``); pytest-benchmark runs ``git rev-parse``, ``git config``, ``hg path``, ``git
# describe --dirty`` and ``git show -s`` in every pytest session. What depends on the commit id
# itself is outside what a record models (docs/change-impact.md).
_GIT_READS_NO_FILE = frozenset({"rev-parse", "config", "symbolic-ref", "version", "describe"})
_GIT_VALUED_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})
_HG_VALUED_OPTIONS = frozenset({"-R", "--repository", "--cwd", "--config"})
_HG_READS_NO_FILE = frozenset(
    {"path", "paths", "root", "version", "config", "showconfig", "id", "identify", "tip", "branch"}
)
START_VARIABLE = "CI_RUNNER_RECORD_DEPS"  # the run's coverage configuration, for start()
COVERAGE_START = "COVERAGE_PROCESS_START"
_PROCESS_VARIABLES = (START_VARIABLE, COVERAGE_START, "COVERAGE_PROCESS_CONFIG")
CASE_VARIABLE = "CI_RUNNER_RECORD_CASE"  # the nonce of the case run whose children these are
CHILD_CONTEXT = "ci-runner-case-child:"  # + the nonce: the context of a case's child processes
_NONCE_LENGTH = 16
# The audit events the hook notes; pytest raises others (``builtins.id``, ``object.__getattr__``,
# ``exec``, ``compile``, ...) tens of thousands of times a file.
_EVENTS = frozenset(
    {"open", "os.listdir", "os.scandir", "import", "subprocess.Popen", "os.posix_spawn", "os.exec"}
)  # fmt: skip


def case_nonce(value: object) -> str:
    """``value`` when it is a nonce this module makes (hex digits of one length), else ""."""
    text = value if isinstance(value, str) else ""
    hexadecimal = all(c in "0123456789abcdef" for c in text)
    return text if len(text) == _NONCE_LENGTH and hexadecimal else ""


class _Notes:
    def __init__(self, root: str, out: str, tag: str = "") -> None:
        self.root = root.rstrip("/") + "/"
        self.out = out
        self.pid = os.getpid()
        self.token = f"{self.pid}-{uuid.uuid4().hex[:12]}"
        self.tag = tag  # the nonce of the case run this process is a child of ("" if none)
        self.current: tuple[str, str] | None = None  # (nonce, case id) of the case running here
        self.runs: dict[str, dict[str, object]] = {}  # nonce -> {"case": id, "ended": seconds}
        self.opened: set[str] = set()
        self.opened_by: dict[str, set[str]] = {}  # case id ("" outside every case) -> paths
        self.listed_by: dict[str, set[str]] = {}  # the same, for directories listed
        self.listed: set[str] = set()
        self.imported: set[str] = set()
        self.unbounded: list[str] = []

    def path(self, raw: object) -> str | None:
        """An absolute path for a str/bytes/PathLike argument; None for descriptors."""
        try:
            text = os.fsdecode(os.fspath(raw))  # type: ignore[arg-type]
        except TypeError:
            return None
        return os.path.abspath(text)

    @property
    def context(self) -> str:
        """The context this process records under outside every case: its case run's, if it is
        a child of one, else ""."""
        return CHILD_CONTEXT + self.tag if self.tag else ""

    def inside(self, path: str) -> bool:
        return path.startswith(self.root) or path + "/" == self.root

    def import_names(self) -> set[str]:
        """Imports that a new repository file could change: the full name of a module found in
        the repository or not found at all, the top-level name of any other (a new top-level
        file could shadow it)."""
        names: set[str] = set()
        for name in self.imported:
            module = sys.modules.get(name)
            where = getattr(module, "__file__", None) if module is not None else None
            if module is None or (isinstance(where, str) and self.inside(where)):
                names.add(name)
            else:
                names.add(name.split(".")[0])
        return names

    def started(self) -> None:
        """Mark this process as started: one that never writes its notes died unrecorded."""
        try:
            with open(os.path.join(self.out, f"{self.token}.start"), "w"):
                pass
        except OSError:
            pass

    def flush(self) -> None:
        for _ in range(5):  # another thread may still add while the sets are copied
            try:
                self._write()
                return
            except RuntimeError:
                continue

    def _write(self) -> None:
        kept = {p for p in self.opened if self.inside(p) or _real_inside(p, self)}
        data: dict[str, object] = {
            "opened": sorted(kept),
            "opened_by": {
                case: sorted(paths & kept) for case, paths in list(self.opened_by.items())
            },
            "listed": sorted(p for p in self.listed if self.inside(p)),
            "listed_by": {
                case: sorted(p for p in paths if self.inside(p))
                for case, paths in list(self.listed_by.items())
            },
            "imported": sorted(self.import_names()),
            "unbounded": self.unbounded,
            "tag": self.tag,
            "ended": time.monotonic(),  # the clock every process of the machine shares
            "runs": {nonce: dict(run) for nonce, run in list(self.runs.items())},
        }
        if _executed is not None:
            data["executed"] = _executed.table()
        target = os.path.join(self.out, f"{self.token}.json")
        try:
            with open(target + ".tmp", "w", encoding="utf-8") as handle:
                json.dump(data, handle)
            os.replace(target + ".tmp", target)
        except OSError:
            pass  # the runner finds no notes for this process and says the record is incomplete


def _real_inside(path: str, notes: _Notes) -> bool:
    try:
        return notes.inside(os.path.realpath(path))
    except (OSError, ValueError):
        return False


_notes: _Notes | None = None
_hooked = False  # the audit hook, the atexit flush and os._exit's wrapper: once a process
_executed: ExecutedCode | None = None  # the code this process runs (Python >= 3.12), if recording
# the thread importing and starting coverage.py (its events are not the test's), or None
_starting: int | None = None


def _case() -> str:
    """The test case running in this process ("" outside every case): the context that the
    case-context plugin (``ci_runner_case_context``) set for coverage; in a child of a case,
    the context naming that case's run."""
    if _notes is not None and _notes.tag:
        return _notes.context
    context = sys.modules.get("ci_runner_case_context")
    current = getattr(context, "_current", "") if context is not None else ""
    return current if isinstance(current, str) else ""


def _caller() -> str:
    """The file of the code that called the audited function (frame 2: the hook is frame 1)."""
    try:
        return sys._getframe(2).f_code.co_filename
    except ValueError:  # called from C with no Python caller
        return ""


def _removing_a_tree() -> bool:
    """The audited ``open`` is shutil's tree removal opening a directory to delete it: it names
    the directory relative to its parent's descriptor (``dir_fd``, which the audit event does not
    carry), so the path would resolve against the working directory, and it reads no file."""
    try:
        code = sys._getframe(2).f_code
    except ValueError:
        return False
    return code.co_name.startswith("_rmtree") and code.co_filename == shutil.__file__


def _main_script() -> str | None:
    """The script this interpreter was started with (``python file.py``): opened from C, with
    no Python caller, to run it as code, which coverage measures."""
    argv = getattr(sys, "argv", None) or [""]
    return os.path.abspath(argv[0]) if argv[0].endswith(".py") else None


def _read_by(reader: str) -> bool:
    """Whether the audited open was called (through at most a few frames: ``pathlib``) by code
    of the file ``reader``."""
    try:
        frame = sys._getframe(3)  # past _read_by, its caller and the hook: who called open
    except ValueError:
        return False
    for _ in range(5):
        if frame is None:
            return False
        if frame.f_code.co_filename.endswith(reader):
            return True
        frame = frame.f_back
    return False


def _read_to_import(path: str) -> bool:
    """A Python file pytest's assertion rewriter reads (through ``pathlib``) to import it."""
    return path.endswith(".py") and _read_by(_REWRITER)


def _read_for_pytest_config(path: str) -> bool:
    """A ``pyproject.toml`` pytest's configuration discovery reads: it reads only its own
    ``[tool.pytest]`` table, and a change to that table runs everything by rule (any other file
    it reads stays an input of the record)."""
    return os.path.basename(path) == "pyproject.toml" and _read_by(_PYTEST_CONFIG)


def _records_itself(program: str, env: object, where: str | None) -> bool:
    """Whether the Python interpreter ``program`` starts this package's recorder: it is one of
    this process's environment, or of one where the start hook is installed. ``python3`` on a
    ``PATH`` that finds another installation (a pyenv shim, the system's Python beside a
    virtual environment that was not activated) records nothing, silently. One that cannot be
    found does not start."""
    if program == sys.executable:
        return True
    if os.sep in program:
        path: str | None = os.path.join(where or os.getcwd(), program)
    else:
        search = env.get("PATH") if isinstance(env, dict) else None  # type: ignore[union-attr]
        path = shutil.which(program, path=search if isinstance(search, str) else None)
    if path is None or not os.path.isfile(path):
        return True
    prefix = _environment_of(path)
    if prefix == os.path.realpath(sys.prefix):
        return True
    return any(
        os.path.isfile(os.path.join(found, START_HOOK_NAME))
        for pattern in _SITE_DIRECTORIES
        for found in glob.glob(os.path.join(glob.escape(prefix), pattern))
    )


def _environment_of(interpreter: str) -> str:
    """The prefix a Python interpreter runs in: the virtual environment whose ``pyvenv.cfg`` is
    beside it or one directory up (as Python looks for it), else its real file's installation."""
    directory = os.path.dirname(os.path.abspath(interpreter))
    for place in (directory, os.path.dirname(directory)):
        if os.path.isfile(os.path.join(place, "pyvenv.cfg")):
            return os.path.realpath(place)
    return os.path.dirname(os.path.dirname(os.path.realpath(interpreter)))


def _can_start(program: str, where: str | None) -> bool:
    """Whether ``program`` exists (a path, from the directory it starts in) or is on ``PATH``:
    one that cannot start reads nothing."""
    if os.sep in program:
        return os.path.exists(os.path.join(where or "/", program))
    return shutil.which(program) is not None


def _reads_vcs_metadata(name: str, args: list[str]) -> bool:
    """A git or Mercurial query of the repository's own metadata (config, refs, paths) that names
    no object by path (``HEAD:file``)."""
    if any(":" in arg and not arg.startswith("-") for arg in args[1:]):
        return False  # an object named by path (HEAD:file); an option's value may hold a colon
    if name == "git":
        command = _subcommand(args, _GIT_VALUED_OPTIONS)
        no_patch = command == "show" and ("-s" in args or "--no-patch" in args)
        return command in _GIT_READS_NO_FILE or no_patch
    if name == "hg":
        return _subcommand(args, _HG_VALUED_OPTIONS) in _HG_READS_NO_FILE
    return False


def _subcommand(args: list[str], valued_options: frozenset[str]) -> str:
    """The subcommand of a git or hg argv, past the tool's own options (``-C DIR``, ``-R REPO``,
    ...). The value of an unlisted option that takes one is read as the subcommand, which names
    a metadata query only by coincidence: the program then stays unbounded."""
    rest = iter(args[1:])
    for arg in rest:
        if arg in valued_options:
            next(rest, None)  # the option's value
        elif not arg.startswith("-"):
            return arg
    return ""


def _names_sysroot(arg: str) -> bool:
    """Whether an ``lscpu`` argument may be ``--sysroot``/``-s``: a long option that abbreviates
    it, a cluster of short options holding ``s`` before any ``=``, or no option at all.
    ``lscpu`` reads /proc and /sys, or the directory ``--sysroot`` names (SGLang's CPU binding
    runs ``lscpu -p=CPU,Core,Socket,Node``)."""
    name = arg.partition("=")[0]
    if name.startswith("--"):
        return len(name) > 2 and "--sysroot".startswith(name)
    return not name.startswith("-") or "s" in name


def _in_tree(notes: _Notes, program: str, where: str | None) -> bool:
    """Whether ``program`` (one that can start) is a file of the tree: not one installed into
    the running environment, which may be a virtual environment under the root (``.venv-ci/``:
    the JIT build's ``ninja`` is ``.venv-ci/bin/ninja`` there)."""
    found = os.path.join(where or "/", program) if os.sep in program else shutil.which(program)
    if found is None:
        return False
    found = os.path.abspath(found)
    prefixes = {os.path.join(p, "") for p in (sys.prefix, sys.exec_prefix)}
    if any(found.startswith(prefix) for prefix in prefixes):
        return False
    return notes.inside(found) or _real_inside(found, notes)


def _reads_no_tree_file(name: str, args: list[str]) -> bool:
    """Whether the system's program ``name`` run with ``args`` reads no file of the tree."""
    return (
        name in _READ_NO_FILE
        or _reads_vcs_metadata(name, args)
        or (name == "ldconfig" and len(args) > 1 and set(args[1:]) <= _LDCONFIG_PRINT)
        or (name == "lscpu" and not any(_names_sysroot(arg) for arg in args[1:]))
        or (len(args) > 1 and set(args[1:]) <= _VERSION_QUERIES)
        or (args[1:] == ["-v"] and name in _COMPILERS)  # a compiler's version and configuration
    )


def _program(notes: _Notes, executable: object, argv: object, cwd: object, env: object) -> None:
    """Note a started program whose reads the record cannot see."""
    args = [os.fsdecode(a) for a in argv] if isinstance(argv, (list, tuple)) else []
    program = os.fsdecode(executable) if isinstance(executable, (str, bytes)) else ""
    program = program or (args[0] if args else "")
    name = os.path.basename(program)
    where = notes.path(cwd) if cwd is not None else os.getcwd()
    if name.startswith("python") or program == sys.executable:
        environment = os.environ if env is None else env
        try:
            keys = {os.fsdecode(k) for k in environment}  # type: ignore[union-attr]
        except TypeError:
            keys = set()
        if not keys & set(_PROCESS_VARIABLES) or "-S" in args[1:2]:
            notes.unbounded.append(f"started Python without recording: {' '.join(args)[:200]}")
        elif not _records_itself(program, environment, where):
            notes.unbounded.append(
                f"started Python of another environment, without this package's start hook: "
                f"{' '.join(args)[:200]}"
            )
        return
    if not _can_start(program, where):
        return
    if _in_tree(notes, program, where):  # the tree's own program: its text is an input
        notes.unbounded.append(f"ran {' '.join(args)[:200]}")
        return
    if _reads_no_tree_file(name, args):
        return
    inside, outside = [], []
    for arg in args[1:]:
        if arg.startswith("-") or not arg:
            continue
        full = os.path.normpath(os.path.join(where or "/", arg))
        if os.path.exists(full):
            (inside if notes.inside(full) else outside).append(arg)
    if inside or (where and notes.inside(where) and not outside):
        notes.unbounded.append(f"ran {' '.join(args)[:200]}")


def _start_coverage(config: str) -> None:
    """Start coverage.py with the run's configuration; a process where it cannot start is noted
    as unbounded (its record then proves nothing)."""
    global _starting
    _starting = _thread.get_ident()
    try:
        import coverage

        os.environ[COVERAGE_START] = config  # process_startup reads it; no child inherits it
        try:
            coverage.process_startup()
        finally:
            os.environ.pop(COVERAGE_START, None)
    except Exception as exc:  # a test process must not break for its record
        if _notes is not None:
            _notes.unbounded.append(f"could not start coverage.py: {exc}"[:200])
    finally:
        _starting = None


def _hook(event: str, args: tuple) -> None:
    if event not in _EVENTS:
        return
    notes = _notes
    if notes is None or _starting == _thread.get_ident():
        return
    if event == "open":
        caller = _caller()
        if (
            not caller.startswith(_IMPORT_SYSTEM)
            and (path := notes.path(args[0])) is not None
            and not (caller == "" and path == _main_script())
            and not _read_to_import(path)
            and not _read_for_pytest_config(path)
            and not _removing_a_tree()
        ):
            notes.opened.add(path)
            notes.opened_by.setdefault(_case(), set()).add(path)
    elif event in ("os.listdir", "os.scandir"):
        caller = _caller()
        if not caller.startswith(_IMPORT_SYSTEM) and not any(d in caller for d in _LISTERS):
            path = notes.path(args[0] if args and args[0] is not None else ".")
            if path is not None:
                notes.listed.add(path)
                notes.listed_by.setdefault(_case(), set()).add(path)
    elif event == "import":
        notes.imported.add(str(args[0]))
    elif event == "subprocess.Popen":
        _program(notes, args[0], args[1], args[2], args[3])
    elif event == "os.posix_spawn":
        _program(notes, args[0], args[1], None, args[2])
    elif event == "os.exec":  # this image ends here; a Python image starts its own notes
        _program(notes, args[0], args[1], None, args[2])
        notes.flush()


def _exit_with_notes(original):  # os._exit's replacement: write the notes first
    def _exit(status: int) -> None:
        if _notes is not None:
            _notes.flush()
        original(status)

    return _exit


def records_code() -> bool:
    """Whether this process records the code it runs itself (``sys.monitoring``), not through
    coverage.py."""
    return _executed is not None


def context_switched(context: str, restart: bool = False) -> None:
    """The case-context plugin switched to ``context`` (a case id, or "" for what every case
    shares; ``restart``: from a case, whose code the next context must note again): record
    the code run from now on under it, and export the nonce of that case's run to the processes
    it starts, or nothing."""
    if _executed is not None:
        _executed.switch(context, restart)
    notes = _notes
    if notes is None or notes.tag:  # not recording, or a case's child: its children are its
        return
    if not context:
        os.environ.pop(CASE_VARIABLE, None)
        return
    if notes.current is None or notes.current[1] != context:  # a new run (not a fixture's end)
        notes.current = (uuid.uuid4().hex[:_NONCE_LENGTH], context)
        notes.runs[notes.current[0]] = {"case": context, "ended": None}
    os.environ[CASE_VARIABLE] = notes.current[0]


def case_left() -> None:
    """The case running in this process ended: note when, on the clock its children note."""
    notes = _notes
    if notes is None or notes.current is None:
        return
    os.environ.pop(CASE_VARIABLE, None)
    notes.runs[notes.current[0]]["ended"] = time.monotonic()
    notes.current = None


def _child_context(reg: object, context: str) -> None:
    """Measure this process under the context of the case run it is a child of, or under none
    (coverage.py sets a configured static context before it measures anything; a child started
    without the variable must not keep the one its parent's configuration passed on)."""
    from coverage import CoveragePlugin

    class ChildContext(CoveragePlugin):
        def configure(self, config) -> None:
            config.set_option("run:context", context)

    reg.add_configurer(ChildContext())  # type: ignore[attr-defined]


def _take_notes(root: str, out: str) -> _Notes:
    """This process's notes, begun now unless it already has its own (a forked child starts
    with empty notes of its own, a child of a case with that run's nonce)."""
    global _notes, _hooked
    if _notes is None or _notes.pid != os.getpid():
        _notes = _Notes(root, out, case_nonce(os.environ.get(CASE_VARIABLE)))
        _notes.started()
    if not _hooked:
        _hooked = True
        sys.addaudithook(_hook)
        atexit.register(lambda: _notes.flush() if _notes is not None else None)
        os._exit = _exit_with_notes(os._exit)
        os.register_at_fork(after_in_child=_forked)
    return _notes


def _forked() -> None:
    if _notes is not None:
        notes = _take_notes(_notes.root, _notes.out)
        if _executed is not None:
            _executed.forked(notes.context)


def _plugin_options(config: str) -> tuple[str, str] | None:
    """``root`` and ``out`` of this module's section of the coverage configuration the runner
    wrote; None when it cannot be read."""
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(config, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return None
    root = parser.get(__name__, "root", fallback="")
    out = parser.get(__name__, "out", fallback="")
    return (root, out) if root and out else None


def start() -> None:
    """The ``.pth`` file's entry: begin this process's notes and its record of the code it runs
    (``sys.monitoring``, Python >= 3.12; coverage.py on older interpreters)."""
    global _executed
    config = os.environ.get(START_VARIABLE, "")
    options = _plugin_options(config) if config else None
    if options is None:
        return
    notes = _take_notes(*options)
    if not hasattr(sys, "monitoring"):
        _start_coverage(config)
        return
    executed = ExecutedCode(notes.root, notes.context)
    problem = executed.start()
    if problem:
        notes.unbounded.append(problem)
    else:
        _executed = executed


def coverage_init(reg: object, options: dict[str, str]) -> None:
    """coverage.py's plugin entry point, called in every process it starts in."""
    root, out = options.get("root"), options.get("out")
    if not root or not out:
        return
    _child_context(reg, _take_notes(root, out).context)
