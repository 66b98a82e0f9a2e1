"""Render a drafted catalog as the ``[tool.ci-runner]`` TOML text ``init`` writes.

Conflicts become comments above the table, so they stay next to the values they concern.
"""

from __future__ import annotations

import json

from ci_runner.adoption.draft import Draft
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
        '# Review it: add runner = "<label>" and job-timeout-minutes = N to each suite (for',
        "# --print-matrix), check gpus-per-file (guessed from the suite names), and decide:",
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
        lines += [
            "",
            "[[tool.ci-runner.suites]]",
            f"name = {_toml(suite.name)}  # {suite.registrations} registration(s) in "
            f"{suite.files} file(s)",
            f"hw = {_toml(suite.hw)}",
            f"nightly = {_toml(suite.nightly)}",
            f"gpus-per-file = {_toml(suite.gpus_per_file)}",
        ]
    if draft.execution_text:
        lines += ["", draft.execution_text.rstrip("\n")]
    return "\n".join(lines) + "\n"
