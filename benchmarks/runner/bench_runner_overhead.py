#!/usr/bin/env python3
"""Measure the executor's own cost: per-file overhead, and the GPU slot scheduler's packing.

1. Overhead: N trivial files run sequentially with the JUnit and timings reports on. Overhead
   per file = (shard wall - sum of the files' own elapsed times) / N. Target: under 50 ms.
   Beside it, the CPU time per file of the runner's own process and of the files' processes
   (``getrusage``): on a shared, loaded machine the wall figures move with the load, these less.
2. Slots: sleeping files on 4 fake GPUs (``--gpu-ids 0,1,2,3``). Wall time against the ideal
   ``max(longest, total / 4)`` computed from the files' own elapsed times. Target: within 10%.

Usage: ``python -m benchmarks.runner.bench_runner_overhead [--files 40]``. Needs no GPU.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

from ci_runner.cli.arguments import add_execution_arguments, shard_options
from ci_runner.execution import execute_shard
from ci_runner.model import FileToRun, ShardContext
from ci_runner.reports import ShardReports

SLEEPS = [3.0, 2.5, 2.0, 2.0, 1.5, 1.5, 1.2, 1.0, 1.0, 0.8, 0.5, 0.5, 0.5, 0.4, 0.3, 0.3]


def _context(root: Path) -> ShardContext:
    return ShardContext(
        root=root, hw="cuda", suites=("bench",), nightly=False, shard_id=0, shard_count=1,
        predicted_makespan=0, shard_est_total=0, lower_bound=0, plan_hash="bench",
    )  # fmt: skip


def _run(root: Path, files: list[FileToRun], argv: list[str]) -> tuple[float, list[dict]]:
    parser = argparse.ArgumentParser()
    add_execution_arguments(parser)
    timings = root / "timings.jsonl"
    args = parser.parse_args(
        [*argv, "--timings-out", str(timings), "--junit-xml", str(root / "j.xml")]
    )
    execution, reports = shard_options(parser, args)
    with contextlib.redirect_stdout(io.StringIO()):
        start = time.perf_counter()
        code = execute_shard(files, _context(root), execution, ShardReports(reports))
        wall = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"benchmark shard failed with exit code {code}")
    return wall, [json.loads(line) for line in timings.read_text().splitlines()]


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def overhead(count: int) -> tuple[float, float, float, float, float]:
    """(wall, files' own time, overhead per file, runner CPU per file, files' CPU per file)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = []
        for i in range(count):
            (root / f"test_noop_{i}.py").write_text("import sys\nsys.exit(0)\n")
            files.append(FileToRun(f"test_noop_{i}.py", "bench", 1.0, gpus=0))
        runner, children = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
        wall, records = _run(root, files, [])
        runner = (_cpu(resource.RUSAGE_SELF) - runner) / count
        children = (_cpu(resource.RUSAGE_CHILDREN) - children) / count
        own = sum(r["elapsed"] for r in records)
        return wall, own, (wall - own) / count, runner, children


def slots() -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = []
        for i, seconds in enumerate(SLEEPS):
            (root / f"test_sleep_{i}.py").write_text(f"import time\ntime.sleep({seconds})\n")
            files.append(FileToRun(f"test_sleep_{i}.py", "bench", seconds, gpus=1))
        wall, records = _run(root, files, ["--gpu-ids", "0,1,2,3"])
        own = [r["elapsed"] for r in records]
        ideal = max(max(own), sum(own) / 4)
        return wall, ideal, max([*SLEEPS, sum(SLEEPS) / 4])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=40, help="trivial files for the overhead run")
    count = parser.parse_args().files
    wall, own, per_file, runner_cpu, file_cpu = overhead(count)
    s_wall, s_ideal, s_sleep_ideal = slots()
    rows = [
        ("measure", "value", "target", "ok"),
        (
            f"overhead per file ({count} files)",
            f"{per_file * 1000:.1f} ms (wall {wall:.2f}s, files {own:.2f}s)",
            "< 50 ms",
            "yes" if per_file < 0.05 else "NO",
        ),
        ("runner CPU per file (its process, all threads)", f"{runner_cpu * 1000:.1f} ms", "", ""),
        ("file CPU per file (a trivial Python file)", f"{file_cpu * 1000:.1f} ms", "", ""),
        (
            f"4 fake GPUs, {len(SLEEPS)} sleeping files",
            f"wall {s_wall:.2f}s / ideal {s_ideal:.2f}s = {s_wall / s_ideal:.3f} "
            f"(sleep-only ideal {s_sleep_ideal:.2f}s)",
            "<= 1.10",
            "yes" if s_wall / s_ideal <= 1.10 else "NO",
        ),
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
