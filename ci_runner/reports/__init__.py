"""Reports of a shard run: console, JUnit XML, timings JSONL and the GitHub step summary.

:class:`ShardReports` fans the executor's events out to the reports that were asked for; the
file reports (JUnit, timings) are rewritten after every file so a cancelled job keeps them.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ci_runner.model import AttemptResult, FileResult, RunInfo, ShardOutcome
from ci_runner.reports.console import ConsoleReport
from ci_runner.reports.junit import write_junit
from ci_runner.reports.step_summary import append_step_summary
from ci_runner.reports.timings import write_timings


class ShardReports:
    """Every report of one shard, kept in plan order."""

    def __init__(
        self,
        info: RunInfo,
        console: ConsoleReport,
        junit_path: Path | None = None,
        timings_path: Path | None = None,
        step_summary_path: Path | None = None,
    ) -> None:
        self.info = info
        self.console = console
        self.junit_path = junit_path
        self.timings_path = timings_path
        self.step_summary_path = step_summary_path
        self.results: list[FileResult] = []
        self._finished = 0

    def start(self, results: list[FileResult]) -> None:
        """``results``: placeholders for every planned and disabled file, in plan order.

        Raises ``OSError`` when a report file cannot be written, before any file runs.
        """
        self.results = list(results)
        self._write_files()

    def attempt_ended(self, path: str, attempt: AttemptResult, why: str, again: bool) -> None:
        self.console.attempt_ended(path, attempt, why, again)

    def file_finished(self, index: int, result: FileResult, total: int) -> None:
        """The file at plan position ``index`` ended; report it and rewrite the files."""
        self.results[index] = result
        self._finished += 1
        self.console.file_finished(result, self._finished, total)
        self._write_files_or_warn()

    def finish(self, outcome: ShardOutcome) -> None:
        self.results = outcome.results
        self._write_files_or_warn()
        if self.step_summary_path is not None:
            try:
                append_step_summary(self.step_summary_path, outcome)
            except OSError as exc:
                _warn(f"could not append to the step summary {self.step_summary_path}: {exc}")
        self.console.finish(outcome)

    def _write_files_or_warn(self) -> None:
        try:
            self._write_files()
        except OSError as exc:  # a full disk must not stop the tests; say so and go on
            _warn(f"could not write a report: {exc}")

    def _write_files(self) -> None:
        if self.junit_path is not None:
            write_junit(self.junit_path, self.results, self.info)
        if self.timings_path is not None:
            write_timings(self.timings_path, self.results, self.info)


def _warn(message: str) -> None:
    print(f"run_suite: warning: {message}", file=sys.stderr, flush=True)


__all__ = ["ConsoleReport", "ShardReports"]
