#!/usr/bin/env python3
"""Custom all-reduce (one-shot / two-shot / auto) against NCCL, per world size, dtype and size.

    python -m benchmarks.bench_all_reduce --world-sizes 2                    # gpu-only
    python -m benchmarks.bench_all_reduce --world-sizes 2 4 8 --json out.json
    python -m benchmarks.bench_all_reduce --world-sizes 2 --dtypes bfloat16 --modes graph \\
        --min-bytes 1024 --max-bytes 8388608 --one-shot-max-bytes 2097152

For each world size (skipped with the reason when there are fewer GPUs, or no peer access), one
set of ranks times every (dtype, message size, implementation, mode): ``graph`` = ``--calls``
calls captured in one CUDA graph and replayed, ``eager`` = launched one by one (host cost
included); the median time per call over ``--repeats`` repetitions, maximum over ranks
(:mod:`testing.all_reduce_harness` says how the ranks are aligned). The tables show
microseconds per call, the ratio nccl/auto (> 1: ours is faster) and the algorithm bandwidth
(message bytes / time, GB/s = 1e9 bytes/s). ``--json`` writes every cell plus the machine's
peer-access report. Exit status 1 when a correctness check against NCCL failed or nothing ran.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from testing.all_reduce_harness import (
    DTYPES,
    IMPLS,
    MODES,
    BenchConfig,
    config_as_dict,
    default_sizes,
    format_tables,
    run_benchmark,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world-sizes", type=int, nargs="+", default=[2])
    parser.add_argument("--dtypes", nargs="+", choices=list(DTYPES), default=list(DTYPES))
    parser.add_argument("--min-bytes", type=int, default=1024)
    parser.add_argument("--max-bytes", type=int, default=8 * 1024 * 1024)
    parser.add_argument("--impls", nargs="+", choices=IMPLS, default=list(IMPLS))
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--calls", type=int, default=50, help="calls per timed repetition")
    parser.add_argument("--repeats", type=int, default=15, help="timed repetitions per cell")
    parser.add_argument("--one-shot-max-bytes", type=int, help="the auto threshold to use")
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds per world size")
    parser.add_argument("--json", type=Path, help="write the cells here")
    args = parser.parse_args()

    from jit_kernel.distributed.launch import disable_nvlink_multicast
    from jit_kernel.distributed.topology import describe_topology

    disable_nvlink_multicast()  # this process and the ranks it spawns

    config = BenchConfig(
        sizes=default_sizes(args.min_bytes, args.max_bytes),
        dtypes=tuple(args.dtypes),
        impls=tuple(args.impls),
        modes=tuple(args.modes),
        calls=args.calls,
        repeats=args.repeats,
        one_shot_max_bytes=args.one_shot_max_bytes,
    )
    topology = describe_topology()
    print(topology, flush=True)
    rows, notes = run_benchmark(args.world_sizes, config, timeout=args.timeout)
    print(format_tables(rows), flush=True)
    for note in notes:
        print(note, flush=True)
    failed = [row for row in rows if row["check"] != "ok"]
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        document = {
            "config": config_as_dict(config),
            "world_sizes": args.world_sizes,
            "topology": topology,
            "notes": notes,
            "rows": rows,
        }
        args.json.write_text(json.dumps(document, indent=1, default=str))
        print(f"wrote {args.json}", flush=True)
    if failed:
        print(f"{len(failed)} cell(s) failed the correctness check against NCCL", flush=True)
    return 1 if failed or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
