"""The text table ``run()`` prints: ``=`` rule, header, ``-`` rule, rows, ``=`` rule, notes."""

from __future__ import annotations

from jit_kernel.benchmark.report import CellOutcome, SweepReport, format_value
from jit_kernel.benchmark.results import BYTES_PER_GB_TEXT

NOT_AVAILABLE = "N/A"
FAILED = "ERROR"
NO_VALUE = "-"
GROUP_SEPARATOR = " | "
MIN_AXIS_WIDTH = 8
MIN_VALUE_WIDTH = 12


def format_latency(value: float) -> str:
    """Four decimals below 10000, one above: ``3.1416``, ``123456.7``."""
    return f"{value:.4f}" if abs(value) < 1e4 else f"{value:.1f}"


def _latency_cell(cell: CellOutcome, scale: float) -> str:
    if cell.status == "error":
        return FAILED
    if cell.result is None:
        return NOT_AVAILABLE
    return format_latency(cell.result.latency * scale)


def _bandwidth_cell(cell: CellOutcome) -> str:
    if cell.status == "error":
        return FAILED
    if cell.result is None:
        return NOT_AVAILABLE
    bandwidth = cell.result.bandwidth_gbps
    return NO_VALUE if bandwidth is None else f"{bandwidth:.2f}"


def header_line(report: SweepReport) -> str:
    """The line above the table: what is measured and in which units."""
    labels = report.first_metric_labels() or ["p50"]
    sweep = "CI sweep (ci_vals)" if report.ci_sweep else "full sweep"
    parts = [
        f"{report.name} [{sweep}]",
        f"latency = {'/'.join(labels)} per call in {report.unit}",
    ]
    if report.has_bandwidth():
        parts.append(f"GB/s = {BYTES_PER_GB_TEXT} bytes/s")
    return "; ".join(parts)


def render_table(report: SweepReport) -> str:
    """The full printout: header line, table and the N/A / ERROR notes."""
    line_names = [format_value(v) for v in report.line_vals]
    groups: list[list[tuple[str, list[str], int]]] = []  # group -> (header, cells, min width)
    groups.append(
        [
            (name, [format_value(row[name]) for row in report.rows], MIN_AXIS_WIDTH)
            for name in report.axis_names
        ]
    )
    groups.append(
        [
            (
                f"{name}({report.unit})",
                [_latency_cell(cells[i], report.unit_scale) for cells in report.cells],
                MIN_VALUE_WIDTH,
            )
            for i, name in enumerate(line_names)
        ]
    )
    if report.has_bandwidth():
        groups.append(
            [
                (
                    f"{name}(GB/s)",
                    [_bandwidth_cell(cells[i]) for cells in report.cells],
                    MIN_VALUE_WIDTH,
                )
                for i, name in enumerate(line_names)
            ]
        )
    groups = [group for group in groups if group]

    def render(pick: int | None) -> str:
        rendered = []
        for group in groups:
            columns = []
            for header, cells, minimum in group:
                width = max(minimum, len(header), *(len(c) for c in cells))
                text = header if pick is None else cells[pick]
                columns.append(text.rjust(width))
            rendered.append("  ".join(columns))
        return GROUP_SEPARATOR.join(rendered)

    header = render(None)
    lines = [header_line(report), "=" * len(header), header, "-" * len(header)]
    lines += [render(r) for r in range(len(report.rows))]
    lines.append("=" * len(header))
    lines += notes(report)
    return "\n".join(lines)


def notes(report: SweepReport) -> list[str]:
    """``N/A [row, impl]: reason`` and ``ERROR [row, impl]: message`` lines."""
    lines = []
    for r, c, cell in report.outcomes():
        if cell.status == "skipped":
            lines.append(f"{NOT_AVAILABLE} [{report.row_label(r, c)}]: {cell.skip_reason}")
        elif cell.status == "error":
            lines.append(f"{FAILED} [{report.row_label(r, c)}]: {cell.error}")
    return lines
