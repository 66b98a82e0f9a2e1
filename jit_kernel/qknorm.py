"""``fused_inplace_qknorm(q, k, q_weight, k_weight, eps=1e-6)``: per-head RMSNorm of q and k.

QK-norm (Qwen3, OLMo2, Gemma3 style): every head vector of ``q`` ``[T, Hq, D]`` and ``k``
``[T, Hk, D]`` is RMS-normalised and scaled by its tensor's weight, in place, in one launch.
float16/bfloat16, ``head_dim`` D in {64, 128, 256, 512}; one module holds both dtypes and
every head size (dispatched in C++). A persistent grid sized from the device's SM count and the
kernel's occupancy walks the heads.
"""

from __future__ import annotations

import torch

from jit_kernel.wrapper import bind_export, jit_module, raise_argument_error

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16)
SUPPORTED_HEAD_DIMS = (64, 128, 256, 512)


_jit_qknorm_module = jit_module(
    "qknorm", "elementwise/qknorm.cuh", {"fused_inplace_qknorm": "fused_inplace_qknorm_by_dtype"}
)
_qknorm = bind_export(globals(), _jit_qknorm_module, "fused_inplace_qknorm", tensor_arg=(0, "q"))


def can_use_fused_inplace_qknorm(head_dim: int, dtype: torch.dtype) -> bool:
    """True when ``fused_inplace_qknorm`` supports ``head_dim`` and ``dtype``.

    float16/bfloat16 and head_dim in {64, 128, 256, 512}. Needs no GPU and compiles nothing;
    never raises. (Pointers and token/head strides must also be 16-byte aligned.)
    """
    return dtype in SUPPORTED_DTYPES and type(head_dim) is int and head_dim in SUPPORTED_HEAD_DIMS


def fused_inplace_qknorm(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor,
    k_weight: torch.Tensor,
    eps: float = 1e-6,
) -> None:
    """In place: ``q[t, h] = rmsnorm(q[t, h]) * q_weight`` and ``k[t, h] = rmsnorm(k[t, h]) *
    k_weight`` for every token t and head h. Returns None.

    Per head vector x, in fp32: ``round((x * rsqrt(mean(x ** 2) + eps)) * weight)``.

    ``q``: ``[T, Hq, D]``, ``k``: ``[T, Hk, D]``: CUDA float16/bfloat16, same T, D, dtype and
    device, unit stride along D, any other (16-byte aligned, non-overlapping) strides, e.g.
    views ``qkv[:, :Hq * D].view(T, Hq, D)`` of a fused QKV projection; q and k must not share
    memory. ``q_weight``, ``k_weight``: ``[D]``, contiguous, same dtype and device. ``D`` must
    be 64, 128, 256 or 512 (see :func:`can_use_fused_inplace_qknorm`). T == 0 or no heads
    launches nothing.

    Raises TypeError for a non-tensor argument or an ``eps`` that is not a number (a bool is not); RuntimeError (naming the
    tensor and what was expected) for a CPU tensor, an unsupported dtype, a rank/shape/dtype/
    device mismatch, an unsupported ``D``, a misaligned view, overlapping heads, or q and k
    being the same memory.
    """
    if type(eps) is bool:  # tvm-ffi would read True as 1.0
        raise_argument_error(fused_inplace_qknorm, TypeError(), locals())
    try:
        _qknorm(q, k, q_weight, k_weight, eps)
    except (AttributeError, TypeError) as error:
        raise_argument_error(fused_inplace_qknorm, error, locals())
