"""``$GITHUB_STEP_SUMMARY``: a Markdown page per shard, appended when the shard ends.

Failures first: a table of the failing test cases (``path::Class::test``, each linked to its
source line in the commit under test, with its status and message), then for each failing file
its reason, the Python stacks of a hung file and the end of its output; then flaky cases (what
they failed with first), files that ran no tests, a table of every file (status, time, est,
attempts), and the files not run. A link to the run's jobs (their logs) heads it under GitHub
Actions. Names and reasons are escaped (one line; names in code spans, reasons HTML-escaped), so
no file name or output can break the table or inject markup.
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

from ci_runner.execution.stacks import format_stacks
from ci_runner.file_safety import append_regular
from ci_runner.model import FLAKY, FileResult, ShardOutcome, case_counts, quarantined_failures
from ci_runner.reports.github import GitHubContext, case_name, failing_cases, flaky_cases
from ci_runner.reports.live import format_seconds
from ci_runner.safe_text import one_line, printable

STEP_SUMMARY_VARIABLE = "GITHUB_STEP_SUMMARY"
FAILURE_TAIL_LINES = 60
FAILURE_TAIL_CHARS = 8000
MAX_CASE_ROWS = 200  # rows of the failures and flaky tables; the JUnit report has them all

_ICONS = {
    "passed": "✅",
    "flaky": "⚠️",
    "no_tests": "❔",
    "failed": "❌",
    "timeout": "⏱️",
    "crashed": "💥",
    "not_run": "⏭️",
    "skipped": "➖",
    "disabled": "🚫",
}


_TAIL_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _cell(text: str) -> str:
    """Text for a table cell or a list item: one line, no Markdown table break, no raw HTML."""
    return html.escape(one_line(text), quote=False).replace("|", "\\|")


def _code(text: str) -> str:
    """A name as inline code that no backtick or ``|`` can break (a code span shows ``<`` as
    is): delimited by one backtick more than the longest run inside it."""
    text = one_line(text).replace("|", "\\|")
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence, pad = "`" * (longest + 1), " " if longest else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _tail(text: str, lines: int = FAILURE_TAIL_LINES) -> str:
    """The last lines of an output for a fenced block (control characters made visible)."""
    kept = printable(text[-FAILURE_TAIL_CHARS * max(1, lines // FAILURE_TAIL_LINES) :])
    lines_kept = kept.splitlines()[-lines:]
    text = "\n".join(lines_kept).replace("```", "`\u200b``")
    return _TAIL_CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def _case_link(name: str, url: str | None) -> str:
    """The case's name as inline code, linked to its source line when there is a link."""
    return f"[{_code(name)}]({url})" if url else _code(name)


def _failure_rows(outcome: ShardOutcome, github: GitHubContext) -> list[str]:
    rows: list[str] = []
    for result in outcome.failing:
        for case in failing_cases(result):
            url = github.blob_url(case.file or result.path, case.line)
            message = case.message if case.case_id else result.reason
            rows.append(
                f"| {_case_link(case_name(case, result), url)} | {_ICONS.get(result.status, '')} "
                f"{result.status} | {_cell(message or result.reason)} |"
            )
    return rows


def _flaky_rows(outcome: ShardOutcome, github: GitHubContext) -> list[str]:
    rows: list[str] = []
    for result in outcome.flaky:
        for case, before in flaky_cases(result):
            url = github.blob_url(case.file or result.path, case.line)
            rows.append(
                f"| {_case_link(case_name(case, result), url)} | {_cell(before)} | passed on "
                f"attempt {len(result.attempts)} |"
            )
    return rows


def _bounded_rows(rows: list[str]) -> list[str]:
    if len(rows) <= MAX_CASE_ROWS:
        return rows
    return [
        *rows[:MAX_CASE_ROWS],
        f"| and {len(rows) - MAX_CASE_ROWS} more: see the JUnit report | | |",
    ]


def _status_cell(result: FileResult) -> str:
    cell = f"{_ICONS.get(result.status, '')} {result.status}"
    if result.quarantined is not None:
        cell += " (quarantined)"
    if result.resumed:
        cell += " (previous attempt)"
    return cell


def _details(result: FileResult) -> list[str]:
    """The reason, stacks and output tails of a failing, flaky or no-test file."""
    reason = result.reason
    if result.quarantined is not None:
        reason += f" (quarantined: {result.quarantined})"
    out = ["", f"**{_code(result.path)}** {result.status}: {_cell(reason)}"]
    shown = result.failed_attempts if result.status == FLAKY else result.attempts[-1:]
    for attempt in shown:
        if attempt.stacks:
            out += [
                "",
                f"<details><summary>attempt {attempt.number}: Python stacks before the kill"
                "</summary>",
                "",
                "```text",
                _tail(format_stacks(attempt.stacks, attempt.stacks_omitted), lines=200),
                "```",
                "</details>",
            ]
        out += [
            "",
            f"<details><summary>attempt {attempt.number}: {attempt.status} (end of its output)"
            "</summary>",
            "",
            "```text",
            _tail(attempt.output_tail),
            "```",
            "</details>",
        ]
    return out


def _section(title: str, header: str, rows: list[str], results: list[FileResult]) -> list[str]:
    """``### <title> (n)``: a table of ``rows`` (bounded), then each file's details."""
    if not rows:
        return []
    out = ["", f"### {title} ({len(rows)})", "", header, "| --- | --- | --- |"]
    out += _bounded_rows(rows)
    for result in results:
        out += _details(result)
    return out


def render_step_summary(outcome: ShardOutcome, github: GitHubContext | None = None) -> str:
    """The Markdown text for one shard: failures first, then flaky and no-test files, then
    every file."""
    github = github or GitHubContext()
    info = outcome.info
    passed, failed, skipped = case_counts(outcome.results)
    quarantined = quarantined_failures(outcome.results)
    verdict = "passed" if outcome.exit_code == 0 else f"failed (exit {outcome.exit_code})"
    if outcome.interrupted_by:
        verdict = f"interrupted by {outcome.interrupted_by} (exit {outcome.exit_code})"
    out = [
        f"## run_suite: {_cell(info.hw)} {_cell(', '.join(info.suites))}, shard "
        f"{info.shard}: {verdict}",
        "",
        f"- test cases: {passed} passed, {failed} failed, {skipped} skipped"
        + (f", {quarantined} quarantined (failing no job)" if quarantined else ""),
        f"- plan `{info.plan_hash}`; {_cell(info.slots)}; {_cell(info.mode)}",
        f"- predicted: this shard {info.shard_est_total:g}s of est, slowest shard "
        f"{info.predicted_makespan:g}s (lower bound {info.lower_bound:g}s); "
        f"actual wall {format_seconds(outcome.wall)}",
    ]
    run_url = github.run_url()
    if run_url:
        out.append(f"- job log: [this run's jobs]({run_url})")
    out += _section(
        "Failures",
        "| test case | status | message |",
        _failure_rows(outcome, github),
        outcome.failing,
    )
    out += _section(
        "Flaky",
        "| test case | failed first with | then |",
        _flaky_rows(outcome, github),
        outcome.flaky,
    )
    if outcome.quarantined:
        out += ["", f"### Quarantined, failing no job ({len(outcome.quarantined)})"]
        for result in outcome.quarantined:
            out += _details(result)
    tolerated = [r for r in outcome.no_tests if not r.fails_unquarantined]
    if tolerated:
        out += ["", f"### Ran no tests ({len(tolerated)})", ""]
        out += [f"- {_code(r.path)}: {_cell(r.reason)} ({_cell(r.tolerated)})" for r in tolerated]
    out += [
        "",
        f"### Files ({len(outcome.results)})",
        "",
        "| file | status | time | est | attempts |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for r in outcome.results:
        out.append(
            f"| {_code(r.path)} | {_status_cell(r)} | "
            f"{format_seconds(r.elapsed)} | {r.est_time:g}s | {len(r.attempts)} |"
        )
    if outcome.not_run:
        out += ["", f"### Not run ({len(outcome.not_run)})", ""]
        out += [f"- {_code(r.path)}: {_cell(r.reason)}" for r in outcome.not_run]
    if outcome.skipped:
        out += ["", f"### Skipped on this runner ({len(outcome.skipped)})", ""]
        out += [f"- {_code(r.path)}: {_cell(r.reason)}" for r in outcome.skipped]
    return "\n".join(out) + "\n"


def append_step_summary(
    path: Path, outcome: ShardOutcome, github: GitHubContext | None = None
) -> None:
    """Append the shard's Markdown to the step summary file (a regular file, or created)."""
    append_regular(path, render_step_summary(outcome, github))


def append_notice(path: Path | None, notice: str) -> None:
    """Append one notice line (e.g. an empty selection) to the step summary, when there is one."""
    if path is None:
        return
    try:
        append_regular(path, f"> {_cell(notice)}\n\n")
    except OSError as exc:
        print(
            f"run_suite: warning: could not append to the step summary {path}: {exc}",
            file=sys.stderr,
        )
