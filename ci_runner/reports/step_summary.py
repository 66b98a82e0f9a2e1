"""``$GITHUB_STEP_SUMMARY``: a Markdown page per shard, appended when the shard ends.

It holds the plan (shard, predicted vs actual time), a table of every file (status, time, est,
attempts) and, for each failing or flaky file, its reason and the last lines of its output. Names
and reasons are escaped (one line; names in code spans, reasons HTML-escaped), so no file name or
output can break the table or inject markup.
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

from ci_runner.file_safety import append_regular
from ci_runner.model import FLAKY, ShardOutcome, case_counts
from ci_runner.reports.console import format_seconds
from ci_runner.safe_text import one_line, printable

STEP_SUMMARY_VARIABLE = "GITHUB_STEP_SUMMARY"
FAILURE_TAIL_LINES = 60
FAILURE_TAIL_CHARS = 8000

_ICONS = {
    "passed": "✅",
    "flaky": "⚠️",
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


def _tail(text: str) -> str:
    """The last lines of an output for a fenced block (control characters made visible)."""
    lines = printable(text[-FAILURE_TAIL_CHARS:]).splitlines()[-FAILURE_TAIL_LINES:]
    text = "\n".join(lines).replace("```", "`\u200b``")
    return _TAIL_CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def render_step_summary(outcome: ShardOutcome) -> str:
    """The Markdown text for one shard."""
    info = outcome.info
    passed, failed, skipped = case_counts(outcome.results)
    verdict = "passed" if outcome.exit_code == 0 else f"failed (exit {outcome.exit_code})"
    if outcome.interrupted_by:
        verdict = f"interrupted by {outcome.interrupted_by} (exit {outcome.exit_code})"
    out = [
        f"## run_suite: {_cell(info.hw)} {_cell(', '.join(info.suites))}, shard "
        f"{info.shard_id + 1} of {info.shard_count}: {verdict}",
        "",
        f"- plan `{info.plan_hash}`; {_cell(info.slots)}; {_cell(info.mode)}",
        f"- predicted: this shard {info.shard_est_total:g}s of est, slowest shard "
        f"{info.predicted_makespan:g}s (lower bound {info.lower_bound:g}s); "
        f"actual wall {format_seconds(outcome.wall)}",
        f"- test cases: {passed} passed, {failed} failed, {skipped} skipped",
        "",
        "| file | status | time | est | attempts |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for r in outcome.results:
        out.append(
            f"| {_code(r.path)} | {_ICONS.get(r.status, '')} {r.status} | "
            f"{format_seconds(r.elapsed)} | {r.est_time:g}s | {len(r.attempts)} |"
        )
    problems = [*outcome.failing, *outcome.flaky]
    if problems:
        out += ["", "### Failures" if outcome.failing else "### Flaky files"]
        if outcome.failing and outcome.flaky:
            out[-1] = "### Failures and flaky files"
        for r in problems:
            out += ["", f"**{_code(r.path)}** {r.status}: {_cell(r.reason)}"]
            shown = r.failed_attempts if r.status == FLAKY else r.attempts[-1:]
            for attempt in shown:
                out += [
                    "",
                    f"<details><summary>attempt {attempt.number}: {attempt.status}</summary>",
                    "",
                    "```text",
                    _tail(attempt.output_tail),
                    "```",
                    "</details>",
                ]
    if outcome.not_run:
        out += ["", f"### Not run ({len(outcome.not_run)})", ""]
        out += [f"- {_code(r.path)}: {_cell(r.reason)}" for r in outcome.not_run]
    if outcome.skipped:
        out += ["", f"### Skipped on this runner ({len(outcome.skipped)})", ""]
        out += [f"- {_code(r.path)}: {_cell(r.reason)}" for r in outcome.skipped]
    return "\n".join(out) + "\n"


def append_step_summary(path: Path, outcome: ShardOutcome) -> None:
    """Append the shard's Markdown to the step summary file (a regular file, or created)."""
    append_regular(path, render_step_summary(outcome))


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
