"""The reports of one shard as the executor's listener: :class:`ShardReports`.

It fans the executor's events out to the reports that were asked for (:class:`ReportOptions`):
the console always, JUnit XML and timings JSONL rewritten after every file (so a cancelled job
keeps them), the GitHub step summary appended at the end.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ci_runner.env import GITHUB_ACTIONS, get_bool_env
from ci_runner.execution.listener import AttemptStart
from ci_runner.file_safety import content_problem, destination_problem, same_file_groups
from ci_runner.model import SKIPPED, AttemptResult, FileResult, RunInfo, ShardOutcome
from ci_runner.reports.console import ConsoleReport
from ci_runner.reports.github import GitHubContext
from ci_runner.reports.step_summary import STEP_SUMMARY_VARIABLE, append_step_summary
from ci_runner.reports.timings import write_timings
from ci_runner.reports.timings_block import timings_block


@dataclass(frozen=True)
class ReportOptions:
    """Which reports a shard writes, and where."""

    junit_xml: Path | None = None  # --junit-xml
    timings_out: Path | None = None  # --timings-out
    show_output: bool = False  # --show-output: print the output of passing files too
    step_summary: Path | None = None  # $GITHUB_STEP_SUMMARY
    github_actions: bool = False  # $GITHUB_ACTIONS: fold outputs into log groups
    timings_block: bool = False  # catalog timings-block: print SGLang's TIMINGS block at the end
    live: bool = True  # stream running files' output (--quiet: off)
    github: GitHubContext = field(default_factory=GitHubContext)  # links, annotation paths
    timings_stream: str = "stdout"  # ... on stdout, or on stderr as SGLang's logger prints it

    @classmethod
    def from_environment(
        cls,
        junit_xml: Path | None = None,
        timings_out: Path | None = None,
        show_output: bool = False,
        environ: Mapping[str, str] | None = None,
        timings_block: bool = False,
        live: bool = True,
        timings_stream: str = "stdout",
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
            timings_block=timings_block,
            live=live,
            timings_stream=timings_stream,
        )

    def destination_problems(self) -> list[str]:
        """Why a report cannot be written where it was asked for, one message each.

        Each destination must be absent or a regular file (never a link, a FIFO, a device or a
        directory), the three must be distinct files (by real path), and an existing
        ``--junit-xml`` / ``--timings-out`` file must look like such a report, so a typo never
        replaces ``pyproject.toml`` or a test file.
        """
        named = [
            (label, path)
            for label, path in (
                ("--junit-xml", self.junit_xml),
                ("--timings-out", self.timings_out),
                (f"${STEP_SUMMARY_VARIABLE}", self.step_summary),
            )
            if path is not None
        ]
        problems = []
        for label, path in named:
            problem = destination_problem(path) or _content_problem(label, path)
            if problem:
                problems.append(f"{label} {path}: {problem}")
        problems += [
            f"{' and '.join(labels)} name the same file; give each report its own path"
            for labels in same_file_groups(named)
        ]
        return problems


class ShardReports:
    """Every report of one shard, kept in plan order (a ``ShardListener``)."""

    def __init__(self, options: ReportOptions, console: ConsoleReport | None = None) -> None:
        self.options = options
        self.console = console or ConsoleReport(
            github_actions=options.github_actions,
            show_output=options.show_output,
            live=options.live,
            github=options.github,
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
        self.console.resumed([r for r in self.results if r.resumed])
        self.console.skipped([r for r in self.results if r.status == SKIPPED])

    def attempt_started(self, start: AttemptStart) -> None:
        self.console.attempt_started(start)

    def attempt_stopped(self, start: AttemptStart) -> None:
        self.console.attempt_stopped(start)

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
                append_step_summary(path, outcome, self.options.github)
            except OSError as exc:
                _warn(f"could not append to the step summary {path}: {exc}")
        if self.options.timings_block:  # before the summary, which stays the last line
            self.console.block(timings_block(outcome.results), self.options.timings_stream)
        self.console.finish(outcome)

    def _write_files_or_warn(self) -> None:
        try:
            self._write_files()
        except OSError as exc:  # a full disk must not stop the tests; say so and go on
            _warn(f"could not write a report: {exc}")

    def _write_files(self) -> None:
        assert self.info is not None  # shard_started came first
        if self.options.junit_xml is not None:
            from ci_runner.reports.junit import write_junit  # junitparser: only when written

            write_junit(self.options.junit_xml, self.results, self.info)
        if self.options.timings_out is not None:
            write_timings(self.options.timings_out, self.results, self.info)


_REPORT_STARTS = {"--junit-xml": (b"<", "JUnit XML"), "--timings-out": (b"{", "timings JSON lines")}


def _content_problem(label: str, path: Path) -> str | None:
    """An existing report file is replaced only when it starts like one (``<`` / ``{``)."""
    if label not in _REPORT_STARTS:
        return None  # the step summary is appended to, never replaced
    start, kind = _REPORT_STARTS[label]
    return content_problem(path, start, kind)


def _warn(message: str) -> None:
    print(f"run_suite: warning: {message}", file=sys.stderr, flush=True)
