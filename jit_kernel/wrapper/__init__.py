"""What a kernel's thin Python wrapper is made of: the module getter's memo (``cache_once``), its
precompile declaration (``register_precompile``) and the first-call binding and argument errors
(:mod:`.binding`)."""

from jit_kernel.wrapper.binding import (
    FirstCallBinding,
    KernelTable,
    raise_argument_type_error,
    rebind_global,
)
from jit_kernel.wrapper.cache_once import cache_once
from jit_kernel.wrapper.registry import register_precompile

__all__ = [
    "FirstCallBinding",
    "KernelTable",
    "cache_once",
    "raise_argument_type_error",
    "rebind_global",
    "register_precompile",
]
