"""``rmsnorm(input, weight, eps=1e-6, out=None)``: RMSNorm of the rows of a 2-D tensor.

``out[i, :] = input[i, :] * rsqrt(mean(input[i, :] ** 2) + eps) * weight`` for float16 and
bfloat16, computed in fp32 and rounded once. One module holds both dtypes and every row size
(dispatched in C++); each row is read once into registers, reduced and written back.
"""

from __future__ import annotations

import torch

from jit_kernel.wrapper import bind_export, jit_module, raise_argument_error

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16)
#: The largest hidden size (row length); it must also be a multiple of 8 (16-byte packs).
MAX_HIDDEN_SIZE = 16384


_jit_rmsnorm_module = jit_module(
    "rmsnorm", "elementwise/rmsnorm.cuh", {"rmsnorm": "rmsnorm_by_dtype"}
)
_rmsnorm = bind_export(globals(), _jit_rmsnorm_module, "rmsnorm", tensor_arg=(1, "input"))


def can_use_rmsnorm(hidden_size: int, dtype: torch.dtype) -> bool:
    """True when ``rmsnorm`` supports rows of ``hidden_size`` elements of ``dtype``.

    float16/bfloat16 and a hidden size that is a multiple of 8 in [8, 16384]. Needs no GPU and
    compiles nothing; never raises. (Pointers and row strides must also be 16-byte aligned,
    which depends on the tensors, not on the sizes.)
    """
    return (
        dtype in SUPPORTED_DTYPES
        and type(hidden_size) is int
        and 8 <= hidden_size <= MAX_HIDDEN_SIZE
        and hidden_size % 8 == 0
    )


def rmsnorm(
    input: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Return ``input * rsqrt(mean(input ** 2, dim=-1) + eps) * weight`` (row-wise RMSNorm).

    Out of place: without ``out`` the result is a NEW tensor (``torch.empty_like(input)``) and
    ``input`` is left unchanged; with ``out`` it is written there and ``out`` is returned
    (``out=input`` normalises in place).

    ``input``: ``[N, D]`` CUDA float16/bfloat16 with unit stride along D and any row stride
    (e.g. a column slice ``x[:, :D]`` of a wider tensor). ``weight``: ``[D]``, contiguous, same
    dtype and device. ``out``: ``[N, D]``, same dtype and device, unit stride along D, any
    non-overlapping row stride. ``D`` must be a multiple of 8 in [8, 16384] (see
    :func:`can_use_rmsnorm`); every pointer and row stride must be 16-byte aligned (a view
    such as ``x[:, 1:]`` is rejected, never read wrongly). The arithmetic is fp32:
    ``(x * rstd) * weight`` rounded once to the dtype. ``N == 0`` launches nothing.

    Raises TypeError for a non-tensor ``input``/``weight``/``out`` or an ``eps`` that is not a
    number (a bool is not); RuntimeError (naming the tensor and what was expected) for a CPU
    tensor, an unsupported dtype, a rank/shape/dtype/device mismatch, an unsupported ``D``, a
    misaligned view or an ``out`` whose rows overlap.
    """
    if type(eps) is bool:  # tvm-ffi would read True as 1.0
        raise_argument_error(rmsnorm, TypeError(), locals())
    try:
        if out is None:
            out = torch.empty_like(input)
        _rmsnorm(out, input, weight, eps)
    except (AttributeError, TypeError) as error:
        raise_argument_error(rmsnorm, error, locals())
    return out
