"""GitHub Actions matrices computed from the plan, so no workflow writes a shard count by hand.

``python run_suite.py --hw cuda --suite S --print-matrix`` prints :func:`build_matrix`'s result as
one JSON line. A workflow reads it with
``strategy: {matrix: {include: ${{ fromJSON(needs.plan.outputs.S).include }}}}``.

Sizing rule, per suite:

* budget = 0.75 x target minutes x 60 seconds, where target is ``--matrix-target-minutes`` or
  else the suite's ``job-timeout-minutes``; the other quarter of the job is left for checkout,
  install and JIT compilation;
* N = ceil(sum of est_time / budget), clamped to [1, number of files];
* N then grows until the LPT plan's slowest shard fits the budget (N = number of files always
  fits, because no single file may exceed the budget);
* a file whose est_time alone exceeds the budget is an error (split it, or raise the target);
* the whole matrix (all suites together) must stay within GitHub's 256 jobs per matrix.

An empty suite still gets one shard, so its job runs and reports "no files" instead of GitHub
rejecting an empty matrix.

With a ``[tool.ci-runner.partitions]`` rule (a repository whose workflows are sized by its own
partition script) the shard counts are that rule's instead: pinned suites keep their count, the
others get ceil(total est / budget), and only a count above the number of files is an error;
each suite also gets its ``max_parallel``. A suite whose runner label is computed at run time
has no ``runner``; its entries carry the catalog's ``runner-key`` (the key the workflow looks
the label up with), or null.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ci_runner.catalog import Suite
from ci_runner.catalog.partitions import PartitionRule
from ci_runner.model import FileToRun, Registration
from ci_runner.plan.packing import plan
from ci_runner.plan.partition_sizes import Model, PartitionSizeError, partition_sizes

FILL_FRACTION = 0.75
GITHUB_MATRIX_JOB_LIMIT = 256
LINEAR_STEPS = 8


class MatrixError(ValueError):
    """The suites cannot be sharded within the budget; the message says which file or suite."""


@dataclass(frozen=True)
class SuiteSizing:
    """How one suite was sized."""

    suite: str
    shards: int
    files: int
    total_est: float
    budget_seconds: float
    makespan: float


def shard_budget_seconds(target_minutes: float) -> float:
    """The est seconds one shard may hold: ``FILL_FRACTION`` of the job's minutes."""
    return FILL_FRACTION * target_minutes * 60.0


def _target_minutes(suite: Suite, override: float | None) -> float:
    if override is not None:
        if not override > 0:
            raise MatrixError(f"--matrix-target-minutes must be positive, got {override:g}")
        return float(override)
    if suite.job_timeout_minutes is None:
        raise MatrixError(
            f"suite {suite.name!r} has no job-timeout-minutes in [tool.ci-runner]; "
            "add one or pass --matrix-target-minutes M"
        )
    return float(suite.job_timeout_minutes)


def _makespan(items: Sequence[tuple[str, float]], shard_count: int) -> float:
    """The slowest shard of the plan the runner itself would use for ``shard_count`` shards."""
    return float(plan(items, shard_count).makespan)


def size_suite(
    suite: Suite, files: Sequence[FileToRun], target_minutes: float | None
) -> SuiteSizing:
    """Choose the shard count of one suite (see the module docstring for the rule)."""
    budget = shard_budget_seconds(_target_minutes(suite, target_minutes))
    items = sorted((f.path, float(f.est_time)) for f in files)
    too_long = [(path, est) for path, est in items if est > budget]
    if too_long:
        listing = ", ".join(f"{path} (est_time={est:g}s)" for path, est in too_long[:5])
        if len(too_long) > 5:
            listing += f" and {len(too_long) - 5} more"
        raise MatrixError(
            f"suite {suite.name!r}: {listing} alone exceed(s) the shard budget of {budget:g}s "
            f"({FILL_FRACTION:g} x {budget / FILL_FRACTION / 60:g} min); split the file or raise "
            "job-timeout-minutes / --matrix-target-minutes"
        )
    total = sum(est for _, est in items)
    if not items:
        return SuiteSizing(suite.name, 1, 0, 0.0, budget, 0.0)
    shards = min(max(1, math.ceil(total / budget)), len(items))
    makespan = _makespan(items, shards)
    # A few single steps cover the usual case; then bisect, since with one file per shard the
    # makespan is the longest file, which fits. The result always fits the budget.
    for _ in range(LINEAR_STEPS):
        if makespan <= budget or shards >= len(items):
            return SuiteSizing(suite.name, shards, len(items), total, budget, makespan)
        shards += 1
        makespan = _makespan(items, shards)
    if makespan <= budget:
        return SuiteSizing(suite.name, shards, len(items), total, budget, makespan)
    low, high = shards, len(items)  # low does not fit, high fits
    high_span = _makespan(items, high)
    while high - low > 1:
        middle = (low + high) // 2
        span = _makespan(items, middle)
        if span <= budget:
            high, high_span = middle, span
        else:
            low = middle
    return SuiteSizing(suite.name, high, len(items), total, budget, high_span)


def _minimum_shards(suite: Suite, files: Sequence[FileToRun], target: float | None) -> int:
    """ceil(total est / budget), clamped to [1, files]: no plan can use fewer shards."""
    budget = shard_budget_seconds(_target_minutes(suite, target))
    return min(max(1, math.ceil(sum(f.est_time for f in files) / budget)), max(1, len(files)))


def _check_job_limit(shard_counts: dict[str, int], qualifier: str) -> None:
    jobs = sum(shard_counts.values())
    if jobs > GITHUB_MATRIX_JOB_LIMIT:
        counts = ", ".join(f"{name}: {n}" for name, n in shard_counts.items())
        raise MatrixError(
            f"the matrix needs {qualifier}{jobs} jobs ({counts}), over GitHub's limit of "
            f"{GITHUB_MATRIX_JOB_LIMIT} per matrix; raise --matrix-target-minutes or "
            "split the suites over several jobs"
        )


def _by_rule(
    rule: PartitionRule, suite: Suite, files: list[FileToRun], target: float | None
) -> tuple[int, int]:
    """(shards, max_parallel) of one suite by the repository's partition rule."""
    minutes = _target_minutes(suite, target)
    registrations = [Registration(f.path, suite.hw, suite.name, f.est_time) for f in files]
    try:
        sized = partition_sizes(rule, registrations, {suite.name: int(minutes)}, Model())
    except PartitionSizeError as exc:
        raise MatrixError(str(exc)) from None
    entry = sized.get(suite.name, {"size": 1, "max_parallel": 1})
    return int(entry["size"]), int(entry["max_parallel"])  # type: ignore[call-overload]


def build_matrix(
    files: list[FileToRun],
    suites: list[Suite],
    target_minutes: float | None,
    rule: PartitionRule | None = None,
    runner_required: bool = True,
) -> dict:
    """The matrix JSON for ``suites``: one ``include`` entry per (suite, shard).

    Each entry has ``suite``, ``shard`` (0-based, for ``--auto-partition-id``), ``shards`` (for
    ``--auto-partition-size``), ``runner`` (the catalog's runner label), ``timeout_minutes`` (the
    job budget) and ``name`` (for job titles). Top-level ``shards`` maps suite -> N and ``jobs``
    is the entry count.
    """
    by_suite: dict[str, list[FileToRun]] = {s.name: [] for s in suites}
    for item in files:
        if item.suite not in by_suite:
            raise MatrixError(
                f"file {item.path} belongs to suite {item.suite!r}, which is not among the "
                f"suites being sized ({', '.join(by_suite)})"
            )
        by_suite[item.suite].append(item)

    _check_job_limit(
        {
            s.name: _minimum_shards(s, by_suite[s.name], target_minutes)
            for s in suites
            if s.runner is not None
        },
        "at least ",
    )
    include: list[dict] = []
    shard_counts: dict[str, int] = {}
    max_parallel: dict[str, int] = {}
    sizing: dict[str, dict] = {}
    for suite in suites:
        if suite.runner is None and suite.runner_key is None and runner_required:
            raise MatrixError(
                f"suite {suite.name!r} has no runner label in [tool.ci-runner]; "
                'add runner = "<GitHub Actions runner label>"'
            )
        if rule is None:
            sized = size_suite(suite, by_suite[suite.name], target_minutes)
        else:
            shards, max_parallel[suite.name] = _by_rule(
                rule, suite, by_suite[suite.name], target_minutes
            )
            items = sorted((f.path, float(f.est_time)) for f in by_suite[suite.name])
            budget = rule.budget_fraction * _target_minutes(suite, target_minutes) * 60
            sized = SuiteSizing(
                suite.name,
                shards,
                len(items),
                sum(e for _, e in items),
                budget,
                _makespan(items, shards) if items else 0.0,
            )
        fraction = FILL_FRACTION if rule is None else rule.budget_fraction
        timeout = math.ceil(sized.budget_seconds / fraction / 60)
        shard_counts[suite.name] = sized.shards
        sizing[suite.name] = {
            "files": sized.files,
            "total_est": sized.total_est,
            "budget_seconds": sized.budget_seconds,
            "makespan": sized.makespan,
        }
        include.extend(
            {
                "suite": suite.name,
                "shard": index,
                "shards": sized.shards,
                "runner": suite.runner,
                **({"runner_key": suite.runner_key} if suite.runner_key is not None else {}),
                "timeout_minutes": timeout,
                "name": f"{suite.name} {index + 1}/{sized.shards}",
            }
            for index in range(sized.shards)
        )
    _check_job_limit(shard_counts, "")
    matrix = {"include": include, "shards": shard_counts, "jobs": len(include), "sizing": sizing}
    if rule is not None:
        matrix["max_parallel"] = max_parallel
    return matrix
