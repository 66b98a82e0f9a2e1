#!/usr/bin/env python3
"""Benchmark the shard planner against plain LPT on synthetic heavy-tailed instances.

Usage::

    python -m benchmarks.runner.bench_planner [--seeds 4] [--json]

For every distribution (lognormal, Pareto, bimodal), file count (10 to 500) and shard count
(2 to 32) it plans ``--seeds`` random instances with :func:`ci_runner.plan.packing.plan` and plain
LPT, and reports makespan / lower bound (mean and worst) for both, how often the planner beat
LPT, and planning times; then the time to plan 10,000 files.
"""

from __future__ import annotations

import argparse
import heapq
import json
import random
import statistics
import sys
import time
from collections import defaultdict

from ci_runner.plan.packing import plan

DISTRIBUTIONS = ("lognormal", "pareto", "bimodal")
FILE_COUNTS = (10, 20, 50, 100, 200, 500)
SHARD_COUNTS = (2, 4, 8, 16, 32)


def draw(rng: random.Random, kind: str, n: int) -> list[tuple[str, float]]:
    """``n`` (path, est_time) pairs; est_time rounded to 0.1 s like hand-written estimates."""
    if kind == "lognormal":
        values = [rng.lognormvariate(3.0, 1.0) for _ in range(n)]
    elif kind == "pareto":
        values = [10.0 * rng.paretovariate(1.5) for _ in range(n)]
    else:  # bimodal: many short unit tests, a fifth of long end-to-end files
        values = [
            rng.uniform(300, 900) if rng.random() < 0.2 else rng.uniform(5, 30) for _ in range(n)
        ]
    return [(f"registered/t/test_{i:04d}.py", max(0.1, round(v, 1))) for i, v in enumerate(values)]


def lpt_makespan(items: list[tuple[str, float]], shard_count: int) -> float:
    """Plain LPT, independent of the planner: sort by (-est, path), least-loaded shard."""
    loads = [(0.0, k) for k in range(shard_count)]
    for _, est in sorted(items, key=lambda it: (-it[1], it[0])):
        load, k = heapq.heappop(loads)
        heapq.heappush(loads, (load + est, k))
    return max(load for load, _ in loads)


def run(seeds: int) -> dict:
    rng = random.Random(20260101)
    rows: dict[str, list[dict]] = defaultdict(list)
    for kind in DISTRIBUTIONS:
        for n in FILE_COUNTS:
            for shards in SHARD_COUNTS:
                for _ in range(seeds):
                    items = draw(rng, kind, n)
                    start = time.perf_counter()
                    result = plan(items, shards)
                    elapsed = time.perf_counter() - start
                    lpt = lpt_makespan(items, shards)
                    assert result.makespan <= lpt + 1e-9, (kind, n, shards)
                    row = {
                        "n": n,
                        "shards": shards,
                        "lpt": lpt / result.lower_bound,
                        "ours": result.ratio,
                        "seconds": elapsed,
                        "algorithm": result.algorithm,
                        "few_per_shard": n <= 3 * shards,
                    }
                    rows[kind].append(row)
                    rows["all"].append(row)
                    if row["few_per_shard"]:
                        rows["<=3 files/shard"].append(row)
    summary = {}
    for name, group in rows.items():
        summary[name] = {
            "instances": len(group),
            "lpt_mean": statistics.fmean(r["lpt"] for r in group),
            "lpt_worst": max(r["lpt"] for r in group),
            "ours_mean": statistics.fmean(r["ours"] for r in group),
            "ours_worst": max(r["ours"] for r in group),
            "improved": sum(r["ours"] < r["lpt"] - 1e-12 for r in group),
            "plan_ms_mean": 1000 * statistics.fmean(r["seconds"] for r in group),
            "plan_ms_max": 1000 * max(r["seconds"] for r in group),
        }
    big = draw(random.Random(7), "lognormal", 10_000)
    timings = {}
    for shards in (8, 32, 128):
        best = min(_timed(big, shards) for _ in range(3))
        timings[f"10000 files / {shards} shards"] = best
    return {"summary": summary, "plan_10000_files_seconds": timings}


def _timed(items: list[tuple[str, float]], shards: int) -> float:
    start = time.perf_counter()
    plan(items, shards)
    return time.perf_counter() - start


def print_markdown(result: dict) -> None:
    print(
        "| instances | count | LPT mean | LPT worst | plan() mean | plan() worst | improved "
        "| plan() ms mean / max |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    order = [*DISTRIBUTIONS, "<=3 files/shard", "all"]
    for name in order:
        s = result["summary"][name]
        print(
            f"| {name} | {s['instances']} | {s['lpt_mean']:.4f} | {s['lpt_worst']:.4f} | "
            f"{s['ours_mean']:.4f} | {s['ours_worst']:.4f} | {s['improved']} | "
            f"{s['plan_ms_mean']:.1f} / {s['plan_ms_max']:.1f} |"
        )
    print()
    for label, seconds in result["plan_10000_files_seconds"].items():
        print(f"plan {label}: {seconds * 1000:.0f} ms (best of 3)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=4, help="instances per cell (4)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be positive")
    result = run(args.seeds)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_markdown(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
