"""Shared pieces of the norm kernel tests (rmsnorm, fused_add_rmsnorm, qknorm): dtypes,
tolerances, the row sizes around every launch plan, and input makers.

Tolerance: the kernels compute in fp32 and round once; their fp32 value differs from a float32
torch reference only by summation order and rsqrtf (about 1e-6 relative), so rtol = 1 ulp of the
dtype (2^-7 bfloat16, 2^-10 float16) covers it with margin; atol = 1e-5 only matters for values
near zero (float16 subnormals).
"""

from __future__ import annotations

import torch

from jit_kernel.env import get_ci_test_range

DTYPES = [torch.bfloat16, torch.float16]
RTOL = {torch.bfloat16: 2.0**-7, torch.float16: 2.0**-10}
ATOL = 1e-5
EPS = 1e-6
# Around every plan boundary (packs of 8 elements: <= 8, 16, 32, 64, 128 packs; CTA beyond).
FULL_DIMS = [8, 16, 24, 40, 64, 72, 128, 136, 256, 264, 512, 520, 1024, 1032, 1536, 2048]
FULL_DIMS += [2056, 2304, 3072, 4096, 5120, 7168, 8192, 8200, 12288, 16376, 16384]
CI_DIMS = [8, 64, 128, 256, 520, 1024, 1032, 4096, 5120, 16384]
DIMS = get_ci_test_range(FULL_DIMS, CI_DIMS)
NUM_ROWS = get_ci_test_range([1, 2, 3, 7, 33, 129, 1000, 4097], [1, 7, 129, 1025])


def randn(*shape: int, dtype: torch.dtype) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype, device="cuda")


def weight_for(dim: int, dtype: torch.dtype) -> torch.Tensor:
    """Around 1 like trained norm weights, never all ones (a dropped weight would show)."""
    return (1.0 + 0.5 * torch.randn(dim, device="cuda")).to(dtype)
