"""Benchmark: jit_kernel.l2norm against torch eager and torch.compile (rows / their L2 norm)."""

import repo_root  # noqa: F401  (the repository root on sys.path)
import torch

from ci_runner import register_cuda_ci
from jit_kernel.benchmark import marker
from jit_kernel.benchmark.utils import create_random
from jit_kernel.l2norm import l2norm
from testing import references

register_cuda_ci(est_time=30, suite="base-b-kernel-benchmark-1-gpu-large")

# One compiled kernel per shape, as a model with fixed shapes gets; allow the full local sweep.
torch._dynamo.config.recompile_limit = 128


def fp32_l2norm(x: torch.Tensor) -> torch.Tensor:
    return references.l2norm(x).to(x.dtype)  # eager: several kernels; compiled: one


FN_MAP = {
    "jit": l2norm,
    "torch": fp32_l2norm,
    "torch_compile": torch.compile(fp32_l2norm, dynamic=False),
}


# Full sweep locally (decode to memory-bound sizes); CI: bf16, 16 and 16384 rows of 4096.
@marker.parametrize("dtype", [torch.bfloat16, torch.float16], ci_vals=[torch.bfloat16])
@marker.parametrize("row_size", [128, 1024, 4096, 16384], ci_vals=[4096])
@marker.parametrize("num_rows", [1, 16, 64, 1024, 16384], ci_vals=[16, 16384])
@marker.benchmark("impl", list(FN_MAP))
def benchmark(dtype: torch.dtype, row_size: int, num_rows: int, impl: str) -> marker.BenchResult:
    x = create_random(num_rows, row_size, dtype=dtype)
    # x is read: rotate clones of it. The GB/s column counts it and the output.
    return marker.do_bench(FN_MAP[impl], input_args=(x,), graph_clone_args=(0,))


if __name__ == "__main__":
    benchmark.run()
