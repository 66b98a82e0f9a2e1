"""``fused_add_rmsnorm(input, residual, weight, eps=1e-6)``: residual add + RMSNorm, in place.

``residual += input`` then ``input = rmsnorm(residual) * weight`` (the usual pre-norm step of a
transformer layer) for float16 and bfloat16 in one pass: each row of both tensors is read once
and written once. One module holds both dtypes and every row size (dispatched in C++).
"""

from __future__ import annotations

import torch

from jit_kernel.wrapper import bind_export, jit_module, raise_argument_error

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16)
#: The largest hidden size (row length); it must also be a multiple of 8 (16-byte packs).
MAX_HIDDEN_SIZE = 16384


_jit_fused_add_rmsnorm_module = jit_module(
    "fused_add_rmsnorm",
    "elementwise/fused_add_rmsnorm.cuh",
    {"fused_add_rmsnorm": "fused_add_rmsnorm_by_dtype"},
)
_fused_add_rmsnorm = bind_export(
    globals(), _jit_fused_add_rmsnorm_module, "fused_add_rmsnorm", tensor_arg=(0, "input")
)


def can_use_fused_add_rmsnorm(hidden_size: int, dtype: torch.dtype) -> bool:
    """True when ``fused_add_rmsnorm`` supports rows of ``hidden_size`` elements of ``dtype``.

    float16/bfloat16 and a hidden size that is a multiple of 8 in [8, 16384]. Needs no GPU and
    compiles nothing; never raises. (Pointers and row strides must also be 16-byte aligned.)
    """
    return (
        dtype in SUPPORTED_DTYPES
        and type(hidden_size) is int
        and 8 <= hidden_size <= MAX_HIDDEN_SIZE
        and hidden_size % 8 == 0
    )


def fused_add_rmsnorm(
    input: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
) -> None:
    """In place: ``residual += input``; then ``input = rmsnorm(residual) * weight``. Returns None.

    Per element, in fp32: ``r = round(input + residual)`` is stored to ``residual``; the row's
    ``rstd = rsqrt(mean(r ** 2) + eps)`` is computed from those rounded values (exactly what the
    updated ``residual`` holds), and ``round((r * rstd) * weight)`` is stored to ``input``.

    ``input``, ``residual``: ``[N, D]`` CUDA float16/bfloat16, same dtype and device, unit
    stride along D, any non-overlapping row stride each; they must be different memory.
    ``weight``: ``[D]``, contiguous, same dtype and device. ``D`` must be a multiple of 8 in
    [8, 16384] (see :func:`can_use_fused_add_rmsnorm`); every pointer and row stride must be
    16-byte aligned (misaligned views are rejected, never read wrongly). ``N == 0`` launches
    nothing.

    Raises TypeError for a non-tensor ``input``/``residual``/``weight`` or an ``eps`` that is
    not a number (a bool is not); RuntimeError (naming the tensor and what was expected) for a CPU tensor, an
    unsupported dtype, a rank/shape/dtype/device mismatch, an unsupported ``D``, a misaligned
    view, overlapping rows, or ``input`` and ``residual`` being the same memory.
    """
    if type(eps) is bool:  # tvm-ffi would read True as 1.0
        raise_argument_error(fused_add_rmsnorm, TypeError(), locals())
    try:
        _fused_add_rmsnorm(input, residual, weight, eps)
    except (AttributeError, TypeError) as error:
        raise_argument_error(fused_add_rmsnorm, error, locals())
