"""Benchmark: jit_kernel.fused_add_rmsnorm against torch eager, torch.compile and FlashInfer.

In place (``residual += input; input = rmsnorm(residual) * weight``). Lines: ``jit`` (ours),
``torch`` (eager ``residual.add_`` + ``torch.nn.functional.rms_norm`` + ``copy_``),
``torch_compile`` (the fp32 formula ours computes, ``torch.compile(dynamic=False)``) and
``flashinfer`` (``flashinfer.norm.fused_add_rmsnorm``; N/A with the reason when unavailable).
Bytes per call: input, residual and weight read; input and residual written.
"""

from __future__ import annotations

import functools

import repo_root  # noqa: F401  (the repository root on sys.path)
import torch

from ci_runner import register_cuda_ci
from jit_kernel.benchmark import marker
from jit_kernel.benchmark.utils import create_random
from jit_kernel.fused_add_rmsnorm import fused_add_rmsnorm
from testing import references

register_cuda_ci(est_time=60, suite="base-b-kernel-benchmark-1-gpu-large")

torch._dynamo.config.recompile_limit = 256

EPS = 1e-6


def jit_fused_add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor) -> None:
    fused_add_rmsnorm(x, residual, weight, EPS)


def torch_fused_add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor) -> None:
    residual.add_(x)
    x.copy_(torch.nn.functional.rms_norm(residual, (x.shape[-1],), weight, EPS))


def fp32_fused_add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor) -> None:
    total, out = references.fused_add_rmsnorm(x, residual, weight, EPS)
    residual.copy_(total)
    x.copy_(out.to(x.dtype))


@functools.cache
def flashinfer_norm() -> object:
    """``flashinfer.norm``, or the reason it cannot be used (a str)."""
    try:
        import flashinfer.norm as norm  # optional peer, imported lazily
    except Exception as error:
        return f"FlashInfer is not available ({type(error).__name__}: {error})"
    return norm


def flashinfer_fused_add_rmsnorm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor
) -> None:
    flashinfer_norm().fused_add_rmsnorm(x, residual, weight, EPS)


FN_MAP = {
    "jit": jit_fused_add_rmsnorm,
    "torch": torch_fused_add_rmsnorm,
    "torch_compile": torch.compile(fp32_fused_add_rmsnorm, dynamic=False),
    "flashinfer": flashinfer_fused_add_rmsnorm,
}


def require_flashinfer(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor) -> None:
    norm = flashinfer_norm()
    if isinstance(norm, str):
        marker.skip(norm)
    try:
        flashinfer_fused_add_rmsnorm(x.clone(), residual.clone(), weight)
        torch.cuda.synchronize()
    except Exception as error:
        marker.skip(f"FlashInfer failed: {type(error).__name__}: {error}"[:200])


@marker.parametrize("dtype", [torch.bfloat16, torch.float16], ci_vals=[torch.bfloat16])
@marker.parametrize("hidden_size", [1024, 2048, 4096, 8192, 16384], ci_vals=[4096])
@marker.parametrize("num_rows", [1, 16, 64, 1024, 16384, 65536], ci_vals=[16, 16384])
@marker.benchmark("impl", list(FN_MAP))
def benchmark(dtype: torch.dtype, hidden_size: int, num_rows: int, impl: str):
    x = create_random(num_rows, hidden_size, dtype=dtype)
    residual = create_random(num_rows, hidden_size, dtype=dtype)
    weight = create_random(hidden_size, dtype=dtype)
    if impl == "flashinfer":
        require_flashinfer(x, residual, weight)
    return marker.do_bench(
        FN_MAP[impl],
        input_args=(x, residual, weight),
        graph_clone_args=(0, 1),  # both are read (and written): rotate them; not the weight
        memory_args=(x, residual, weight),
        memory_output=(x, residual),  # in place: returns None, writes both
    )


if __name__ == "__main__":
    benchmark.run()
