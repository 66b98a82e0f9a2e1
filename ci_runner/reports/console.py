"""The console report: a live line per file, failing output in full, a table, the summary line.

The very last line is always ``summary: N passed, N failed, N skipped``, counting test cases
(pytest cases where a file is a pytest file, one case per file otherwise; not_run and disabled
files count as skipped). Names and reasons are printed on one line each
(:func:`~ci_runner.safe_text.one_line`): no file name can break a line or colour the terminal.
"""

from __future__ import annotations

import sys
import threading
from typing import TextIO

from ci_runner.execution.captured_output import copy_text
from ci_runner.model import (
    CRASHED,
    FAILING_STATUSES,
    FLAKY,
    TIMEOUT,
    AttemptResult,
    FileResult,
    RunInfo,
    ShardOutcome,
    case_counts,
)
from ci_runner.safe_text import one_line


def format_seconds(seconds: float) -> str:
    """``12.3s``, ``4m05s``, ``1h02m``."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def file_line(result: FileResult, index: int, total: int) -> str:
    """``[3/17] registered/jit/test_x.py  passed  12.3s (est 30s)`` plus what is notable."""
    line = (
        f"[{index}/{total}] {one_line(result.path)}  {result.status}  "
        f"{format_seconds(result.elapsed)} (est {result.est_time:g}s)"
    )
    extras: list[str] = []
    last = result.final_attempt
    if result.status == TIMEOUT and result.timeout_limit is not None:
        extras.append(f"limit {result.timeout_limit:g}s")
    if result.status == CRASHED and last is not None and last.term_signal:
        extras.append(one_line(result.reason))
    if len(result.attempts) > 1:
        extras.append(f"attempts {len(result.attempts)}")
    leftovers = sum(a.leftover_processes for a in result.attempts)
    if leftovers and result.status != TIMEOUT:
        extras.append(f"killed {leftovers} leftover process(es)")
    if result.gpu_ids:
        extras.append(f"gpu {one_line(','.join(result.gpu_ids))}")
    return line + (f"  [{'; '.join(extras)}]" if extras else "")


class ConsoleReport:
    """Writes to ``stream`` (stdout by default); safe to call from several threads."""

    def __init__(
        self, stream: TextIO | None = None, github_actions: bool = False, show_output: bool = False
    ) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.github_actions = github_actions
        self.show_output = show_output
        self._lock = threading.Lock()

    def _print(self, text: str = "") -> None:
        self.stream.write(text + "\n")

    def header(self, info: RunInfo, count: int) -> None:
        with self._lock:
            self._print(
                f"executing {count} file(s) of shard {info.shard} ({one_line(info.hw)}: "
                f"{one_line(', '.join(info.suites))}); {one_line(info.slots)}; {info.mode}"
            )
            self.stream.flush()

    def skipped(self, results: list[FileResult]) -> None:
        """Files that will not run on this runner (too few GPUs), each with its reason."""
        with self._lock:
            for result in results:
                self._print(
                    f"[skipped] {one_line(result.path)}  skipped  [{one_line(result.reason)}]"
                )
            self.stream.flush()

    def attempt_ended(self, path: str, attempt: AttemptResult, why: str, again: bool) -> None:
        """A failed attempt: say whether (and why not) it is retried."""
        verdict = f"retrying: {why}" if again else f"not retried: {why}"
        with self._lock:
            self._print(
                f"  attempt {attempt.number} of {one_line(path)} {attempt.status}: "
                f"{one_line(attempt.reason)}; {one_line(verdict)}"
            )
            self.stream.flush()

    def file_finished(self, result: FileResult, index: int, total: int) -> None:
        with self._lock:
            self._print(file_line(result, index, total))
            if result.status in FAILING_STATUSES or result.status == FLAKY or self.show_output:
                for attempt in result.attempts:
                    self._output_block(result, attempt)
            self.stream.flush()

    def _output_block(self, result: FileResult, attempt: AttemptResult) -> None:
        title = (
            f"output of {one_line(result.path)} (attempt {attempt.number}: {attempt.status}"
            f"{', ' + one_line(attempt.reason) if attempt.reason else ''}; "
            f"{attempt.output_bytes} bytes)"
        )
        if self.github_actions:
            self._print(f"::group::{title}")
        else:
            self._print(f"----- begin {title} -----")
        self.stream.flush()
        copy_text(attempt.output_path, self.stream)
        if not self.github_actions:
            self._print(
                f"\n----- end output of {one_line(result.path)} (attempt {attempt.number}) -----"
            )
        else:
            self._print("\n::endgroup::")

    def block(self, text: str, stream: str = "stdout") -> None:
        """Print a block of lines as they are (e.g. the TIMINGS block), on stdout or stderr."""
        with self._lock:
            if stream == "stderr":
                self.stream.flush()
                print(text, file=sys.stderr, flush=True)
            else:
                self._print(text)

    def finish(self, outcome: ShardOutcome) -> None:
        with self._lock:
            self._table(outcome)
            passed, failed, skipped = case_counts(outcome.results)
            self._print(f"summary: {passed} passed, {failed} failed, {skipped} skipped")
            self.stream.flush()

    def _table(self, outcome: ShardOutcome) -> None:
        rows = [("status", "time", "est", "attempts", "file")]
        for r in outcome.results:
            rows.append(
                (
                    r.status,
                    format_seconds(r.elapsed),
                    f"{r.est_time:g}s",
                    str(len(r.attempts)),
                    one_line(r.path),
                )
            )
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        self._print("")
        self._print(f"===== shard {outcome.info.shard} results =====")
        for row in rows:
            cells = [row[i].ljust(widths[i]) for i in range(4)]
            self._print("  ".join([*cells, row[4]]))
        counts: dict[str, int] = {}
        for r in outcome.results:
            counts[r.status] = counts.get(r.status, 0) + 1
        self._print(
            "files: "
            + ", ".join(f"{n} {status}" for status, n in counts.items())
            + f"; wall {format_seconds(outcome.wall)}"
            + f" (shard est {outcome.info.shard_est_total:g}s)"
        )
        for title, items in (
            ("failed", outcome.failing),
            ("flaky", outcome.flaky),
            ("not run", outcome.not_run),
            ("skipped", outcome.skipped),
            ("disabled", outcome.disabled),
        ):
            if items:
                self._print(f"{title}:")
                for r in items:
                    self._print(f"  {one_line(r.path)} [{r.status}]: {one_line(r.reason)}")
        if outcome.interrupted_by:
            self._print(f"interrupted by {outcome.interrupted_by}")
        self._print(f"exit code {outcome.exit_code}")
