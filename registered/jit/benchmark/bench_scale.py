"""Benchmark: jit_kernel.scale against torch eager and torch.compile (out = src * factor)."""

import torch

from ci_runner import register_cuda_ci
from jit_kernel.benchmark import marker
from jit_kernel.benchmark.utils import create_random
from jit_kernel.scale import scale as jit_scale

register_cuda_ci(est_time=26, suite="base-b-kernel-benchmark-1-gpu-large")

# dynamic=False compiles one specialised kernel per size, as a model with fixed shapes would
# get; allow enough recompilations for the full local sweep (the default limit is 8).
torch._dynamo.config.recompile_limit = 128


def torch_scale(src: torch.Tensor, factor: float) -> torch.Tensor:
    return src * factor


FN_MAP = {
    "jit": jit_scale,
    "torch": torch_scale,
    "torch_compile": torch.compile(torch_scale, dynamic=False),
}


# Full sweep locally (3 dtypes x 1K..16M elements); CI: bf16 at 4K, 64K and 4M elements.
@marker.parametrize(
    "dtype", [torch.bfloat16, torch.float16, torch.float32], ci_vals=[torch.bfloat16]
)
@marker.parametrize("size", [2**n for n in range(10, 25, 2)], ci_vals=[2**12, 2**16, 2**22])
@marker.benchmark("impl", list(FN_MAP))
def benchmark(dtype: torch.dtype, size: int, impl: str) -> marker.BenchResult:
    src = create_random(size, dtype=dtype)
    return marker.do_bench(
        FN_MAP[impl],
        input_args=(src, 2.0),
        # src is read: rotate clones of it; the factor is a scalar and is shared.
        graph_clone_args=(0,),
        # Defaults: memory_args="all" counts src, memory_output="out" the returned tensor.
    )


if __name__ == "__main__":
    benchmark.run()
