"""Render a drafted catalog as the TOML text ``init`` writes: ``[tool.ci-runner]`` tables of a
``pyproject.toml``, or the top level of a ``ci-runner.toml``.

Conflicts become comments above the catalog, so they stay next to the values they concern.
"""

from __future__ import annotations

from ci_runner.adoption.draft import Draft, DraftSuite
from ci_runner.adoption.tables import key_lines, render_table, toml_value
from ci_runner.catalog import DEFAULT_FILE_PATTERNS
from ci_runner.catalog.location import CatalogLocation

RULE = "# " + "-" * 87


def catalog_text(draft: Draft, location: CatalogLocation) -> str:
    """The whole catalog, comments first."""
    suites_from = draft.policy.suites_from
    review = (
        [
            f"# Suite names: read from {suites_from} on every run (suites-from); a suite entry",
            "# below only carries settings: runner / runner-key and job-timeout-minutes (for",
            "# --print-matrix) from the jobs of .github/workflows that run it. Decide:",
        ]
        if suites_from
        else [
            "# Review it: runner and job-timeout-minutes (for --print-matrix) come from the jobs of",
            "# .github/workflows that run each suite; add them where missing. Check gpus-per-file",
            "# (guessed from the suite names), and decide:",
        ]
    )
    lines = [
        RULE,
        f"# Suite catalog written by `run_suite.py init` from {draft.files} file(s) under "
        f"{draft.scope} ({draft.registration_count} registrations).",
        *review,
    ]
    lines += [f"#   - {conflict}" for conflict in draft.conflicts] or ["#   (no conflicts found)"]
    lines.append(RULE)
    if not location.own_file:
        lines.append(location.header())
    lines += _root_comments(draft)
    lines += key_lines(root_values(draft), {})
    for table in draft.tables:
        lines += render_table(table, location)
    for suite in draft.written_suites:
        lines += ["", location.header("suites", array=True), *suite_lines(suite)]
    return "\n".join(lines) + "\n"


def root_values(draft: Draft) -> dict[str, object]:
    """The catalog's own keys, in the order written."""
    values: dict[str, object] = {"registered-dir": draft.registered_dir}
    syntax = draft.syntax
    if syntax.suite_template is not None:
        values["suite-template"] = syntax.suite_template.text
    if draft.file_patterns != DEFAULT_FILE_PATTERNS:
        values["file-patterns"] = list(draft.file_patterns)
    if syntax.ignored_arguments:
        values["ignored-arguments"] = list(syntax.ignored_arguments)
    if draft.excluded:
        values["exclude-files"] = list(draft.excluded)
    if draft.extra_dirs:
        values["extra-dirs"] = [{"path": d.path, "files": list(d.files)} for d in draft.extra_dirs]
    return values


def _root_comments(draft: Draft) -> list[str]:
    lines = []
    if draft.excluded:
        lines.append("# exclude-files: they register nothing, so the tree's own runner skips them")
    if draft.extra_dirs:
        lines.append("# extra-dirs: the tree's own runner also collects these directories")
    return lines


def suite_values(suite: DraftSuite) -> dict[str, object]:
    """One suite entry's keys, in the order written."""
    values: dict[str, object] = {
        "name": suite.name,
        "hw": suite.hw,
        "nightly": suite.nightly,
        "gpus-per-file": suite.gpus_per_file,
    }
    workflow = suite.workflow
    if workflow is not None and workflow.runner is not None:
        values["runner"] = workflow.runner
    if workflow is not None and workflow.runner_key is not None:
        values["runner-key"] = workflow.runner_key
    if workflow is not None and workflow.job_timeout_minutes is not None:
        minutes = workflow.job_timeout_minutes
        values["job-timeout-minutes"] = int(minutes) if minutes.is_integer() else minutes
    return values


def suite_lines(suite: DraftSuite) -> list[str]:
    """One suite's keys; where the workflows run it, as a comment (--auto-partition-size has no
    key: --print-matrix sizes shards from job-timeout-minutes)."""
    values = suite_values(suite)
    notes = {"name": f"{suite.registrations} registration(s) in {suite.files} file(s)"}
    workflow = suite.workflow
    if workflow is not None and workflow.timeout_is_default:
        notes["job-timeout-minutes"] = "the jobs set no timeout-minutes: GitHub's default"
    elif workflow is not None and workflow.timeout_from_step:
        notes["job-timeout-minutes"] = "the timeout-minutes of the step that runs the suite"
    if workflow is not None and workflow.runner_key is not None:
        notes["runner-key"] = "runs-on is looked up with this key at run time"
    lines = key_lines({"name": values.pop("name")}, notes)
    if workflow is not None:
        more = f" and {len(workflow.where) - 3} more" if len(workflow.where) > 3 else ""
        sizes = ", ".join(map(str, workflow.partition_sizes)) or "none"
        lines.append(
            f"# run by {', '.join(workflow.where[:3])}{more}; --auto-partition-size there: {sizes}"
        )
    return lines + key_lines(values, notes)


__all__ = ["catalog_text", "root_values", "suite_lines", "suite_values", "toml_value"]
