"""The reports of one shard as the executor's listener: :class:`ShardReports`.

It fans the executor's events out to the reports that were asked for (:class:`ReportOptions`):
the console always, JUnit XML and timings JSONL rewritten after every file (so a cancelled job
keeps them), the GitHub step summary appended at the end.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ci_runner.env import GITHUB_ACTIONS, get_bool_env
from ci_runner.model import SKIPPED, AttemptResult, FileResult, RunInfo, ShardOutcome
from ci_runner.reports.console import ConsoleReport
from ci_runner.reports.junit import write_junit
from ci_runner.reports.step_summary import STEP_SUMMARY_VARIABLE, append_step_summary
from ci_runner.reports.timings import write_timings


@dataclass(frozen=True)
class ReportOptions:
    """Which reports a shard writes, and where."""

    junit_xml: Path | None = None  # --junit-xml
    timings_out: Path | None = None  # --timings-out
    show_output: bool = False  # --show-output: print the output of passing files too
    step_summary: Path | None = None  # $GITHUB_STEP_SUMMARY
    github_actions: bool = False  # $GITHUB_ACTIONS: fold outputs into log groups

    @classmethod
    def from_environment(
        cls,
        junit_xml: Path | None = None,
        timings_out: Path | None = None,
        show_output: bool = False,
        environ: Mapping[str, str] | None = None,
    ) -> ReportOptions:
        """The given report flags plus what GitHub Actions sets in the environment."""
        env = os.environ if environ is None else environ
        summary = env.get(STEP_SUMMARY_VARIABLE, "").strip()
        return cls(
            junit_xml=junit_xml,
            timings_out=timings_out,
            show_output=show_output,
            step_summary=Path(summary) if summary else None,
            github_actions=get_bool_env(GITHUB_ACTIONS, environ=env),
        )


class ShardReports:
    """Every report of one shard, kept in plan order (a ``ShardListener``)."""

    def __init__(self, options: ReportOptions, console: ConsoleReport | None = None) -> None:
        self.options = options
        self.console = console or ConsoleReport(
            github_actions=options.github_actions, show_output=options.show_output
        )
        self.info: RunInfo | None = None
        self.results: list[FileResult] = []
        self._finished = 0

    def shard_started(self, info: RunInfo, results: Sequence[FileResult], to_run: int) -> None:
        """Write every file report with the placeholders, then head the console.

        Raises ``OSError`` when a report file cannot be written, before any file runs.
        """
        self.info = info
        self.results = list(results)
        self._write_files()
        self.console.header(info, to_run)
        self.console.skipped([r for r in self.results if r.status == SKIPPED])

    def attempt_ended(self, path: str, attempt: AttemptResult, why: str, again: bool) -> None:
        self.console.attempt_ended(path, attempt, why, again)

    def file_finished(self, index: int, result: FileResult, total: int) -> None:
        """The file at plan position ``index`` ended; report it and rewrite the files."""
        self.results[index] = result
        self._finished += 1
        self.console.file_finished(result, self._finished, total)
        self._write_files_or_warn()

    def shard_finished(self, outcome: ShardOutcome) -> None:
        self.results = outcome.results
        self._write_files_or_warn()
        path = self.options.step_summary
        if path is not None:
            try:
                append_step_summary(path, outcome)
            except OSError as exc:
                _warn(f"could not append to the step summary {path}: {exc}")
        self.console.finish(outcome)

    def _write_files_or_warn(self) -> None:
        try:
            self._write_files()
        except OSError as exc:  # a full disk must not stop the tests; say so and go on
            _warn(f"could not write a report: {exc}")

    def _write_files(self) -> None:
        assert self.info is not None  # shard_started came first
        if self.options.junit_xml is not None:
            write_junit(self.options.junit_xml, self.results, self.info)
        if self.options.timings_out is not None:
            write_timings(self.options.timings_out, self.results, self.info)


def _warn(message: str) -> None:
    print(f"run_suite: warning: {message}", file=sys.stderr, flush=True)
