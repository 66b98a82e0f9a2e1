"""What one benchmark cell produces: a :class:`BenchResult`, or a :class:`BenchSkip`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn

from jit_kernel.benchmark.metrics import Metric, metric_label

BYTES_PER_GB = 1e9  # the GB in every "GB/s" this framework prints: SI, 10**9 bytes
BYTES_PER_GB_TEXT = "1e9"
UNIT_SCALES: dict[str, float] = {"us": 1e6, "ms": 1e3, "s": 1.0}  # seconds -> the table's unit


class BenchSkip(Exception):
    """Raised inside a benchmark function to mark its cell N/A; the message is the reason."""


def skip(reason: str) -> NoReturn:
    """Skip the current cell: it prints as ``N/A`` and ``reason`` is listed below the table."""
    raise BenchSkip(reason)


@dataclass(frozen=True)
class BenchResult:
    """Timing of one function: ``times[i]`` (seconds per call) is metric ``metrics[i]``.

    ``memory_footprint`` is the number of bytes one call moves (``None`` when not counted);
    the table's latency column is ``times[0]`` and its GB/s column
    ``memory_footprint / times[0] / 1e9``.
    """

    metrics: tuple[Metric, ...]
    times: tuple[float, ...]
    memory_footprint: int | None = None
    min_time: float | None = None  # fastest sample, seconds per call
    max_time: float | None = None  # slowest sample, seconds per call
    p25_time: float | None = None  # first quartile of the samples: the spread compare reads
    p75_time: float | None = None  # third quartile of the samples
    num_samples: int = 0
    mode: str = "unknown"  # "graph", "eager", or whatever a hand-made result says
    input_sets: int = 1  # input sets the CUDA graph cycled through
    calls_per_sample: int = 1

    def __post_init__(self) -> None:
        if not self.metrics or len(self.metrics) != len(self.times):
            raise ValueError(
                f"BenchResult needs one time per metric, got metrics={self.metrics!r} "
                f"and times={self.times!r}"
            )

    @property
    def latency(self) -> float:
        """The first metric (by default the median), in seconds per call."""
        return self.times[0]

    @property
    def metric_labels(self) -> tuple[str, ...]:
        """``("p50", "avg")`` for the default metrics."""
        return tuple(metric_label(m) for m in self.metrics)

    @property
    def bandwidth_gbps(self) -> float | None:
        """``memory_footprint`` bytes per :attr:`latency`, in GB/s (1 GB = 1e9 bytes)."""
        if not self.memory_footprint or self.latency <= 0:
            return None
        return self.memory_footprint / self.latency / BYTES_PER_GB
