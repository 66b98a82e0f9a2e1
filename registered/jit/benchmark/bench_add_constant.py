"""Benchmark: jit_kernel.add_constant against torch eager and torch.compile (int32 src + 16)."""

import torch

from ci_runner import register_cuda_ci
from jit_kernel.add_constant import add_constant
from jit_kernel.benchmark import marker
from jit_kernel.benchmark.utils import create_random

register_cuda_ci(est_time=24, suite="base-b-kernel-benchmark-1-gpu-large")

# The constant is a template argument of the JIT kernel: one value, one compiled module.
CONSTANT = 16  # one of the constants jit_kernel.add_constant precompiles

# One specialised kernel per size (see bench_scale.py); raise the recompilation limit.
torch._dynamo.config.recompile_limit = 128


def torch_add_constant(src: torch.Tensor) -> torch.Tensor:
    return src + CONSTANT


FN_MAP = {
    "jit": lambda src: add_constant(src, CONSTANT),
    "torch": torch_add_constant,
    "torch_compile": torch.compile(torch_add_constant, dynamic=False),
}


# Full sweep locally, including odd sizes that miss the vectorised path; CI: 4K and 1M.
@marker.parametrize(
    "size",
    [128, 1024, 1025, 4096, 4097, 65536, 2**20, 2**22, 2**24],
    ci_vals=[4096, 2**20],
)
@marker.benchmark("impl", list(FN_MAP))
def benchmark(size: int, impl: str) -> marker.BenchResult:
    src = create_random(size, dtype=torch.int32)
    return marker.do_bench(FN_MAP[impl], input_args=(src,))


if __name__ == "__main__":
    benchmark.run()
