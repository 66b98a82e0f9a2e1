"""``run_suite.py partitions``: each stage suite's shard count, as the workflows consume it.

The rule is the catalog's ``[tool.ci-runner.partitions]`` (:mod:`ci_runner.catalog.partitions`);
the output is the JSON SGLang's ``compute_partitions.py`` prints, ``{"<suite>": {"arr": [0, ...],
"max_parallel": m, "size": n}}`` (keys sorted, no spaces). Registrations are counted one by one,
as that script counts them.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ci_runner.catalog.limits import is_finite_number, number_text
from ci_runner.catalog.partitions import PartitionRule
from ci_runner.file_safety import read_regular_text, why
from ci_runner.model import Registration
from ci_runner.plan.live_estimates import LiveEstimateError, load_live_estimates

FIT_KEY = "fit"


class PartitionSizeError(ValueError):
    """A suite cannot be sized by the rule (one file over the budget, a fit over the budget)."""


@dataclass(frozen=True)
class Model:
    """The measured numbers of a model file: per-file seconds and per-suite (coeff, bias)."""

    est: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    fit: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    notice: str = ""


def load_model(path: Path | None, suites: Iterable[str]) -> Model:
    """The ``est`` and ``fit`` tables of a model file (missing file: est_time, with a notice)."""
    if path is None:
        return Model()
    suites = list(suites)
    live = load_live_estimates(path, suites)
    if not path.exists():
        return Model(notice=live.notice)
    try:
        data = json.loads(read_regular_text(path))
    except (OSError, ValueError) as exc:
        raise LiveEstimateError(f"--partition-model-file {path}: {why(exc)}") from None
    raw = data.get(FIT_KEY, {})
    if not isinstance(raw, dict):
        raise LiveEstimateError(f"--partition-model-file {path}: key {FIT_KEY!r} must be an object")
    fit: dict[str, tuple[float, float]] = {}
    for suite in suites:
        entry = raw.get(suite) or {}
        if not isinstance(entry, dict):
            raise LiveEstimateError(
                f"--partition-model-file {path}: key {FIT_KEY}.{suite} must be an object"
            )
        coeff, bias = entry.get("coeff", 1.0), entry.get("bias", 0.0)
        if not (is_finite_number(coeff) and is_finite_number(bias)):
            raise LiveEstimateError(
                f"--partition-model-file {path}: key {FIT_KEY}.{suite} must hold numbers coeff "
                f"and bias, got {number_text(coeff)}, {number_text(bias)}"
            )
        fit[suite] = (float(coeff), float(bias)) if coeff > 0 else (1.0, 0.0)
    return Model(live.by_suite, fit, live.notice)


def partition_sizes(
    rule: PartitionRule,
    registrations: Iterable[Registration],
    budgets: Mapping[str, int],
    model: Model,
    full_parallel: bool = False,
) -> dict[str, dict[str, object]]:
    """``suite -> {"arr", "max_parallel", "size"}`` for the suites of ``budgets`` and the pinned
    ones that have registrations (see the catalog module for the rule)."""
    dispatched = set(budgets) | set(rule.pinned)
    groups: dict[str, list[Registration]] = defaultdict(list)
    for reg in registrations:
        counted = reg.backend in rule.backends and not reg.nightly and reg.disabled is None
        if counted and reg.suite in dispatched:
            groups[reg.suite].append(reg)
    result: dict[str, dict[str, object]] = {}
    for suite, group in groups.items():
        live = model.est.get(suite, {})
        total = math.fsum(live.get(r.path, r.est_time) for r in group)
        coeff, bias = model.fit.get(suite, (1.0, 0.0))
        if suite in rule.pinned:
            size = max_parallel = rule.pinned[suite]
        else:
            target = rule.budget_fraction * budgets[suite] * 60
            if target - bias <= 0:
                raise PartitionSizeError(
                    f"suite {suite!r}: the model's fit bias {bias:g}s is not below the shard "
                    f"budget {target:g}s; check the fit or raise the job's budget"
                )
            size = math.ceil(coeff * total / (target - bias))
            if size > len(group):
                raise PartitionSizeError(
                    f"suite {suite!r}: needs {size} shards but has only {len(group)} "
                    f"registration(s) (budget {target:g}s per shard, total est {total:g}s); "
                    "a file is longer than a shard may be: split it or raise the budget"
                )
            size = max(1, size)
            unthrottled = full_parallel or all(
                r.backend in rule.unthrottled_backends for r in group
            )
            max_parallel = size if unthrottled else max(size // rule.max_parallel_divisor, 1)
        result[suite] = {"arr": list(range(size)), "max_parallel": max_parallel, "size": size}
    return result


def partitions_json(result: Mapping[str, object]) -> str:
    """One line, keys sorted, no spaces: as SGLang's compute_partitions.py prints it."""
    return json.dumps(result, separators=(",", ":"), sort_keys=True)
