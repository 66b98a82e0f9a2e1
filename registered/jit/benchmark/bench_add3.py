"""Benchmark: jit_kernel.add3 against torch eager and torch.compile (out = a + b + c)."""

import torch

from ci_runner import register_cuda_ci
from jit_kernel.add3 import add3
from jit_kernel.benchmark import marker
from jit_kernel.benchmark.utils import create_random

register_cuda_ci(est_time=30, suite="base-b-kernel-benchmark-1-gpu-large")

# dynamic=False compiles one kernel per size, as a model with fixed shapes would get; allow
# enough recompilations for the full local sweep (torch's default limit is 8).
torch._dynamo.config.recompile_limit = 128


def torch_add3(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    return a + b + c  # eager: two kernels; torch.compile fuses them into one


FN_MAP = {
    "jit": add3,
    "torch": torch_add3,
    "torch_compile": torch.compile(torch_add3, dynamic=False),
}


# Full sweep locally (3 dtypes x 1K..16M elements); CI: bf16 at 4K, 64K and 4M elements.
@marker.parametrize(
    "dtype", [torch.bfloat16, torch.float16, torch.float32], ci_vals=[torch.bfloat16]
)
@marker.parametrize("size", [2**n for n in range(10, 25, 2)], ci_vals=[2**12, 2**16, 2**22])
@marker.benchmark("impl", list(FN_MAP))
def benchmark(dtype: torch.dtype, size: int, impl: str) -> marker.BenchResult:
    a, b, c = (create_random(size, dtype=dtype) for _ in range(3))
    # a, b and c are read: rotate clones of them. The GB/s column counts them and the output.
    return marker.do_bench(FN_MAP[impl], input_args=(a, b, c), graph_clone_args=(0, 1, 2))


if __name__ == "__main__":
    benchmark.run()
