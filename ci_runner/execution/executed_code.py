"""The code a recorded Python process runs, code object by code object (Python >= 3.12).

A record's unit is a function or a file's module level (:mod:`ci_runner.impact.blocks`):
whether a function ran, never which of its lines. So a process needs only ``sys.monitoring``'s
``PY_START`` and ``PY_RESUME`` events (a function's or a generator's start, and a generator's
resumption), not coverage.py's line events, nor coverage.py itself, whose import alone costs a
process about 0.08 s. Each code object of the repository is noted under the context running
(the test case, "" for what every case shares) and its events are then disabled; when a case
ends, the code objects reported since the last case ended are re-armed, so the next case notes
again each one it runs. A frame still running when the context switches (a loop that runs the
cases, a hook wrapper) is noted under the new context too, as its next lines run there.
``PY_THROW`` (a generator resumed by an exception) cannot be disabled and is cheap: it is noted
each time.

At exit the process writes, with its notes, every noted code object as its file and its line
numbers (``co_lines``; a function's first line, its ``def`` or first decorator, left out: the
``def`` runs in the enclosing block), and each context's code objects: the runner maps each line
onto its block as it maps coverage.py's executed lines. Standard library only: it runs in every
Python process of a recorded file.
"""

from __future__ import annotations

import os
import sys
from types import CodeType

TOOL_NAMES = ("ci-runner-record-deps", "ci-runner-record-deps-again")
# sys.monitoring's ids 0-2 and 5 are the debugger's, coverage's, the profiler's and the
# optimizer's by convention; free ones of the others are taken first.
_TOOL_IDS = (3, 4, 5, 2, 0)
_SKIPPED = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")
# The recorder does not record itself: its own functions run in every process (at start, at
# each switch, at exit) and are no code of the test's.
_HERE = os.path.dirname(os.path.abspath(__file__))
_RECORDER = frozenset(os.path.join(_HERE, name) for name in ("executed_code.py", "record_child.py"))


def code_lines(code: CodeType) -> list[int]:
    """The line numbers of ``code``'s instructions, without the function's first line (its
    ``def`` or first decorator, unless that is its only line) and a module's line 0 (where it
    starts), which is kept where it is the module's only line: an empty or comment-only module
    that ran ran its module level (coverage.py reports line 0 for it too), and a change there
    must keep the test."""
    lines = {line for _, _, line in code.co_lines() if line}
    if code.co_name == "<module>":
        return sorted(lines) or [0]
    if len(lines) > 1:
        lines.discard(code.co_firstlineno)
    return sorted(lines)


class ExecutedCode:
    """The repository's code objects this process ran, by context.

    Two ``sys.monitoring`` tools: the first reports every code object's first start (global
    events), once, and never again (code outside the repository costs nothing more); the
    second reports a repository code object again after a restart (local events, set on that
    code object only). A restart re-arms only the code objects reported since the last one:
    ``sys.monitoring.restart_events()`` would re-arm every code object of the process, pytest's
    own included, and costs about 1 ms a case.

    Code objects are kept by identity (``id`` to the object, which the map keeps alive): two
    code objects of the same text in two files compare equal (``co_filename`` is not compared),
    so a set would note only the first of, say, two empty ``__init__.py`` files.
    """

    def __init__(self, root: str, base: str) -> None:
        self.root = root.rstrip(os.sep) + os.sep
        self.base = base  # the context of a case's child process, else ""
        self.current: dict[int, CodeType] = {}
        self.by_context: dict[str, dict[int, CodeType]] = {base: self.current}
        self.reported: dict[int, CodeType] = {}  # since the last restart: to re-arm
        self.tools: tuple[int, int] | None = None  # (first start, again)
        self._paths: dict[str, str | None] = {}  # co_filename -> its repository path, or None

    def start(self) -> str:
        """Begin noting; "" once started, else why it cannot (no free tool ids)."""
        monitoring = sys.monitoring
        taken: list[int] = []
        for tool in _TOOL_IDS:
            if len(taken) == len(TOOL_NAMES):
                break
            try:
                monitoring.use_tool_id(tool, TOOL_NAMES[len(taken)])
            except ValueError:  # another tool's
                continue
            taken.append(tool)
        if len(taken) < len(TOOL_NAMES):
            for tool in taken:
                monitoring.free_tool_id(tool)
            return "no two sys.monitoring tool ids are free to record with"
        first, again = taken
        self.tools = (first, again)
        events = monitoring.events
        for tool in taken:
            monitoring.register_callback(tool, events.PY_START, self._ran)
            monitoring.register_callback(tool, events.PY_RESUME, self._ran)
        monitoring.register_callback(first, events.PY_THROW, self._thrown)
        monitoring.set_events(first, events.PY_START | events.PY_RESUME | events.PY_THROW)
        self._note_running_frames()
        return ""

    def _repository(self, filename: str) -> bool:
        """Whether ``filename`` (a code object's) is a file of the repository; a relative one
        (``compile(text, "pkg/m.py", ...)``) is taken from the working directory of the
        moment, as coverage.py takes it, when a file is there: a compiled module's relative
        name (pyzmq's Cython ``zmq/backend/cython/_zmq.py``) names no file of the tree."""
        if filename not in self._paths:
            path = os.path.abspath(filename) if not filename.startswith("<") else ""
            inside = (
                path.startswith(self.root)
                and not any(s in path for s in _SKIPPED)
                and path not in _RECORDER
                and (os.path.isabs(filename) or os.path.isfile(path))
            )
            self._paths[filename] = path if inside else None
        return self._paths[filename] is not None

    def _ran(self, code: CodeType, offset: int) -> object:
        if self._repository(code.co_filename):
            self.current[id(code)] = code
            self.reported[id(code)] = code
        return sys.monitoring.DISABLE

    def _thrown(self, code: CodeType, offset: int, exception: BaseException) -> None:
        if self._repository(code.co_filename):  # cannot be disabled: noted every time
            self.current[id(code)] = code

    def _note_running_frames(self) -> None:
        """Note under the current context the code of every frame running now, in every thread."""
        for frame in list(sys._current_frames().values()):
            while frame is not None:
                if self._repository(frame.f_code.co_filename):
                    self.current[id(frame.f_code)] = frame.f_code
                frame = frame.f_back

    def _restart(self) -> None:
        """Have every code object reported since the last restart reported again when it runs."""
        if self.tools is None:
            return
        again = self.tools[1]
        events = sys.monitoring.events.PY_START | sys.monitoring.events.PY_RESUME
        set_local_events = sys.monitoring.set_local_events
        reported, self.reported = self.reported, {}
        for code in reported.values():
            set_local_events(again, code, 0)  # events set again re-arm their disabled places
            set_local_events(again, code, events)

    def switch(self, context: str, restart: bool) -> None:
        """Note under ``context`` from now on (within a case's child, under its own context);
        ``restart``: what earlier contexts ran is reported again."""
        label = f"{self.base}|{context}" if self.base and context else context or self.base
        self.current = self.by_context.setdefault(label, {})
        self._note_running_frames()
        if restart:
            self._restart()

    def forked(self, base: str) -> None:
        """In a forked child: begin afresh under ``base``, every code object reported again."""
        self.base = base
        self.current = {}
        self.by_context = {base: self.current}
        self.reported = {}
        if self.tools is not None:
            sys.monitoring.restart_events()
            self._note_running_frames()

    def table(self) -> dict[str, object]:
        """``{"code": [[file, lines], ...], "contexts": {context: [index into code, ...]}}``."""
        index: dict[int, int] = {}  # id of a code object -> its index in ``code``
        code: list[list[object]] = []
        contexts: dict[str, list[int]] = {}
        for label, seen in list(self.by_context.items()):
            indices = []
            for key, item in list(seen.items()):
                if key not in index:
                    index[key] = len(code)
                    code.append([self._paths[item.co_filename], code_lines(item)])
                indices.append(index[key])
            contexts[label] = sorted(indices)
        return {"code": code, "contexts": contexts}
