"""``$GITHUB_STEP_SUMMARY``: a Markdown page per shard, appended when the shard ends.

It holds the plan (shard, predicted vs actual time), a table of every file (status, time, est,
attempts) and, for each failing or flaky file, its reason and the last lines of its output.
"""

from __future__ import annotations

from pathlib import Path

from ci_runner.model import FLAKY, ShardOutcome, case_counts
from ci_runner.reports.console import format_seconds

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


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _tail(text: str) -> str:
    lines = text[-FAILURE_TAIL_CHARS:].splitlines()[-FAILURE_TAIL_LINES:]
    return "\n".join(lines).replace("```", "`\u200b``")


def render_step_summary(outcome: ShardOutcome) -> str:
    """The Markdown text for one shard."""
    info = outcome.info
    passed, failed, skipped = case_counts(outcome.results)
    verdict = "passed" if outcome.exit_code == 0 else f"failed (exit {outcome.exit_code})"
    if outcome.interrupted_by:
        verdict = f"interrupted by {outcome.interrupted_by} (exit {outcome.exit_code})"
    out = [
        f"## run_suite: {info.hw} {', '.join(info.suites)}, shard {info.shard_id + 1} of "
        f"{info.shard_count}: {verdict}",
        "",
        f"- plan `{info.plan_hash}`; {info.slots}; {info.mode}",
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
            f"| `{_cell(r.path)}` | {_ICONS.get(r.status, '')} {r.status} | "
            f"{format_seconds(r.elapsed)} | {r.est_time:g}s | {len(r.attempts)} |"
        )
    problems = [*outcome.failing, *outcome.flaky]
    if problems:
        out += ["", "### Failures" if outcome.failing else "### Flaky files"]
        if outcome.failing and outcome.flaky:
            out[-1] = "### Failures and flaky files"
        for r in problems:
            out += ["", f"**`{r.path}`** {r.status}: {_cell(r.reason)}"]
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
        out += [f"- `{r.path}`: {_cell(r.reason)}" for r in outcome.not_run]
    if outcome.skipped:
        out += ["", f"### Skipped on this runner ({len(outcome.skipped)})", ""]
        out += [f"- `{r.path}`: {_cell(r.reason)}" for r in outcome.skipped]
    return "\n".join(out) + "\n"


def append_step_summary(path: Path, outcome: ShardOutcome) -> None:
    """Append the shard's Markdown to the step summary file."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(render_step_summary(outcome))
