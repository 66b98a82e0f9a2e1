"""What the norm definitions share (``rmsnorm.py``, ``fused_add_rmsnorm.py``, ``qknorm.py``):
the fp32 formula ours computes (one rounding), the check's tolerance, the inputs and the
peers' shape. Not a kernel definition itself (bench_jit_kernels skips ``_`` modules)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from testing import references
from testing.bench import peers
from testing.bench.case import Axis

EPS = 1e-6
BF16 = torch.bfloat16
# Memory-bound (rows, hidden) with rows * hidden >= 2^24: 16384..65536 rows, every launch plan.
ROW_SHAPES = [(65536, 256), (65536, 1024), (16384, 4096), (65536, 4096), (4096, 8192)]
ROW_SHAPES += [(2048, 16384)]
ROW_SPECS = [(rows, dim, BF16) for rows, dim in ROW_SHAPES] + [(16384, 4096, torch.float16)]
# The registered sweeps' implementations, and the row axes of rmsnorm's and fused_add_rmsnorm's
# (full sweep locally, decode to memory-bound sizes; CI: bf16, 16 and 16384 rows of 4096).
IMPLS = ("jit", "torch", "torch_compile", "flashinfer")
ROWS_AXES = (
    Axis("dtype", [torch.bfloat16, torch.float16], ci_vals=[torch.bfloat16]),
    Axis("hidden_size", [1024, 2048, 4096, 8192, 16384], ci_vals=[4096]),
    Axis("num_rows", [1, 16, 64, 1024, 16384, 65536], ci_vals=[16, 16384]),
)


def fp32_rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """What our kernels compute: fp32 math, one rounding."""
    return references.rmsnorm(x, weight, EPS).to(x.dtype)


def torch_rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, EPS)


def tolerance(dtype: torch.dtype) -> float:
    return 2.0**-7 if dtype == torch.bfloat16 else 2.0**-10  # one ulp of the output


def assert_close(actual: torch.Tensor, expected: torch.Tensor) -> None:
    """fp32 values of an output against the fp32 formula: one ulp, atol 2e-2 near zero."""
    rtol = tolerance(actual.dtype)
    torch.testing.assert_close(actual.float(), expected.float(), rtol=rtol, atol=2e-2)


def randn(*shape: int, dtype: torch.dtype) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype, device="cuda")


def weight(dim: int, dtype: torch.dtype) -> torch.Tensor:
    return (1.0 + 0.5 * torch.randn(dim, device="cuda")).to(dtype)


def short_dtype(dtype: torch.dtype) -> str:
    return {torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]


def size(dtype: torch.dtype) -> int:
    return torch.empty(0, dtype=dtype).element_size()


def case_peers(
    torch_fn: Callable[..., Any], fp32_fn: Callable[..., Any], flashinfer: Any, upstream_peer: Any
) -> dict[str, Any]:
    """torch eager, torch.compile of the fp32 formula, FlashInfer and upstream SGLang."""
    return {
        "torch": torch_fn,
        "torch_compile": peers.compiled(fp32_fn),
        "flashinfer": flashinfer,
        "upstream": upstream_peer,
    }
