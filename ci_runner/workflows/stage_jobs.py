"""The stage jobs of one workflow file: jobs that call a reusable stage workflow, with the suite
each runs and its budget in minutes (``run_suite.py partitions``, SGLang's ``pr-test.yml``)."""

from __future__ import annotations

from pathlib import Path


class StageJobsError(ValueError):
    """The workflow cannot be read, or a stage job lacks its budget; the message names it."""


def stage_budgets(
    path: Path, shown: str, uses: tuple[str, ...], suite_input: str | None, budget_input: str
) -> dict[str, int]:
    """``suite -> minutes`` for each job of ``path`` whose ``uses:`` is one of ``uses``."""
    import yaml  # PyYAML: read only here and in init's workflow reading

    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise StageJobsError(f"{shown}: cannot read it as YAML: {exc}") from None
    jobs = document.get("jobs") if isinstance(document, dict) else None
    budgets: dict[str, int] = {}
    for job_id, job in (jobs or {}).items():
        if not isinstance(job, dict) or job.get("uses") not in uses:
            continue
        inputs = job.get("with") or {}
        if not isinstance(inputs, dict):
            raise StageJobsError(f"{shown}: job {job_id!r}: with: must be a mapping")
        suite = inputs.get(suite_input, job_id) if suite_input else job_id
        raw = inputs.get(budget_input)
        try:
            minutes = int(str(raw))
        except ValueError:
            raise StageJobsError(
                f"{shown}: job {job_id!r}: with: {budget_input} must be a whole number of "
                f"minutes, got {raw!r}"
            ) from None
        budgets[str(suite)] = minutes
    if not budgets:
        raise StageJobsError(
            f"{shown}: no job calls {' or '.join(uses)}; the catalog's partitions "
            "stage-workflows names the reusable workflows its stage jobs call"
        )
    return budgets
