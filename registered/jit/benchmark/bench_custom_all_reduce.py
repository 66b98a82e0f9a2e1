"""Benchmark: the custom all-reduce (one-shot / two-shot / auto) against NCCL at the full GPU count.

A short sweep (bfloat16; 1, 4, 16, 64, 256 KiB, 1, 4, 8 MiB; CUDA graph and eager) over every GPU of
the runner (torch.cuda.device_count(), at most 8). The full sweep, over several world sizes and
all dtypes, is ``benchmarks/bench_all_reduce.py``; how cells are timed is in
``testing/all_reduce_harness.py``. Columns: microseconds per call (median, max over
ranks), nccl/auto (> 1: ours is faster), algorithm bandwidth (GB/s = 1e9 bytes/s).

``--json PATH`` (default ``$JIT_KERNEL_BENCH_JSON``; a directory gets
``bench_custom_all_reduce.json``) writes the cells. Without 2 GPUs or peer access between them
it prints why and exits 0 (nothing to measure); exit 1 if a cell failed its check against NCCL.
"""

import argparse
import json
import os
import sys
from pathlib import Path

import repo_root  # noqa: F401  (the repository root on sys.path)
import torch

from ci_runner import register_cuda_ci

register_cuda_ci(est_time=120, suite="nightly-kernel-8-gpu-h200", nightly=True, min_gpus=2)

SIZES = (1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 8388608)


def json_path(value: str | None) -> Path | None:
    value = value or os.environ.get("JIT_KERNEL_BENCH_JSON")
    if not value:
        return None
    path = Path(value)
    if value.endswith("/") or path.is_dir():
        return path / f"{Path(__file__).stem}.json"
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write the cells here (a directory works)")
    args = parser.parse_args()
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count < 2:
        print(f"bench_custom_all_reduce: skipped, needs at least 2 CUDA GPUs, found {count}")
        return 0

    from jit_kernel.all_reduce import MAX_WORLD_SIZE
    from jit_kernel.distributed.launch import disable_nvlink_multicast
    from testing.all_reduce_harness import BenchConfig, format_tables, run_benchmark

    disable_nvlink_multicast()
    world = min(count, MAX_WORLD_SIZE)
    config = BenchConfig(sizes=SIZES, dtypes=("bfloat16",), calls=40, repeats=10)
    rows, notes = run_benchmark([world], config, timeout=900.0)
    print(f"{Path(__file__).name}: world_size={world}, bfloat16, CUDA graph and eager")
    print(format_tables(rows))
    for note in notes:
        print(note)
    path = json_path(args.json)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"world_size": world, "notes": notes, "rows": rows}, indent=1))
        print(f"wrote {path}")
    failed = [row for row in rows if row["check"] != "ok"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
