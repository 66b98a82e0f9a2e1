"""``store_cache(k, v, k_cache, v_cache, indices, checked=False)``: scatter KV rows into a cache.

``k_cache[indices[i]] = k[i]`` and ``v_cache[indices[i]] = v[i]``: a row copy by bytes (any
dtype), one module for every row size, dtype and index type (dispatched in C++). A group of
threads (a warp for rows of 512 bytes or more) copies one row with the widest vector the
pointers, strides and row sizes allow (16, 8, 4, 2 or 1 bytes), four vectors in flight per
thread, loading the row's index once. Out-of-range indices never write out of bounds.
"""

from __future__ import annotations

import torch

from jit_kernel.wrapper import bind_export, jit_module, raise_argument_error

#: A k row plus a v row must be smaller than this many bytes.
MAX_ROW_BYTES = 2**31


_jit_store_cache_module = jit_module(
    "store_cache", "elementwise/store_cache.cuh", ["store_cache", "store_cache_checked"]
)
_store = bind_export(globals(), _jit_store_cache_module, "store_cache", tensor_arg=(0, "k"))
_store_checked = bind_export(
    globals(), _jit_store_cache_module, "store_cache_checked", tensor_arg=(0, "k"), op="store_cache"
)


def can_use_store_cache(row_bytes: int, v_row_bytes: int | None = None) -> bool:
    """True when ``store_cache`` can copy k rows of ``row_bytes`` and v rows of ``v_row_bytes``.

    ``v_row_bytes`` defaults to ``row_bytes``. Every dtype and row size is supported (odd sizes
    use narrower vectors) as long as both are >= 0, at least one is > 0 and their sum is below
    2**31; this probe exists for callers that choose between implementations. Needs no GPU,
    compiles nothing, never raises.
    """
    v_bytes = row_bytes if v_row_bytes is None else v_row_bytes
    return (
        type(row_bytes) is int
        and type(v_bytes) is int
        and row_bytes >= 0
        and v_bytes >= 0
        and 0 < row_bytes + v_bytes < MAX_ROW_BYTES
    )


def store_cache(
    k: torch.Tensor,
    v: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    indices: torch.Tensor,
    checked: bool = False,
) -> None:
    """Write ``k[i]`` to ``k_cache[indices[i]]`` and ``v[i]`` to ``v_cache[indices[i]]``, in place.

    ``k``/``v``: ``[num_rows, ...]``; ``k_cache``/``v_cache``: ``[num_slots, ...]``. Dim 0 counts
    the rows and may have any stride (rows of a larger buffer); the other dims form one row and
    must be dense. ``k_cache`` has ``k``'s dtype (any dtype: the copy is by bytes) and its row
    size in bytes, ``v_cache`` likewise for ``v``; both caches have the same number of rows.
    ``indices``: int32 or int64 ``[num_rows]``, any stride. Everything on one CUDA device.

    An index outside ``[0, num_slots)`` (negative ones included: there is no wrap-around) never
    writes. With ``checked=False`` (the default, capturable in CUDA graphs) its row is skipped
    silently. With ``checked=True`` the in-range rows are stored, the stream is synchronized and
    a RuntimeError names the first bad row, its index and the cache size (not capturable).
    Duplicate indices: each element of that cache row comes from one of the rows that target it,
    which one is unspecified (row pieces may come from different rows).

    Pass ``checked`` by name (it is positional-or-keyword only to keep calls cheap).

    Raises TypeError for a non-tensor argument or a ``checked`` that is not a bool (``1`` is
    not), RuntimeError (naming the tensor) for a CPU tensor, mismatched devices, dtypes, row
    sizes or row counts, non-dense rows, or indices that are not a 1-D int32/int64 tensor of
    ``num_rows`` entries.
    """
    if type(checked) is not bool:  # any object is truthy or not: a typo must not pass
        raise_argument_error(store_cache, TypeError(), locals())
    try:
        if checked:
            error = torch.empty(2, dtype=torch.int64, device=k.device)
            _store_checked(k, v, k_cache, v_cache, indices, error)
        else:
            _store(k, v, k_cache, v_cache, indices)
    except (AttributeError, TypeError) as error:
        raise_argument_error(store_cache, error, locals())
