"""Machine-readable output of a sweep: JSON, and a PNG plot when matplotlib is installed."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from jit_kernel.benchmark.report import SweepReport, format_value
from jit_kernel.benchmark.results import BYTES_PER_GB

JSON_SCHEMA_VERSION = 1


class PlotUnavailableError(RuntimeError):
    """``--plot`` was asked for but matplotlib cannot be imported."""


def resolve_output_path(target: str | Path, stem: str, suffix: str) -> Path:
    """``target`` itself, or ``target/<stem><suffix>`` when it is a directory (or ends in /)."""
    path = Path(target)
    if str(target).endswith(("/", "\\")) or path.is_dir():
        return path / f"{stem}{suffix}"
    return path


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    return format_value(value)


def report_to_dict(report: SweepReport) -> dict[str, Any]:
    """The JSON document: sweep description plus one record per cell (times in seconds)."""
    cells = []
    for r, c, cell in report.outcomes():
        record: dict[str, Any] = {
            "params": {k: _jsonable(v) for k, v in report.rows[r].items()},
            report.line_arg: _jsonable(report.line_vals[c]),
            "status": cell.status,
        }
        result = cell.result
        if result is not None:
            record.update(
                latency_s=result.latency,
                latency=result.latency * report.unit_scale,
                metrics_s=dict(zip(result.metric_labels, result.times, strict=True)),
                min_s=result.min_time,
                max_s=result.max_time,
                num_samples=result.num_samples,
                mode=result.mode,
                input_sets=result.input_sets,
                calls_per_sample=result.calls_per_sample,
                memory_bytes=result.memory_footprint,
                bandwidth_gbps=result.bandwidth_gbps if report.show_bandwidth else None,
            )
        if cell.skip_reason is not None:
            record["reason"] = cell.skip_reason
        if cell.error is not None:
            record["error"] = cell.error
        cells.append(record)
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "benchmark": report.name,
        "where": report.where,
        "unit": report.unit,
        "line_arg": report.line_arg,
        "line_vals": _jsonable(list(report.line_vals)),
        "axes": list(report.axis_names),
        "ci_sweep": report.ci_sweep,
        "bytes_per_gb": BYTES_PER_GB,
        "cells": cells,
    }


def write_json(report: SweepReport, path: Path) -> Path:
    """Write :func:`report_to_dict` to ``path`` (parents created); return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report_to_dict(report), indent=2) + "\n", encoding="utf-8")
    return path


def _plot_groups(report: SweepReport) -> dict[str, list[int]]:
    """Row indices grouped by every axis but the last (the plot's x axis), in sweep order."""
    groups: dict[str, list[int]] = {}
    for index, row in enumerate(report.rows):
        key = ", ".join(f"{k}={format_value(v)}" for k, v in list(row.items())[:-1])
        groups.setdefault(key, []).append(index)
    return groups


def write_plot(report: SweepReport, path: Path) -> Path:
    """Plot latency and GB/s per line value into a PNG at ``path``.

    The x axis is the last swept parameter; every combination of the other axes is its own line
    (same color per line value, one line style per combination).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise PlotUnavailableError(
            f"cannot write the plot {path}: matplotlib is not installed "
            "(pip install matplotlib, or the project's [bench] extra)"
        ) from error
    with_bandwidth = report.has_bandwidth()
    groups = _plot_groups(report)
    x_name = report.axis_names[-1] if report.axis_names else report.line_arg
    x_labels = [format_value(report.rows[r].get(x_name, "")) for r in next(iter(groups.values()))]
    figure, axes = plt.subplots(
        2 if with_bandwidth else 1,
        1,
        figsize=(max(7.0, 0.6 * len(x_labels) + 4), 8 if with_bandwidth else 4.5),
        squeeze=False,
    )
    colors = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    styles = ["-", "--", ":", "-."]
    for c, line_val in enumerate(report.line_vals):
        for g, (group, row_indices) in enumerate(groups.items()):
            label = format_value(line_val) + (f" [{group}]" if group else "")
            style = {"color": colors[c % len(colors)], "linestyle": styles[g % len(styles)]}
            cells = [report.cells[r][c] for r in row_indices]
            latency = [
                cell.result.latency * report.unit_scale if cell.result else math.nan
                for cell in cells
            ]
            axes[0][0].plot(range(len(cells)), latency, marker="o", label=label, **style)
            if with_bandwidth:
                bandwidth = [
                    (cell.result.bandwidth_gbps if cell.result else None) or math.nan
                    for cell in cells
                ]
                axes[1][0].plot(range(len(cells)), bandwidth, marker="o", label=label, **style)
    axes[0][0].set_ylabel(f"latency ({report.unit})")
    axes[0][0].set_yscale("log")
    axes[0][0].set_title(report.name)
    if with_bandwidth:
        axes[1][0].set_ylabel("GB/s (1e9 bytes/s)")
    for (ax,) in axes:
        ax.set_xticks(range(len(x_labels)))
        ax.set_xticklabels(x_labels, rotation=30, ha="right", fontsize=8)
        ax.set_xlabel(x_name)
        ax.grid(True, alpha=0.3)
        ax.legend(title=report.line_arg, fontsize=7)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


__all__ = [
    "PlotUnavailableError",
    "report_to_dict",
    "resolve_output_path",
    "write_json",
    "write_plot",
]
