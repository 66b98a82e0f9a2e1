"""Benchmark: jit_kernel.add3 against torch eager and torch.compile (out = a + b + c).

Shapes (full sweep and CI values), inputs, bytes per call and peers are defined once, in
``testing/bench/add3.py`` (``SWEEPS["add3"]``); docs/benchmarks.md explains the columns.
"""

import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cuda_ci
from jit_kernel.benchmark import marker
from testing.bench.add3 import SWEEPS

register_cuda_ci(est_time=30, suite="base-b-kernel-benchmark-1-gpu-large")

SWEEP = SWEEPS["add3"]


@SWEEP.declare
def benchmark(impl: str, **row) -> marker.BenchResult:
    return SWEEP.cell(impl, **row)


if __name__ == "__main__":
    benchmark.run()
