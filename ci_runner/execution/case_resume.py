"""Crash resume: when a file's process dies in a case, run the cases not run yet in a fresh one.

A crash (a signal such as SIGSEGV or SIGABRT, a lost CUDA context, an ``os._exit`` in a case)
ends a test file's process and, before, every case after the one it happened in. The case record
names that case (:attr:`~ci_runner.execution.case_record.CaseRecord.culprits`), so after such a
process the attempt goes on in a fresh process that skips every case with a result and the
culprits (:class:`~ci_runner.execution.case_selection.CaseSelection`). It stops when a process
ends without a crash, when no case is left (pytest's collected ids say so; a unittest file runs
one more process to find out), when the attempt's time limit is spent, when the run is
interrupted, or after :data:`RESUME_LIMIT` fresh processes.

The processes make one attempt (:meth:`CrashResume.merged`): every case of each, the culprits as
errors of type ``crashed`` with the output of the process they ended, one combined output, and
the status ``failed`` with a reason that names the culprits (``timeout`` when the time ran out).
A file without case results (a plain script, a crash before the first case) is not resumed.
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import replace
from pathlib import Path

from ci_runner.execution.captured_output import TAIL_BYTES, read_tail, size_of
from ci_runner.execution.case_record import CaseRecord
from ci_runner.execution.case_results import named, not_run_case
from ci_runner.execution.case_selection import CaseSelection
from ci_runner.execution.child_env import AttemptFiles
from ci_runner.file_safety import open_regular
from ci_runner.model import (
    CRASHED,
    FAILED,
    NO_TESTS,
    NOT_RUN,
    PASSED,
    TIMEOUT,
    AttemptResult,
)

RESUME_LIMIT = 10  # fresh processes after crashes, per attempt


def _crashed(attempt: AttemptResult, record: CaseRecord) -> bool:
    """The process died in a case the record names (not a timeout or an interruption)."""
    return attempt.status in (CRASHED, FAILED) and record.has_session and bool(record.culprits)


class CrashResume:
    """The processes of one attempt, and which cases the next one (if any) runs."""

    def __init__(
        self, selection: CaseSelection, attempt: AttemptResult, record: CaseRecord
    ) -> None:
        self.selection = selection
        self.segments: list[tuple[AttemptResult, CaseRecord]] = []
        self.ran: set[str] = set()  # ids with a result, culprits included
        self.culprits: list[str] = []
        # every case the attempt is to run, when pytest collected them (unittest does not say)
        self.universe = None if record.collected is None else set(record.collected)
        self.stopped = ""  # why the attempt stopped resuming with cases left, if it did
        self.add(attempt, record)

    def add(self, attempt: AttemptResult, record: CaseRecord) -> None:
        """The next process of the attempt ended."""
        self.segments.append((attempt, record))
        self.ran.update(case.id for case in record.cases if case.outcome is not None or case.lost)
        self.culprits.extend(case.id for case in record.culprits)
        self.ran.update(self.culprits)

    def next_selection(self, seconds_left: float, interrupted: bool) -> CaseSelection | None:
        """The cases of the next fresh process, or None when the attempt is over."""
        attempt, record = self.segments[-1]
        if not _crashed(attempt, record):
            return None
        left = self.selection.skipping(self.ran)
        if self.universe is not None and not (self.universe - left.skip):
            return None
        if interrupted:
            self.stopped = "the run was interrupted"
        elif seconds_left <= 0:
            self.stopped = "the attempt's time limit was spent"
        elif len(self.segments) > RESUME_LIMIT:
            self.stopped = f"{RESUME_LIMIT} fresh processes after crashes were spent"
        return None if self.stopped else left

    def note(self) -> str:
        """How the console names the next process."""
        return f"resumed after a crash in {named(self.culprits[-1:])}: the cases not run yet"

    def merged(self, path: str) -> AttemptResult:
        """The attempt made of every process (the first one alone when nothing was resumed)."""
        first = self.segments[0][0]
        if len(self.segments) == 1 and not self.stopped:
            return first
        later = [attempt for attempt, _ in self.segments[1:]]
        last = (later or [first])[-1]
        cases = list(first.cases)
        resumed_cases = 0
        for attempt in later:
            if attempt.status == NO_TESTS:
                continue  # nothing was left to run
            mine = [c for c in attempt.cases if c.case_id or c.outcome in ("failed", "error")]
            resumed_cases += sum(1 for c in mine if c.case_id)
            cases += mine
        if self.stopped and self.universe is not None:  # collected, never run: say so
            shown = {c.case_id for c in cases}
            cases += [
                not_run_case(case_id, path, f"not run: {self.stopped}")
                for case_id in sorted(self.universe - self.ran - shown)
            ]
        crashes = [attempt.reason for attempt, record in self.segments if _crashed(attempt, record)]
        processes = len(later)
        reason = "; ".join(crashes)
        if processes:
            reason += (
                f"; {resumed_cases} case(s) not run yet then ran in {processes} fresh process(es)"
            )
        if self.stopped:
            reason += f"; no more fresh processes: {self.stopped}"
        failures = [
            a.reason
            for a in later
            if a.status not in (PASSED, NO_TESTS) and a.reason not in crashes
        ]
        if failures:
            reason += f", where {'; '.join(failures)}"
        status = last.status if last.status in (TIMEOUT, NOT_RUN) else FAILED
        output = Path(first.output_path)
        _append_outputs(output, later)
        tail, truncated = read_tail(output, TAIL_BYTES)
        return replace(
            first,
            status=status,
            elapsed=sum(a.elapsed for a, _ in self.segments),
            exit_code=last.exit_code,
            reason=reason,
            retriable=all(
                a.retriable for a, _ in self.segments if a.status not in (PASSED, NO_TESTS)
            ),
            cases=tuple(cases),
            is_pytest=any(a.is_pytest for a, _ in self.segments),
            output_bytes=size_of(output),
            output_tail=tail,
            tail_truncated=truncated,
            term_signal=next((a.term_signal for a, _ in self.segments if a.term_signal), None),
            leftover_processes=sum(a.leftover_processes for a, _ in self.segments),
            stacks=last.stacks,
            stacks_omitted=last.stacks_omitted,
            running=tuple(self.culprits),
        )


def _append_outputs(output: Path, later: list[AttemptResult]) -> None:
    """Append each later process's output to the attempt's output, then remove its files."""
    with contextlib.suppress(OSError), open(output, "ab") as combined:
        for number, attempt in enumerate(later, start=2):
            combined.write(
                f"\n[ci_runner] process {number} of this attempt (resumed after a crash):\n".encode()
            )
            with contextlib.suppress(OSError), open_regular(attempt.output_path) as part:
                shutil.copyfileobj(part, combined, 1024 * 1024)
    for attempt in later:
        AttemptFiles(Path(attempt.output_path)).remove()
