"""Benchmark: jit_kernel.qknorm.fused_inplace_qknorm against torch eager, torch.compile and
FlashInfer.

Shapes (full sweep and CI values), inputs, bytes per call and peers are defined once, in
``testing/bench/qknorm.py`` (``SWEEPS["qknorm"]``); docs/benchmarks.md explains the columns.
"""

import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cuda_ci
from jit_kernel.benchmark import marker
from testing.bench.qknorm import SWEEPS

register_cuda_ci(est_time=39, suite="base-b-kernel-benchmark-1-gpu-large")

SWEEP = SWEEPS["qknorm"]


@SWEEP.declare
def benchmark(impl: str, **row) -> marker.BenchResult:
    return SWEEP.cell(impl, **row)


if __name__ == "__main__":
    benchmark.run()
