"""``apply_rope_inplace(q, k, cos_sin_cache, positions, *, is_neox, rope_dim=None)``: RoPE in place.

Rotary position embedding of the query and key heads of each token, NeoX (rotate-half) or
GPT-J (interleaved) style, on the first ``rope_dim`` elements of every head (partial rotary when
``rope_dim < head_dim``), from a float32 cos/sin cache. One module holds the three dtypes, both
styles, every size and both position types (dispatched in C++). Each thread reads its token's position
and cos/sin values once and reuses them for several heads; q/k move in 16-byte vectors when the
layout allows (narrower otherwise).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from jit_kernel.compiler import is_arch_support_pdl, load_jit, make_cpp_args
from jit_kernel.wrapper import (
    FirstCallBinding,
    cache_once,
    raise_argument_type_error,
    rebind_global,
    register_precompile,
)

if TYPE_CHECKING:
    from tvm_ffi.module import Module

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
#: The largest rope_dim (cos_sin_cache.size(1)).
MAX_ROPE_DIM = 1024


@cache_once
def _jit_rope_module() -> Module:
    """Build (or load from the cache) the rope module (every dtype, size and style)."""
    args = make_cpp_args(is_arch_support_pdl())
    return load_jit(
        "rope",
        *args,
        cuda_files=["elementwise/rope.cuh"],
        cuda_wrappers=[("apply_rope_inplace", f"apply_rope_inplace_by_dtype<{args}>")],
    )


register_precompile(_jit_rope_module, [()])

_rope = FirstCallBinding(
    _jit_rope_module,
    "apply_rope_inplace",
    op="apply_rope_inplace",
    tensor_arg=(0, "q"),
    rebind=rebind_global(globals(), "_rope"),
)


def can_use_apply_rope_inplace(head_dim: int, rope_dim: int, dtype: torch.dtype) -> bool:
    """True when ``apply_rope_inplace`` supports heads of ``head_dim`` rotated on ``rope_dim``.

    ``dtype`` float16/bfloat16/float32; ``rope_dim`` even, ``2 <= rope_dim <= min(head_dim,
    1024)``. Needs no GPU, compiles nothing, never raises. (GPT-J style also needs q and k at
    even element offsets, a property of the tensors rather than of the sizes.)
    """
    return (
        dtype in SUPPORTED_DTYPES
        and type(head_dim) is int
        and type(rope_dim) is int
        and rope_dim % 2 == 0
        and 2 <= rope_dim <= min(head_dim, MAX_ROPE_DIM)
    )


def apply_rope_inplace(
    q: torch.Tensor,
    k: torch.Tensor,
    cos_sin_cache: torch.Tensor,
    positions: torch.Tensor,
    *,
    is_neox: bool,
    rope_dim: int | None = None,
) -> None:
    """Rotate ``q`` and ``k`` in place by the angles of ``positions``; returns None.

    ``q``: ``[num_tokens, num_q_heads, head_dim]``, ``k``: ``[num_tokens, num_k_heads,
    head_dim]``, both float16, bfloat16 or float32 (the same dtype), last stride 1, any token
    and head strides (e.g. views of a fused qkv buffer: ``qkv[:, :hq*d].view(t, hq, d)``), no
    element at two places. ``cos_sin_cache``: float32 ``[max_position, rope_dim]``, contiguous;
    row ``p`` is ``[cos(p*f_0) .. cos(p*f_{r/2-1}), sin(p*f_0) .. sin(p*f_{r/2-1})]``.
    ``positions``: int32/int64 ``[num_tokens]``, any stride. ``rope_dim``: None (or 0) takes
    ``cos_sin_cache.size(1)``; an int must equal it. Only the first ``rope_dim`` elements of each
    head change.

    NeoX (``is_neox=True``): element ``i < r/2`` pairs with ``i + r/2``. GPT-J (False): element
    ``2i`` pairs with ``2i + 1``. A pair ``(a, b)`` at frequency ``i`` becomes
    ``(a*cos - b*sin, b*cos + a*sin)``, computed in float32 (each product and sum rounded,
    exactly like the float32 torch expression) and rounded once to the dtype. A token whose
    position is outside ``[0, max_position)`` is left unchanged (never read out of bounds).
    ``q`` and ``k`` must not overlap each other.

    Raises TypeError for a non-tensor argument, a non-bool ``is_neox`` or a non-int ``rope_dim``;
    RuntimeError for an unsupported dtype, mismatched shapes, dtypes or devices, an odd or too
    large rope_dim, ``rope_dim > head_dim``, a non-contiguous cache, a last stride != 1, an
    overlapping q/k, or (GPT-J only) q/k at an odd element offset.
    """
    try:
        _rope(q, k, cos_sin_cache, positions, is_neox, rope_dim or 0)
    except (AttributeError, TypeError) as error:
        tensors = {"q": q, "k": k, "cos_sin_cache": cos_sin_cache, "positions": positions}
        if all(isinstance(value, torch.Tensor) for value in tensors.values()):
            if type(is_neox) is not bool:
                raise TypeError(
                    f"apply_rope_inplace: is_neox must be a bool, got {type(is_neox).__name__}"
                ) from None
            if rope_dim is not None and type(rope_dim) is not int:
                raise TypeError(
                    "apply_rope_inplace: rope_dim must be an int or None, got "
                    f"{type(rope_dim).__name__}"
                ) from None
        raise_argument_type_error("apply_rope_inplace", error, tensors=tensors)
