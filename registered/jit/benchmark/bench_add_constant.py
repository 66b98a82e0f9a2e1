"""Benchmark: jit_kernel.add_constant against torch eager and torch.compile (int32 src + 16).

Shapes (full sweep and CI values), inputs, bytes per call and peers are defined once, in
``testing/bench/add_constant.py`` (``SWEEPS["add_constant"]``); docs/benchmarks.md explains the columns.
"""

import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cuda_ci
from jit_kernel.benchmark import marker
from testing.bench.add_constant import SWEEPS

register_cuda_ci(est_time=24, suite="base-b-kernel-benchmark-1-gpu-large")

SWEEP = SWEEPS["add_constant"]


@SWEEP.declare
def benchmark(impl: str, **row) -> marker.BenchResult:
    return SWEEP.cell(impl, **row)


if __name__ == "__main__":
    benchmark.run()
