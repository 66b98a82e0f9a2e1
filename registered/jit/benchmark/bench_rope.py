"""Benchmark: jit_kernel.rope.apply_rope_inplace against torch eager, torch.compile and FlashInfer.

Shapes (full sweep and CI values), inputs, bytes per call and peers are defined once, in
``testing/bench/rope.py`` (``SWEEPS["rope"]``); docs/benchmarks.md explains the columns.
"""

import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cuda_ci
from jit_kernel.benchmark import marker
from testing.bench.rope import SWEEPS

register_cuda_ci(est_time=94, suite="base-b-kernel-benchmark-1-gpu-large")

SWEEP = SWEEPS["rope"]


@SWEEP.declare
def benchmark(impl: str, **row) -> marker.BenchResult:
    return SWEEP.cell(impl, **row)


if __name__ == "__main__":
    benchmark.run()
