"""Writes every unittest case to the case record, however the cases are started.

``unittest.main()``, ``python -m unittest``, a ``TextTestRunner`` or a project's own runner all
report through :class:`unittest.TestResult` (their result classes call its methods through
``super()``), so :func:`install` wraps those methods: ``startTest`` writes the case's start,
``stopTest`` its end, with the outcome the ``add*`` calls in between decided. A class or module
fixture that fails (``setUpClass``) is reported by unittest without ``startTest``; it becomes a
case of its own (``path::Class::setUpClass``), as unittest counts it. Standing down while a
pytest session of the same process reports (pytest does not use ``TestResult`` for the unittest
classes it runs, and this keeps it so), nothing is counted twice.

More jobs for the runner: :func:`install_loader` leaves the cases the runner's selection does
not run (:mod:`ci_runner_case_select`) out of the loader, after each case the CUDA context is
checked (:mod:`ci_runner_cuda_check`), and under ``--record-deps`` each case's code is recorded
under its own context (:mod:`ci_runner_case_context`).
"""

from __future__ import annotations

import re
import sys
import time
import traceback

import ci_runner_case_context as case_context
import ci_runner_case_record as record
import ci_runner_case_select as select
import ci_runner_cuda_check as cuda_check

_STATE = "_ci_runner_cases"  # result attribute: {id(test): case state}
_FIXTURE = re.compile(r"^(\w+) \(([\w.]+)\)")  # unittest's "setUpClass (module.Class)"


def install(result_module) -> None:
    """Wrap the reporting methods of ``result_module.TestResult`` (once)."""
    cls = result_module.TestResult
    if getattr(cls, "_ci_runner_hooked", False):
        return
    cls._ci_runner_hooked = True
    for name, hook in (
        ("startTest", _start),
        ("stopTest", _stop),
        ("addSuccess", _success),
        ("addFailure", _failure),
        ("addError", _error),
        ("addSkip", _skip),
        ("addExpectedFailure", _expected_failure),
        ("addUnexpectedSuccess", _unexpected_success),
        ("addSubTest", _subtest),
    ):
        original = getattr(cls, name, None)
        if original is not None:
            setattr(cls, name, _wrapped(original, hook))


def _wrapped(original, hook):
    def method(self, *args, **kwargs):
        value = original(self, *args, **kwargs)
        if not record.pytest_active():
            try:  # noqa: SIM105 - the cheapest guard, on every reported test
                hook(self, *args)
            except Exception:  # never break a test run for a report
                pass
        return value

    method.__name__ = original.__name__
    method.__qualname__ = original.__qualname__
    method.__doc__ = original.__doc__
    method.__wrapped__ = original
    return method


def _first_line_of(function) -> int:
    while hasattr(function, "__wrapped__"):
        function = function.__wrapped__
    code = getattr(function, "__code__", None)
    return code.co_firstlineno if code is not None else 0


def _module_file(module_name: str) -> str:
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    return record.relative(path) if path else module_name.replace(".", "/") + ".py"


def _describe(test) -> tuple[str, str, int]:
    """(id, file, line) of a unittest test: ``path::Class::method``."""
    cls = type(test)
    method_name = getattr(test, "_testMethodName", None)
    if method_name is not None and cls.__name__ != "_ErrorHolder":
        file = _module_file(cls.__module__)
        line = _first_line_of(getattr(cls, method_name, None))
        return f"{file}::{cls.__qualname__}::{method_name}", file, line
    description = str(getattr(test, "description", "") or test.id())
    match = _FIXTURE.match(description)
    if match:  # a failed fixture: "setUpClass (module.Class)" or "setUpModule (module)"
        fixture, target = match.groups()
        parts = target.split(".")
        for cut in range(len(parts), 0, -1):
            module_name = ".".join(parts[:cut])
            if module_name in sys.modules:
                inner = "::".join([*parts[cut:], fixture])
                file = _module_file(module_name)
                return f"{file}::{inner}", file, 0
    test_id = test.id()
    return test_id, "", 0


def _cases(result) -> dict:
    return result.__dict__.setdefault(_STATE, {})


def _start(result, test) -> None:
    writer = record.writer()
    if writer is None:
        return
    writer.session("unittest")
    case_id, file, line = _describe(test)
    _cases(result)[id(test)] = {
        "id": case_id,
        "start": time.monotonic(),
        "outcome": None,
        "detail": "",
        "message": "",
        "text": "",
    }
    writer.write("start", id=case_id, nodeid="", file=file, line=line)
    case_context.enter(case_id)


def _set(result, test, outcome: str, message: str = "", text: str = "", detail: str = "") -> None:
    state = _cases(result).get(id(test))
    if state is None:  # reported without startTest: a failed class or module fixture
        _start(result, test)
        state = _cases(result).get(id(test))
        if state is None:
            return
        _settle(state, outcome, message, text, detail)
        _end(result, test)
        return
    _settle(state, outcome, message, text, detail)


def _settle(state: dict, outcome: str, message: str, text: str, detail: str) -> None:
    if state["outcome"] in ("failed", "error"):
        return  # the first failure stands
    state.update(outcome=outcome, message=message, text=text, detail=detail)


def _end(result, test) -> None:
    state = _cases(result).pop(id(test), None)
    writer = record.writer()
    if state is None or writer is None:
        return
    writer.write(
        "end",
        id=state["id"],
        outcome=state["outcome"] or "passed",
        detail=state["detail"],
        message=record.clip(state["message"], record.MAX_MESSAGE),
        text=record.clip(state["text"]),
        duration=round(time.monotonic() - state["start"], 6),
    )


def _error_text(result, err, test) -> tuple[str, str]:
    message = "".join(traceback.format_exception_only(err[0], err[1])).strip()
    try:
        text = result._exc_info_to_string(err, test)
    except Exception:
        text = "".join(traceback.format_exception(*err))
    return record.first_line(message), text


def _stop(result, test) -> None:
    case_context.leave()
    state = _cases(result).get(id(test))
    _end(result, test)
    writer = record.writer()
    if state is not None and writer is not None:
        cuda_check.end_if_lost(writer, state["id"])


def install_loader(loader_module) -> None:
    """Leave the cases the runner's selection does not run out of every ``TestLoader``'s
    ``getTestCaseNames`` (wrapped once; it selects only while no pytest session reports)."""
    cls = loader_module.TestLoader
    if getattr(cls, "_ci_runner_selects", False):
        return
    cls._ci_runner_selects = True
    original = cls.getTestCaseNames

    def getTestCaseNames(self, testCaseClass):
        names = original(self, testCaseClass)
        if record.pytest_active() or not select.active():
            return names
        prefix = f"{_module_file(testCaseClass.__module__)}::{testCaseClass.__qualname__}::"
        return [name for name in names if select.wanted(prefix + name)]

    getTestCaseNames.__wrapped__ = original
    cls.getTestCaseNames = getTestCaseNames


def _success(result, test) -> None:
    _set(result, test, "passed")


def _failure(result, test, err) -> None:
    _set(result, test, "failed", *_error_text(result, err, test))


def _error(result, test, err) -> None:
    _set(result, test, "error", *_error_text(result, err, test))


def _skip(result, test, reason) -> None:
    _set(result, test, "skipped", record.first_line(str(reason)))


def _expected_failure(result, test, err) -> None:
    message, text = _error_text(result, err, test)
    _set(result, test, "skipped", f"expected failure: {message}", text, "xfail")


def _unexpected_success(result, test) -> None:
    _set(result, test, "failed", "unexpected success", "", "xpass")


def _subtest(result, test, subtest, err) -> None:
    if err is None:
        return
    outcome = "failed" if issubclass(err[0], test.failureException) else "error"
    message, text = _error_text(result, err, subtest)
    described = getattr(subtest, "_subDescription", lambda: "")()
    _set(result, test, outcome, f"{described} {message}".strip(), text, "subtest")
