"""Attributes the code a recorded test runs to its case: the recorder's context.

Under ``--record-deps`` every process of the file records the code it runs
(:mod:`ci_runner.execution.dep_recording`: ``sys.monitoring`` on Python >= 3.12, else
coverage.py, whose dynamic context this switches). The pytest plugin and the unittest hook call
:func:`enter` when a case starts (its id, as the case record writes it) and :func:`leave` when it
ends; a fixture wider than a function (module, class, session scope) is set up under the empty
context, the file's own, as are collection, imports and every other process of the file: what
all the cases share. Without a recording nothing happens. Standard library only; coverage
is looked up in ``sys.modules``, never imported. Each switch is passed on to the recorder
(:mod:`ci_runner.execution.record_child`), which records the code run from then on under it and
tells the processes a case starts which case's run they belong to.
"""

from __future__ import annotations

import sys

FILE_LEVEL = ""  # the context of what runs outside every case
RECORDER = "ci_runner.execution.record_child"

_current = FILE_LEVEL
_monitoring = getattr(sys, "monitoring", None)  # Python >= 3.12


def _coverage():
    module = sys.modules.get("coverage")
    return module.Coverage.current() if module is not None else None


def recording() -> bool:
    """Whether this process records the code it runs (``--record-deps``), by either recorder."""
    recorder = sys.modules.get(RECORDER)
    return recorder is not None and (recorder.records_code() or _coverage() is not None)


def switch(context: str) -> str:
    """Measure from now on under ``context``; the context before."""
    global _current
    before, _current = _current, context
    recorder = sys.modules.get(RECORDER)
    # a process that records its code itself leaves any coverage.py of the test's alone
    coverage = None if recorder is not None and recorder.records_code() else _coverage()
    if coverage is not None and before != context:
        coverage.switch_context(context)
        if _monitoring is not None and before != FILE_LEVEL:
            # coverage's sys.monitoring core stops a line's events once it has seen the line;
            # what a case saw must be seen again by the next context. What the file's context
            # saw need not: the file-level part is shared by every case.
            _monitoring.restart_events()
    if recorder is not None:
        recorder.context_switched(context, before not in (FILE_LEVEL, context))
    return before


def enter(case_id: str) -> None:
    switch(case_id)


def leave() -> None:
    switch(FILE_LEVEL)
    recorder = sys.modules.get(RECORDER)
    if recorder is not None:
        recorder.case_left()
