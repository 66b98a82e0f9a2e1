"""``[tool.ci-runner.partitions]``: how a repository sizes its workflows' shard matrices.

The rule is SGLang's ``scripts/ci/utils/compute_partitions.py`` as data (``init`` drafts the
values from that script; ``run_suite.py partitions`` applies them,
:mod:`ci_runner.plan.partition_sizes`):

* the suites of a workflow are its jobs that call one of ``stage-workflows``, each named by its
  ``with:`` input ``suite-input`` (default: the job id) with the job budget in minutes in the
  input ``budget-input``; ``pinned`` suites are always sized, at their pinned count;
* a suite counts the enabled, per-commit registrations of ``backends``;
* size = ceil(coeff x total est / (budget-fraction x minutes x 60 - bias)) (coeff, bias from the
  model file's fit, else 1 and 0); a size above the number of registrations is an error;
* max_parallel = max(size // max-parallel-divisor, 1), or size when every registration is on an
  ``unthrottled-backends`` backend, with ``--full-parallel``, or for a pinned suite.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ci_runner.catalog.keys import unknown_keys_message
from ci_runner.catalog.limits import number_text

KEY = "partitions"


class PartitionRuleError(ValueError):
    """A bad key or value of the partitions table; the message names it."""


@dataclass(frozen=True)
class PartitionRule:
    backends: tuple[str, ...]
    stage_workflows: tuple[str, ...]
    budget_input: str
    suite_input: str | None = None
    budget_fraction: float = 0.75
    pinned: dict[str, int] = field(default_factory=dict)
    max_parallel_divisor: int = 3
    unthrottled_backends: tuple[str, ...] = ()


KEYS = (  # every key, in the order init writes them
    "backends",
    "stage-workflows",
    "suite-input",
    "budget-input",
    "budget-fraction",
    "pinned",
    "max-parallel-divisor",
    "unthrottled-backends",
)


def parse_partition_rule(table: dict, where: str) -> PartitionRule | None:
    """The ``partitions`` table of the catalog (None when absent)."""
    raw = table.get(KEY)
    if raw is None:
        return None
    where = f"{where} {KEY}"
    if not isinstance(raw, dict):
        raise PartitionRuleError(f"{where}: must be a table")
    if message := unknown_keys_message(raw, KEYS, where):
        raise PartitionRuleError(message)
    for key in ("backends", "stage-workflows", "budget-input"):
        if key not in raw:
            raise PartitionRuleError(f"{where}: missing required key {key!r}")
    fraction = raw.get("budget-fraction", 0.75)
    if isinstance(fraction, bool) or not isinstance(fraction, int | float) or not 0 < fraction <= 1:
        raise PartitionRuleError(
            f"{where}: budget-fraction must be a number in (0, 1], got {number_text(fraction)}"
        )
    divisor = raw.get("max-parallel-divisor", 3)
    if isinstance(divisor, bool) or not isinstance(divisor, int) or divisor < 1:
        raise PartitionRuleError(
            f"{where}: max-parallel-divisor must be a positive integer, got {number_text(divisor)}"
        )
    pinned = raw.get("pinned", {})
    if not isinstance(pinned, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in pinned.values()
    ):
        raise PartitionRuleError(
            f"{where}: pinned must be a table of suite = shard count (a positive integer), "
            f"got {pinned!r}"
        )
    suite_input = raw.get("suite-input")
    if suite_input is not None and not isinstance(suite_input, str):
        raise PartitionRuleError(f"{where}: suite-input must be a string, got {suite_input!r}")
    return PartitionRule(
        backends=_strings(raw, "backends", where),
        stage_workflows=_strings(raw, "stage-workflows", where),
        budget_input=_string(raw, "budget-input", where),
        suite_input=suite_input,
        budget_fraction=float(fraction),
        pinned=dict(pinned),
        max_parallel_divisor=divisor,
        unthrottled_backends=_strings(raw, "unthrottled-backends", where, required=False),
    )


def _string(raw: dict, key: str, where: str) -> str:
    value = raw[key]
    if not isinstance(value, str) or not value:
        raise PartitionRuleError(f"{where}: {key} must be a non-empty string, got {value!r}")
    return value


def _strings(raw: dict, key: str, where: str, required: bool = True) -> tuple[str, ...]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise PartitionRuleError(f"{where}: {key} must be a list of strings, got {value!r}")
    if required and not value:
        raise PartitionRuleError(f"{where}: {key} must name at least one entry")
    return tuple(value)
