"""``apply_rope_inplace(q, k, cos_sin_cache, positions, *, is_neox, rope_dim=None)``: RoPE in place.

Rotary position embedding of the query and key heads of each token, NeoX (rotate-half) or
GPT-J (interleaved) style, on the first ``rope_dim`` elements of every head (partial rotary when
``rope_dim < head_dim``), from a float32 cos/sin cache. One module holds the three dtypes, both
styles, every size and both position types (dispatched in C++). Each thread reads its token's position
and cos/sin values once and reuses them for several heads; q/k move in 16-byte vectors when the
layout allows (narrower otherwise).
"""

from __future__ import annotations

import torch

from jit_kernel.wrapper import bind_export, jit_module, raise_argument_error

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
#: The largest rope_dim (cos_sin_cache.size(1)).
MAX_ROPE_DIM = 1024


_jit_rope_module = jit_module(
    "rope", "elementwise/rope.cuh", {"apply_rope_inplace": "apply_rope_inplace_by_dtype"}
)
_rope = bind_export(globals(), _jit_rope_module, "apply_rope_inplace", tensor_arg=(0, "q"))


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

    Raises TypeError for a non-tensor argument, an ``is_neox`` that is not a bool (``1`` is not)
    or a ``rope_dim`` that is not an int (``True`` is not); RuntimeError for an unsupported
    dtype, mismatched shapes, dtypes or devices, an odd or too large rope_dim, ``rope_dim >
    head_dim``, a non-contiguous cache, a last stride != 1, an overlapping q/k, or (GPT-J only)
    q/k at an odd element offset.
    """
    if type(is_neox) is not bool or type(rope_dim) is bool:  # tvm-ffi reads 1 as True, True as 1
        raise_argument_error(apply_rope_inplace, TypeError(), locals())
    try:
        _rope(q, k, cos_sin_cache, positions, is_neox, 0 if rope_dim is None else rope_dim)
    except (AttributeError, TypeError) as error:
        raise_argument_error(apply_rope_inplace, error, locals())
