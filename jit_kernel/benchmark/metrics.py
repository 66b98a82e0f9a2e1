"""Latency metrics: validation, labels and their computation from timing samples (no torch)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

Metric = float | str  # a quantile in [0, 1], or "avg"
MEAN_NAMES = frozenset({"avg", "mean"})


def normalize_metrics(metrics: Iterable[object]) -> tuple[Metric, ...]:
    """Validate ``metrics`` (quantiles in [0, 1] and "avg"/"mean"); "mean" becomes "avg"."""
    if isinstance(metrics, str | bytes) or not isinstance(metrics, Iterable):
        raise ValueError(f"metrics must be a sequence such as (0.5, 'avg'), got {metrics!r}")
    result: list[Metric] = []
    for metric in metrics:
        if isinstance(metric, str) and metric in MEAN_NAMES:
            result.append("avg")
        elif (
            isinstance(metric, int | float)
            and not isinstance(metric, bool)
            and 0.0 <= metric <= 1.0
        ):
            result.append(float(metric))
        else:
            raise ValueError(
                f"metrics: {metric!r} is neither a quantile in [0, 1] nor 'avg'/'mean'"
            )
    if not result:
        raise ValueError("metrics must name at least one metric, e.g. (0.5, 'avg')")
    return tuple(result)


def metric_label(metric: Metric) -> str:
    """``0.5 -> "p50"``, ``0.999 -> "p99.9"``, ``"avg" -> "avg"``."""
    if isinstance(metric, str):
        return metric
    return f"p{metric * 100:.10g}"


def quantile(sorted_samples: Sequence[float], q: float) -> float:
    """Quantile ``q`` with linear interpolation between order statistics (numpy's default)."""
    if not sorted_samples:
        raise ValueError("cannot compute a quantile of no samples")
    position = q * (len(sorted_samples) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_samples) - 1)
    fraction = position - low
    return sorted_samples[low] + (sorted_samples[high] - sorted_samples[low]) * fraction


def compute_metrics(samples: Sequence[float], metrics: Sequence[Metric]) -> tuple[float, ...]:
    """Each metric of ``samples`` (same unit as the samples), in the order given."""
    if not samples:
        raise ValueError("cannot compute metrics of no samples")
    ordered = sorted(samples)
    values = []
    for metric in metrics:
        if metric == "avg":
            values.append(math.fsum(ordered) / len(ordered))
        else:
            values.append(quantile(ordered, float(metric)))
    return tuple(values)
