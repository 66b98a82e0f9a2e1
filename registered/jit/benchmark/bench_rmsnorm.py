"""Benchmark: jit_kernel.rmsnorm against torch eager, torch.compile and FlashInfer.

Shapes (full sweep and CI values), inputs, bytes per call and peers are defined once, in
``testing/bench/rmsnorm.py`` (``SWEEPS["rmsnorm"]``); docs/benchmarks.md explains the columns.
"""

import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cuda_ci
from jit_kernel.benchmark import marker
from testing.bench.rmsnorm import SWEEPS

register_cuda_ci(est_time=38, suite="base-b-kernel-benchmark-1-gpu-large")

SWEEP = SWEEPS["rmsnorm"]


@SWEEP.declare
def benchmark(impl: str, **row) -> marker.BenchResult:
    return SWEEP.cell(impl, **row)


if __name__ == "__main__":
    benchmark.run()
