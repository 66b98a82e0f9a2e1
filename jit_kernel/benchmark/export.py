"""Machine-readable output of a sweep: JSON, and a PNG plot when matplotlib is installed."""

from __future__ import annotations

import json
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


def write_plot(report: SweepReport, path: Path) -> Path:
    """Plot latency and GB/s per line value across the rows into a PNG at ``path``."""
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
    figure, axes = plt.subplots(
        2 if with_bandwidth else 1,
        1,
        figsize=(max(6.0, 0.5 * len(report.rows) + 3), 7),
        squeeze=False,
    )
    positions = list(range(len(report.rows)))
    labels = [report.row_label(r) for r in positions]
    for c, line_val in enumerate(report.line_vals):
        name = format_value(line_val)
        latency = [
            row[c].result.latency * report.unit_scale if row[c].result else float("nan")
            for row in report.cells
        ]
        axes[0][0].plot(positions, latency, marker="o", label=name)
        if with_bandwidth:
            bandwidth = [
                (row[c].result.bandwidth_gbps if row[c].result else None) or float("nan")
                for row in report.cells
            ]
            axes[1][0].plot(positions, bandwidth, marker="o", label=name)
    axes[0][0].set_ylabel(f"latency ({report.unit})")
    axes[0][0].set_yscale("log")
    axes[0][0].set_title(report.name)
    if with_bandwidth:
        axes[1][0].set_ylabel("GB/s (1e9 bytes/s)")
    for (ax,) in axes:
        ax.set_xticks(positions)
        ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=7)
        ax.grid(True, alpha=0.3)
        ax.legend(title=report.line_arg)
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
