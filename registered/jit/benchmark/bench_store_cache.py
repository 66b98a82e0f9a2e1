"""Benchmark: jit_kernel.store_cache against torch eager and torch.compile.

Shapes (full sweep and CI values), inputs, bytes per call and peers are defined once, in
``testing/bench/store_cache.py`` (``SWEEPS["store_cache"]``); docs/benchmarks.md explains the columns.
"""

import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cuda_ci
from jit_kernel.benchmark import marker
from testing.bench.store_cache import SWEEPS

register_cuda_ci(est_time=33, suite="base-b-kernel-benchmark-1-gpu-large")

SWEEP = SWEEPS["store_cache"]


@SWEEP.declare
def benchmark(impl: str, **row) -> marker.BenchResult:
    return SWEEP.cell(impl, **row)


if __name__ == "__main__":
    benchmark.run()
