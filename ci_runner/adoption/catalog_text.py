"""Render a drafted catalog as the ``[tool.ci-runner]`` TOML text ``init`` writes.

Conflicts become comments above the table, so they stay next to the values they concern.
"""

from __future__ import annotations

import json

from ci_runner.adoption.draft import Draft, DraftSuite
from ci_runner.adoption.policy_text import exclude_lines, extra_dirs_lines, policy_lines
from ci_runner.catalog import DEFAULT_FILE_PATTERNS
from ci_runner.markers import MARKER_BACKENDS


def _toml(value: object) -> str:
    """A TOML literal: JSON's spelling is valid TOML for strings, numbers, booleans, lists."""
    return json.dumps(value)


def catalog_text(draft: Draft) -> str:
    """The whole ``[tool.ci-runner]`` section, comments first."""
    lines = [
        "# ---------------------------------------------------------------------------------------",
        f"# Suite catalog written by `run_suite.py init` from {draft.files} file(s) under "
        f"{draft.scope} ({draft.registration_count} registrations).",
        "# Review it: runner and job-timeout-minutes (for --print-matrix) come from the jobs of",
        "# .github/workflows that run each suite; add them where missing. Check gpus-per-file",
        "# (guessed from the suite names), and decide:",
    ]
    lines += [f"#   - {conflict}" for conflict in draft.conflicts] or ["#   (no conflicts found)"]
    lines += [
        "# ---------------------------------------------------------------------------------------",
        "[tool.ci-runner]",
        f"registered-dir = {_toml(draft.registered_dir)}",
    ]
    syntax = draft.syntax
    if syntax.suite_template is not None:
        lines.append(f"suite-template = {_toml(syntax.suite_template.text)}")
    if draft.file_patterns != DEFAULT_FILE_PATTERNS:
        lines.append(f"file-patterns = {_toml(list(draft.file_patterns))}")
    if syntax.ignored_arguments:
        lines.append(f"ignored-arguments = {_toml(list(syntax.ignored_arguments))}")
    lines += exclude_lines(draft)
    lines += extra_dirs_lines(draft)
    extra = {name: hw for name, hw in syntax.markers.items() if name not in MARKER_BACKENDS}
    if extra:
        lines += ["", "[tool.ci-runner.extra-markers]"]
        lines += [f"{name} = {_toml(hw)}" for name, hw in sorted(extra.items())]
    lines += policy_lines(draft)
    for suite in draft.suites:
        lines += ["", "[[tool.ci-runner.suites]]", *_suite_lines(suite)]
    if draft.execution_text:
        lines += ["", draft.execution_text.rstrip("\n")]
    return "\n".join(lines) + "\n"


def _suite_lines(suite: DraftSuite) -> list[str]:
    """One suite's keys; where the workflows run it, as a comment (--auto-partition-size has no
    key: --print-matrix sizes shards from job-timeout-minutes)."""
    lines = [
        f"name = {_toml(suite.name)}  # {suite.registrations} registration(s) in "
        f"{suite.files} file(s)"
    ]
    values = suite.workflow
    if values is not None:
        more = f" and {len(values.where) - 3} more" if len(values.where) > 3 else ""
        sizes = ", ".join(map(str, values.partition_sizes)) or "none"
        lines.append(
            f"# run by {', '.join(values.where[:3])}{more}; --auto-partition-size there: {sizes}"
        )
    lines += [
        f"hw = {_toml(suite.hw)}",
        f"nightly = {_toml(suite.nightly)}",
        f"gpus-per-file = {_toml(suite.gpus_per_file)}",
    ]
    if values is not None and values.runner is not None:
        lines.append(f"runner = {_toml(values.runner)}")
    if values is not None and values.job_timeout_minutes is not None:
        minutes = values.job_timeout_minutes
        why = ""
        if values.timeout_is_default:
            why = "  # the jobs set no timeout-minutes: GitHub's default"
        elif values.timeout_from_step:
            why = "  # the timeout-minutes of the step that runs the suite"
        lines.append(
            f"job-timeout-minutes = {_toml(int(minutes) if minutes.is_integer() else minutes)}"
            + why
        )
    return lines
