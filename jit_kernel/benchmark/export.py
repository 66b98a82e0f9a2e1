"""Machine-readable output of a sweep: the JSON document (schema in docs/benchmarks.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jit_kernel.benchmark.report import SweepReport, format_value
from jit_kernel.benchmark.results import BYTES_PER_GB

JSON_ENV = "JIT_KERNEL_BENCH_JSON"  # default of a benchmark file's --json
PLOT_ENV = "JIT_KERNEL_BENCH_PLOT"  # default of its --plot
JSON_SCHEMA_VERSION = 2  # 2: environment block, source relative to the repository, quartiles


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


def report_to_dict(report: SweepReport, environment: dict[str, Any]) -> dict[str, Any]:
    """The JSON document: environment, sweep description, one record per cell (seconds)."""
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
                p25_s=result.p25_time,
                p75_s=result.p75_time,
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
        "source": report.source,
        "where": report.where,
        "environment": environment,
        "unit": report.unit,
        "line_arg": report.line_arg,
        "line_vals": _jsonable(list(report.line_vals)),
        "axes": list(report.axis_names),
        "ci_sweep": report.ci_sweep,
        "bytes_per_gb": BYTES_PER_GB,
        "cells": cells,
    }


def write_json(document: dict[str, Any], path: Path) -> Path:
    """Write a :func:`report_to_dict` document to ``path`` (parents created); return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return path


__all__ = [
    "JSON_ENV",
    "JSON_SCHEMA_VERSION",
    "PLOT_ENV",
    "report_to_dict",
    "resolve_output_path",
    "write_json",
]
