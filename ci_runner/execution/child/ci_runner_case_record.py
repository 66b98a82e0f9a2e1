"""The case record: what a test file's processes write about each test case as it runs.

This module defines the format and writes it. It runs inside the test's own processes (the
runner puts this directory first on their ``PYTHONPATH``), so it uses the standard library
only and imports nothing until the first record is written. The runner reads the record with
:mod:`ci_runner.execution.case_record`: live (the case running now, for the heartbeat), after an
attempt (every case's result), and after a timeout or a crash (the case that was running).

Where: the file named by ``$CI_RUNNER_CASE_RECORD``, one per attempt. Every process of the file
appends whole lines with one ``os.write`` each on an ``O_APPEND`` descriptor, so the lines of
concurrent processes never interleave, and each line is on disk as soon as it is written.

Format: JSON lines (ASCII), one event each. Every line has ``event``, ``pid``, ``depth`` (0 for
the file's own process, +1 for each Python process below it) and ``t`` (seconds since the
epoch)::

    {"event": "session", "runner": "pytest", "v": 1, ...}
    {"event": "collected", "ids": ["registered/test_x.py::TestA::test_b[1]", ...], ...}
    {"event": "start", "id": "registered/test_x.py::TestA::test_b[1]",
     "nodeid": "test_x.py::TestA::test_b[1]", "file": "registered/test_x.py", "line": 12, ...}
    {"event": "end", "id": "...", "outcome": "failed", "detail": "", "message": "assert 1 == 2",
     "text": "<traceback, at most 16 KiB>", "duration": 0.004, ...}
    {"event": "abort", "id": "...", "reason": "the CUDA context was lost: ...", ...}
    {"event": "finish", "exitstatus": 1, ...}

* ``runner``: ``"pytest"`` (the plugin :mod:`ci_runner_pytest_plugin`) or ``"unittest"`` (the
  hook :mod:`ci_runner_unittest_hook`), one session line per process that reports cases.
* ``id``: a pytest-style node id whose path is relative to ``$CI_RUNNER_CASE_ROOT`` (the
  repository root): ``path::Class::test[param]``, for unittest cases too (``path::Class::method``).
  ``nodeid`` is pytest's own id (relative to pytest's rootdir); ``file`` and ``line`` (1-based,
  0 when unknown) locate the test's definition.
* ``outcome``: ``passed``, ``failed``, ``error`` or ``skipped``; ``detail`` says more:
  ``xfail`` (an expected failure, counted skipped), ``xpass`` (an unexpected success: passed
  under pytest's non-strict rule, failed under unittest's), ``subtest`` (a subtest failed).
* ``collected``: pytest's collected ids, before the first case starts; a collection error is
  a ``start``/``end`` pair of the collector's id with outcome ``error``.
* ``abort``: the process ended itself right after the case ``id`` ran, for ``reason`` (the
  CUDA context was lost: :mod:`ci_runner_cuda_check`); that case is the culprit.
* ``finish``: pytest's exit status, at the end of its session.

A ``start`` without its ``end`` is a case that was running when its process stopped. Only the
cases of the outermost processes that report cases count (the lowest ``depth`` with a session),
so a test that runs pytest or unittest in a subprocess of its own does not add its cases.
"""

from __future__ import annotations

import os
import sys
import time

VERSION = 1
RECORD_VARIABLE = "CI_RUNNER_CASE_RECORD"  # the record's path
ROOT_VARIABLE = "CI_RUNNER_CASE_ROOT"  # ids and files are relative to this directory
DEPTH_VARIABLE = "CI_RUNNER_CASE_DEPTH"  # 0 in the file's own process, +1 per Python level
STACK_PREFIX_VARIABLE = "CI_RUNNER_STACK_PREFIX"  # a process dumps its stacks to <prefix><pid>
STACK_SIGNAL = "SIGUSR2"  # the signal that makes a ready process dump its stacks
MAX_TEXT = 16 * 1024  # characters of a failure's text kept (its end)
MAX_MESSAGE = 2048  # characters of a one-line message kept

OUTCOMES = ("passed", "failed", "error", "skipped")

_depth: int | None = None  # this process's depth
_pytest_active = False  # a pytest session of this process reports cases (unittest stands down)
_writer: _Writer | None = None
_writer_pid = 0


def claim_depth() -> int:
    """This process's depth: what the bootstrap's ``sitecustomize`` read at start-up (it gave
    the process's children the next one), else the variable as it is."""
    global _depth
    if _depth is None:
        started = getattr(sys.modules.get("sitecustomize"), "CI_RUNNER_DEPTH", None)
        if isinstance(started, int):
            _depth = started
        else:
            try:
                _depth = max(0, int(os.environ.get(DEPTH_VARIABLE, "0")))
            except ValueError:
                _depth = 0
    return _depth


def set_pytest_active(active: bool) -> None:
    """A pytest session reports this process's cases, so the unittest hook must not."""
    global _pytest_active
    _pytest_active = active


def pytest_active() -> bool:
    return _pytest_active


def relative(path: str) -> str:
    """``path`` relative to the record's root (POSIX), or absolute when outside it."""
    root = os.environ.get(ROOT_VARIABLE, "")
    absolute = os.path.abspath(path)
    if root:
        try:
            rel = os.path.relpath(absolute, root)
        except ValueError:  # another drive
            rel = ""
        if rel and not rel.startswith(".."):
            return rel.replace(os.sep, "/")
    return absolute.replace(os.sep, "/")


def clip(text: str, limit: int = MAX_TEXT) -> str:
    """The end of ``text`` when it is longer than ``limit``."""
    if len(text) <= limit:
        return text
    return "[... truncated ...]\n" + text[-limit:]


def first_line(text: str) -> str:
    return clip(text.strip().split("\n", 1)[0], MAX_MESSAGE) if text else ""


class _Writer:
    """Appends events to the record; one per process (reopened after a fork)."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.sessions: set[str] = set()

    def write(self, event: str, **fields: object) -> None:
        import json  # here: a process that records nothing never imports it

        fields.update(event=event, pid=os.getpid(), depth=claim_depth(), t=round(time.time(), 6))
        line = json.dumps(fields, ensure_ascii=True, default=str) + "\n"
        try:  # noqa: SIM105 - no contextlib import in a test's process
            os.write(self.fd, line.encode("ascii"))
        except OSError:
            pass  # the runner's directory is gone or full: the test must not fail for it

    def session(self, runner: str) -> None:
        """The first line of a process that reports cases with ``runner``."""
        if runner not in self.sessions:
            self.sessions.add(runner)
            self.write("session", runner=runner, v=VERSION, argv=sys.argv[:8])


def writer() -> _Writer | None:
    """This process's writer, or None when the runner asked for no record (or it cannot be
    opened: the test runs on, unrecorded)."""
    global _writer, _writer_pid
    if _writer is not None and _writer_pid == os.getpid():
        return _writer
    path = os.environ.get(RECORD_VARIABLE)
    if not path:
        return None
    try:
        _writer = _Writer(path)
    except OSError:
        return None
    _writer_pid = os.getpid()
    return _writer
