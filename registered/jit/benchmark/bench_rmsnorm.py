"""Benchmark: jit_kernel.rmsnorm against torch eager, torch.compile and FlashInfer.

Lines: ``jit`` (ours), ``torch`` (``torch.nn.functional.rms_norm``, eager), ``torch_compile``
(the fp32 formula ours computes, ``torch.compile(dynamic=False)``: one specialised kernel per
shape) and ``flashinfer`` (``flashinfer.norm.rmsnorm``; N/A with the reason when FlashInfer is
not installed or fails). Bytes per call: input + weight read, the returned output written.
"""

from __future__ import annotations

import functools

import repo_root  # noqa: F401  (the repository root on sys.path)
import torch

from ci_runner import register_cuda_ci
from jit_kernel.benchmark import marker
from jit_kernel.benchmark.utils import create_random
from jit_kernel.rmsnorm import rmsnorm
from testing import references

register_cuda_ci(est_time=38, suite="base-b-kernel-benchmark-1-gpu-large")

# One compiled kernel per shape, as a model with fixed shapes gets; allow the full local sweep.
torch._dynamo.config.recompile_limit = 256

EPS = 1e-6


def jit_rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return rmsnorm(x, weight, EPS)


def torch_rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, EPS)


def fp32_rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return references.rmsnorm(x, weight, EPS).to(x.dtype)


@functools.cache
def flashinfer_norm() -> object:
    """``flashinfer.norm``, or the reason it cannot be used (a str)."""
    try:
        import flashinfer.norm as norm  # optional peer, imported lazily
    except Exception as error:  # ImportError, or a broken install raising anything
        return f"FlashInfer is not available ({type(error).__name__}: {error})"
    return norm


def flashinfer_rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return flashinfer_norm().rmsnorm(x, weight, EPS)


FN_MAP = {
    "jit": jit_rmsnorm,
    "torch": torch_rmsnorm,
    "torch_compile": torch.compile(fp32_rmsnorm, dynamic=False),
    "flashinfer": flashinfer_rmsnorm,
}


def require_flashinfer(x: torch.Tensor, weight: torch.Tensor) -> None:
    """Skip the cell (N/A with the reason) unless FlashInfer runs this shape."""
    norm = flashinfer_norm()
    if isinstance(norm, str):
        marker.skip(norm)
    try:
        flashinfer_rmsnorm(x, weight)
        torch.cuda.synchronize()
    except Exception as error:
        marker.skip(f"FlashInfer failed: {type(error).__name__}: {error}"[:200])


# Full sweep locally (decode to memory-bound sizes); CI: bf16, 16 and 16384 rows of 4096.
@marker.parametrize("dtype", [torch.bfloat16, torch.float16], ci_vals=[torch.bfloat16])
@marker.parametrize("hidden_size", [1024, 2048, 4096, 8192, 16384], ci_vals=[4096])
@marker.parametrize("num_rows", [1, 16, 64, 1024, 16384, 65536], ci_vals=[16, 16384])
@marker.benchmark("impl", list(FN_MAP))
def benchmark(dtype: torch.dtype, hidden_size: int, num_rows: int, impl: str):
    x = create_random(num_rows, hidden_size, dtype=dtype)
    weight = create_random(hidden_size, dtype=dtype)
    if impl == "flashinfer":
        require_flashinfer(x, weight)
    return marker.do_bench(
        FN_MAP[impl],
        input_args=(x, weight),
        graph_clone_args=(0,),  # rotate the input; the weight is small and stays cached
        # Defaults: memory_args="all" counts x and weight, memory_output="out" the result.
    )


if __name__ == "__main__":
    benchmark.run()
