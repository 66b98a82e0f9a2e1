"""Stored benchmark results made up for the compare and plot tests: schema 2 (or 1) documents
with chosen latencies and spreads, written as the runner would write them."""

from __future__ import annotations

import json
from pathlib import Path

H100 = "NVIDIA H100 80GB HBM3"
CASES = [(4096, "jit"), (4096, "torch"), (65536, "jit"), (65536, "torch")]


def document(latency=None, spread=0.005, version=2, gpu=H100, benchmark="bench_x.py::benchmark"):
    """A stored result: ``latency[(size, impl)] = seconds``, quartiles +-spread around it."""
    latency = latency or {case: case[0] * 1e-9 for case in CASES}
    cells = []
    for (size, impl), seconds in latency.items():
        cell = {"params": {"size": size}, "impl": impl, "status": "ok"}
        if seconds is None:
            cell.update(status="skipped", reason="not supported")
        elif seconds == "error":
            cell.update(status="error", error="RuntimeError: no GPU")
        else:
            cell.update(
                latency_s=seconds,
                latency=seconds * 1e6,
                metrics_s={"p50": seconds, "avg": seconds},
                min_s=seconds * (1 - 3 * spread),
                max_s=seconds * (1 + 3 * spread),
                num_samples=20,
                bandwidth_gbps=4 * size / seconds / 1e9,
            )
            if version > 1:
                cell.update(p25_s=seconds * (1 - spread), p75_s=seconds * (1 + spread))
        cells.append(cell)
    data = {
        "schema_version": version,
        "benchmark": benchmark,
        "where": f"/abs/{benchmark}",
        "unit": "us",
        "line_arg": "impl",
        "line_vals": ["jit", "torch"],
        "axes": ["size"],
        "ci_sweep": True,
        "bytes_per_gb": 1e9,
        "cells": cells,
    }
    if version > 1:
        data["source"] = "registered/jit/benchmark/bench_x.py"
        data["environment"] = {"gpu": gpu, "torch": "2.13.0", "jit_kernel_commit": "ab" * 20}
    return data


def write(path: Path, data) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def slower(factor: float, only=None) -> dict:
    return {case: case[0] * 1e-9 * (factor if only in (None, case) else 1.0) for case in CASES}
