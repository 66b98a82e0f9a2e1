"""``add_constant(src, constant, out=None)``: ``src + constant`` for int32 as a JIT CUDA kernel.

The constant is a C++ template argument (one compiled module per constant); the sum wraps
around on overflow like torch's int32 addition. 128-bit vector loads/stores when aligned,
Programmatic Dependent Launch on SM90+.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from jit_kernel.compiler import is_arch_support_pdl, load_jit, make_cpp_args
from jit_kernel.wrapper import KernelTable, cache_once, raise_argument_error, register_precompile

if TYPE_CHECKING:
    from tvm_ffi.module import Module

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


@cache_once
def _jit_add_constant_module(constant: int) -> Module:
    """Build (or load from the cache) the add_constant module for ``constant``."""
    if type(constant) is not int:  # excludes bool
        raise RuntimeError(
            f"add_constant: constant must be an int, got {constant!r} ({type(constant).__name__})"
        )
    if not INT32_MIN <= constant <= INT32_MAX:
        raise RuntimeError(
            f"add_constant: constant {constant} is outside the int32 range "
            f"[{INT32_MIN}, {INT32_MAX}]"
        )
    args = make_cpp_args(constant, is_arch_support_pdl())
    return load_jit(
        "add_constant",
        *args,
        cuda_files=["add_constant.cuh"],
        cuda_wrappers=[("add_constant", f"add_constant<{args}>")],
    )


register_precompile(_jit_add_constant_module, [(1,), (-1,), (16,)])

_add_constant = KernelTable(_jit_add_constant_module, "add_constant", "add_constant", "src")


def add_constant(src: torch.Tensor, constant: int, out: torch.Tensor | None = None) -> torch.Tensor:
    """Return ``src + constant`` (written into ``out`` when given).

    ``src``: a CUDA int32 tensor of any shape; a non-contiguous ``src`` is copied to a
    contiguous one first. ``constant``: a Python int in the int32 range. ``out``: optional, same
    shape, dtype and device as ``src`` and contiguous. Raises TypeError for a ``src``/``out``
    that is not a tensor or a constant that is not an int; RuntimeError for a CPU tensor, a
    dtype other than int32 (naming the tensor), a constant outside int32 or a mismatched
    ``out``.
    """
    try:
        if type(constant) is not int:  # a bool would otherwise find the module built for 0/1
            raise TypeError(f"add_constant: constant must be an int, got {type(constant).__name__}")
        kernel = _add_constant.get(constant) or _add_constant.miss(constant, src)
        result = torch.empty_like(src) if out is None else out
        if not kernel(result, src):  # src is not contiguous: use a copy
            src = src.contiguous()
            result = torch.empty_like(src) if out is None else out
            kernel(result, src)
    except (AttributeError, TypeError) as error:
        raise_argument_error(add_constant, error, locals())
    return result
