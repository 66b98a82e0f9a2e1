"""fp32 torch references of the kernels, used by the tests, the benchmarks and the tuner.

Each computes in float32 from the inputs as given (fp16/bf16 values widened exactly) and returns
fp32 results, unrounded unless said otherwise; compare with the tolerances below. Shapes follow
the kernels: rows [N, D], heads [T, H, D], gated inputs [..., 2 d].
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

EPS = 1e-6

#: Norms compute in fp32 and round once: their fp32 value differs from these references only by
#: summation order and rsqrtf (about 1e-6 relative), so 1 ulp of the dtype covers it; atol only
#: matters near zero (float16 subnormals).
NORM_RTOL = {torch.bfloat16: 2.0**-7, torch.float16: 2.0**-10}
NORM_ATOL = 1e-5
#: Elementwise kernels (activations, rope) against a reference rounded to the dtype.
ROUNDED_TOL = {
    torch.float16: {"rtol": 2e-3, "atol": 1e-5},
    torch.bfloat16: {"rtol": 1e-2, "atol": 1e-5},
    torch.float32: {"rtol": 1e-5, "atol": 1e-5},
}


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """``(x * rsqrt(mean(x^2) + eps)) * weight`` over the last dim, fp32, not rounded."""
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (xf * rstd) * weight.float()


def l2norm(x: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """``x * rsqrt(sum(x^2) + eps)`` over the last dim, fp32, not rounded."""
    xf = x.float()
    return xf * torch.rsqrt(xf.pow(2).sum(dim=-1, keepdim=True) + eps)


def fused_add_rmsnorm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = EPS
) -> tuple[torch.Tensor, torch.Tensor]:
    """(new residual ``round(x + residual)`` in the dtype, rmsnorm of it in fp32)."""
    new_residual = (x.float() + residual.float()).to(x.dtype)
    return new_residual, rmsnorm(new_residual, weight, eps)


def qknorm(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor,
    k_weight: torch.Tensor,
    eps: float = EPS,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-head rmsnorm of q [T, Hq, D] and k [T, Hk, D], fp32."""
    return rmsnorm(q, q_weight, eps), rmsnorm(k, k_weight, eps)


def make_cos_sin_cache(
    max_position: int, rope_dim: int, base: float = 10000.0, device: str = "cuda"
) -> torch.Tensor:
    """float32 [max_position, rope_dim]: cos of the rope_dim / 2 angles, then their sin."""
    exponent = torch.arange(0, rope_dim, 2, dtype=torch.float64) / rope_dim
    inv_freq = 1.0 / (base**exponent)
    angles = torch.outer(torch.arange(max_position, dtype=torch.float64), inv_freq)
    return torch.cat([angles.cos(), angles.sin()], dim=-1).float().to(device)


def rope(
    x: torch.Tensor, cache: torch.Tensor, positions: torch.Tensor, is_neox: bool
) -> torch.Tensor:
    """Rotated copy of x [T, H, D] in fp32: the first rope_dim elements of every head, NeoX
    (halves) or GPT-J (interleaved pairs); tokens with out-of-range positions unchanged."""
    rope_dim = cache.shape[1]
    half = rope_dim // 2
    xf = x.float()
    pos = positions.to(torch.int64)
    valid = (pos >= 0) & (pos < cache.shape[0])
    rows = cache[pos.clamp(0, cache.shape[0] - 1)]
    cos = rows[:, :half].unsqueeze(1)
    sin = rows[:, half:].unsqueeze(1)
    out = xf.clone()
    if is_neox:
        x1, x2 = xf[..., :half], xf[..., half:rope_dim]
        out[..., :half] = x1 * cos - x2 * sin
        out[..., half:rope_dim] = x2 * cos + x1 * sin
    else:
        x1, x2 = xf[..., 0:rope_dim:2], xf[..., 1:rope_dim:2]
        out[..., 0:rope_dim:2] = x1 * cos - x2 * sin
        out[..., 1:rope_dim:2] = x2 * cos + x1 * sin
    out[~valid] = xf[~valid]
    return out


def rope_inplace(
    q: torch.Tensor, k: torch.Tensor, cache: torch.Tensor, positions: torch.Tensor, is_neox: bool
) -> None:
    """q and k rotated in place, in fp32 and rounded once; every position in range. The torch
    peer of the benchmarks (no masking, no host sync, so CUDA graphs and torch.compile take it)."""
    half = cache.shape[1] // 2
    rows = cache[positions]
    cos, sin = rows[:, None, :half], rows[:, None, half:]
    for x in (q, k):
        xf = x[..., : 2 * half].float()
        if is_neox:
            x1, x2 = xf.chunk(2, dim=-1)
            rotated = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
        else:
            x1, x2 = xf[..., 0::2], xf[..., 1::2]
            rotated = torch.stack([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).flatten(-2)
        x[..., : 2 * half] = rotated.to(x.dtype)


#: The gate functions of the gated activations, by kernel name.
ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "silu_and_mul": F.silu,
    "gelu_and_mul": lambda x: F.gelu(x, approximate="none"),
    "gelu_tanh_and_mul": lambda x: F.gelu(x, approximate="tanh"),
}


def act_and_mul(op: str, x: torch.Tensor) -> torch.Tensor:
    """``act(x[..., :d]) * x[..., d:]`` in fp32 for the kernel ``op`` (e.g. "silu_and_mul")."""
    d = x.shape[-1] // 2
    xf = x.float()
    return ACTIVATIONS[op](xf[..., :d]) * xf[..., d:]
