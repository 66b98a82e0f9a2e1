"""The console report: a line when a file starts, its output live, a line when it finishes,
heartbeats while it runs late, the stacks of a hung file, a table, the failing cases, and the
summary line.

The very last line is always ``summary: N passed, N failed, N skipped``, counting test cases
(the cases of the case record; one case for a file without any; not_run and disabled files
count as skipped). Names and reasons are printed on one line each
(:func:`~ci_runner.safe_text.one_line`): no file name can break a line or colour the terminal.
A child's own output is copied as it is. A reader that closes stdout (``| head``) is handled by
the stream every entry point wraps (:func:`ci_runner.cli_errors.robust_output`).
"""

from __future__ import annotations

import sys
import threading
from typing import TextIO

from ci_runner.execution.captured_output import copy_text
from ci_runner.execution.listener import AttemptStart
from ci_runner.execution.stacks import format_stacks
from ci_runner.model import (
    CRASHED,
    FLAKY,
    NO_TESTS,
    TIMEOUT,
    AttemptResult,
    FileResult,
    RunInfo,
    ShardOutcome,
    case_counts,
    quarantined_failures,
)
from ci_runner.reports.github import GitHubContext, annotations, case_name, failing_cases
from ci_runner.reports.live import LiveOutput, format_seconds
from ci_runner.safe_text import one_line

__all__ = ["ConsoleReport", "file_line", "format_seconds"]

MAX_CASES_LISTED = 10  # failing cases named per file in the failed: list


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
    if result.status == NO_TESTS:
        extras.append(one_line(result.reason))
        if result.tolerated:
            extras.append(one_line(result.tolerated))
    if last is not None and last.running and result.status == TIMEOUT:
        extras.append(f"running {one_line(', '.join(last.running))}")
    if len(result.attempts) > 1:
        extras.append(f"attempts {len(result.attempts)}")
    leftovers = sum(a.leftover_processes for a in result.attempts)
    if leftovers and result.status != TIMEOUT:
        extras.append(f"killed {leftovers} leftover process(es)")
    if result.gpu_ids:
        extras.append(f"gpu {one_line(','.join(result.gpu_ids))}")
    if result.quarantined is not None:
        extras.append(f"quarantined: {one_line(result.quarantined)}")
    return line + (f"  [{'; '.join(extras)}]" if extras else "")


def start_line(start: AttemptStart, label: str) -> str:
    """``[2/9] start registered/test_x.py (est 30s) [GPU 0]``; a retry says its attempt."""
    line = f"{label} start {one_line(start.path)} (est {start.est_time:g}s)"
    if start.number > 1:
        line += f" attempt {start.number}/{start.max_attempts}"
    if start.gpu_ids:
        line += f" [GPU {one_line(','.join(start.gpu_ids))}]"
    if start.note:
        line += f" ({one_line(start.note)})"
    return line


def summary_line(outcome: ShardOutcome) -> str:
    """``summary: N passed, N failed, N skipped``, plus ``, N quarantined`` when failed cases
    of quarantined files were left out of the failed count."""
    passed, failed, skipped = case_counts(outcome.results)
    quarantined = quarantined_failures(outcome.results)
    extra = f", {quarantined} quarantined" if quarantined else ""
    return f"summary: {passed} passed, {failed} failed, {skipped} skipped{extra}"


class ConsoleReport:
    """Writes to ``stream`` (stdout by default); safe to call from several threads.

    ``live``: stream each running file's output (``--quiet`` turns it off; start lines and
    heartbeats stay).
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        github_actions: bool = False,
        show_output: bool = False,
        live: bool = True,
        github: GitHubContext | None = None,
    ) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.github_actions = github_actions
        self.show_output = show_output
        self.github = github or GitHubContext()
        self._lock = threading.RLock()
        self._mid_line = False  # streamed output left the console inside a line
        self._started = 0
        self._total = 0
        self._labels: dict[str, str] = {}  # file path -> "[i/N]", its start order
        self._prefixed = False
        self.live = LiveOutput(self._emit, stream=live)

    # ------------------------------------------------------------------ writing

    def _emit(self, text: str, streamed: bool) -> None:
        """From the follower: a file's output (``streamed``, copied as it is, perhaps ending
        inside a line) or a heartbeat line (on a line of its own)."""
        with self._lock:
            if streamed:
                self._write(text)
                self._mid_line = not text.endswith("\n")
            else:
                self._print(text.rstrip("\n"))
            self._flush()

    def _write(self, text: str) -> None:
        self.stream.write(text)

    def _flush(self) -> None:
        self.stream.flush()

    def _print(self, text: str = "") -> None:
        if self._mid_line:
            self._write("\n")
            self._mid_line = False
        self._write(text + "\n")

    # ------------------------------------------------------------------ events

    def header(self, info: RunInfo, count: int) -> None:
        with self._lock:
            self._total = count
            self._print(
                f"executing {count} file(s) of shard {info.shard} ({one_line(info.hw)}: "
                f"{one_line(', '.join(info.suites))}); {one_line(info.slots)}; {info.mode}"
            )
            self._flush()
        self._prefixed = info.slot_count > 1
        self.live.start(prefixed=self._prefixed)

    def skipped(self, results: list[FileResult]) -> None:
        """Files that will not run on this runner (too few GPUs), each with its reason."""
        with self._lock:
            for result in results:
                self._print(
                    f"[skipped] {one_line(result.path)}  skipped  [{one_line(result.reason)}]"
                )
            self._flush()

    def attempt_started(self, start: AttemptStart) -> None:
        with self._lock:
            if (start.number == 1 and not start.note) or start.path not in self._labels:
                self._started += 1
                self._labels[start.path] = f"[{self._started}/{self._total}]"
            label = self._labels[start.path]
            self._print(start_line(start, label))
            self._flush()
        self.live.follow(start, label)

    def attempt_stopped(self, start: AttemptStart) -> None:
        self.live.finish(start)

    def resumed(self, results: list[FileResult]) -> None:
        """Files a previous attempt of the shard passed (``--resume-from``): not run again."""
        with self._lock:
            for result in results:
                self._print(
                    f"[resumed] {one_line(result.path)}  {result.status}  "
                    f"[{one_line(result.reason)}]"
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
            self._flush()

    def file_finished(self, result: FileResult, index: int, total: int) -> None:
        with self._lock:
            line = file_line(result, index, total)
            label = self._labels.get(result.path)
            if label:  # the number its start line had, so both lines name the file alike
                line = label + line[line.index("]") + 1 :]
            self._print(line)
            for attempt in result.attempts:
                if attempt.stacks:
                    self._stacks_block(result, attempt)
            problem = result.failing or result.status in (FLAKY, NO_TESTS)
            shown_live = self.live.stream and not self._prefixed
            if (problem or self.show_output) and not shown_live:
                for attempt in result.attempts:
                    self._output_block(result, attempt)
            self._flush()

    def _stacks_block(self, result: FileResult, attempt: AttemptResult) -> None:
        running = f"; running {', '.join(attempt.running)}" if attempt.running else ""
        title = (
            f"Python stacks of {one_line(result.path)} before the kill (attempt "
            f"{attempt.number}: {attempt.status}{one_line(running)})"
        )
        self._print(f"----- {title} -----")
        self._write(format_stacks(attempt.stacks, attempt.stacks_omitted) + "\n")
        self._print(f"----- end of the stacks of {one_line(result.path)} -----")

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
        self._flush()
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
        self.live.stop()
        with self._lock:
            self._table(outcome)
            if self.github_actions:
                for line in annotations(outcome, self.github):
                    self._print(line)
            self._print(summary_line(outcome))
            self._flush()

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
        if outcome.failing:
            self._print("failed:")
            for r in outcome.failing:
                self._failed_lines(r)
        tolerated = [r for r in outcome.no_tests if not r.fails_unquarantined]
        for title, items in (
            ("quarantined (failing no job)", outcome.quarantined),
            ("ran no tests (not failing)", tolerated),
            ("flaky", outcome.flaky),
            ("not run", outcome.not_run),
            ("skipped", outcome.skipped),
            ("disabled", outcome.disabled),
        ):
            if items:
                self._print(f"{title}:")
                for r in items:
                    why = f"{r.reason} ({r.tolerated})" if r.tolerated else r.reason
                    if r.quarantined is not None:
                        why += f" (quarantined: {r.quarantined})"
                    self._print(f"  {one_line(r.path)} [{r.status}]: {one_line(why)}")
        if outcome.interrupted_by:
            self._print(f"interrupted by {outcome.interrupted_by}")
        self._print(f"exit code {outcome.exit_code}")

    def _failed_lines(self, result: FileResult) -> None:
        """``path::case [status]: message`` per failing case (the file itself when no case
        names the failure), at most :data:`MAX_CASES_LISTED` per file."""
        cases = failing_cases(result)
        for case in cases[:MAX_CASES_LISTED]:
            message = case.message if case.case_id else result.reason
            self._print(
                f"  {one_line(case_name(case, result))} [{result.status}]: "
                f"{one_line(message or result.reason)}"
            )
        if len(cases) > MAX_CASES_LISTED:
            self._print(
                f"  ... and {len(cases) - MAX_CASES_LISTED} more failing case(s) of "
                f"{one_line(result.path)}"
            )
