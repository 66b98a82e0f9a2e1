"""The measured sweep: one :class:`CellOutcome` per (row, line value), and their formatting.

Made by :mod:`.runner`, read by :mod:`.table` and :mod:`.export`; imports neither.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jit_kernel.benchmark.results import UNIT_SCALES, BenchResult


def format_value(value: Any) -> str:
    """A swept value as a table cell: ``torch.bfloat16 -> bfloat16``, ``1e-05 -> 1e-05``."""
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple | list):
        return "(" + ", ".join(format_value(v) for v in value) + ")"
    text = str(value)
    return text.removeprefix("torch.")


def case_label(params: dict[str, Any]) -> str:
    """A row's parameters as one label, ``dtype=bfloat16, size=4096``: how compare names a case."""
    return ", ".join(f"{name}={format_value(value)}" for name, value in params.items())


@dataclass(frozen=True)
class CellOutcome:
    """One cell: a result, a skip reason (N/A) or an error message."""

    result: BenchResult | None = None
    skip_reason: str | None = None
    error: str | None = None

    @property
    def status(self) -> str:
        """``"ok"``, ``"skipped"`` or ``"error"``."""
        if self.error is not None:
            return "error"
        if self.skip_reason is not None:
            return "skipped"
        return "ok"


@dataclass
class SweepReport:
    """Everything ``run()`` measured, in row-major order."""

    name: str
    where: str  # "path/relative/to/repo.py:12: benchmark"
    line_arg: str
    line_vals: tuple[Any, ...]
    axis_names: tuple[str, ...]
    unit: str
    ci_sweep: bool
    rows: list[dict[str, Any]]
    cells: list[list[CellOutcome]] = field(default_factory=list)  # [row][line value]
    show_bandwidth: bool = True
    source: str | None = None  # the benchmark file, relative to the repository root

    @property
    def unit_scale(self) -> float:
        """Multiply seconds by this to get :attr:`unit`."""
        return UNIT_SCALES[self.unit]

    def row_label(self, row_index: int, line_index: int | None = None) -> str:
        """``size=4096, impl=jit`` for footnotes."""
        parts = [case_label(self.rows[row_index])] if self.rows[row_index] else []
        if line_index is not None:
            parts.append(f"{self.line_arg}={format_value(self.line_vals[line_index])}")
        return ", ".join(parts)

    def outcomes(self) -> list[tuple[int, int, CellOutcome]]:
        """``(row index, line index, outcome)`` for every cell."""
        return [(r, c, cell) for r, row in enumerate(self.cells) for c, cell in enumerate(row)]

    @property
    def failed(self) -> int:
        """Number of cells that raised an error."""
        return sum(cell.status == "error" for _, _, cell in self.outcomes())

    def first_metric_labels(self) -> list[str]:
        """Distinct labels of the latency column's metric across measured cells."""
        labels: list[str] = []
        for _, _, cell in self.outcomes():
            if cell.result is not None and cell.result.metric_labels[0] not in labels:
                labels.append(cell.result.metric_labels[0])
        return labels

    def has_bandwidth(self) -> bool:
        """Whether the GB/s columns are printed: not disabled and some cell counted bytes."""
        return self.show_bandwidth and any(
            cell.result is not None and cell.result.bandwidth_gbps is not None
            for _, _, cell in self.outcomes()
        )
