"""What a kernel's thin Python wrapper is made of: its module getter (``jit_module``, or
``cache_once`` + ``register_precompile`` by hand), its first-call binding (``bind_export``)
and its argument-type errors (``raise_argument_error``)."""

from jit_kernel.wrapper.arguments import raise_argument_error
from jit_kernel.wrapper.binding import (
    FirstCallBinding,
    KernelTable,
    bind_export,
    rebind_global,
)
from jit_kernel.wrapper.cache_once import cache_once
from jit_kernel.wrapper.module import jit_module
from jit_kernel.wrapper.registry import register_precompile

__all__ = [
    "FirstCallBinding",
    "KernelTable",
    "bind_export",
    "cache_once",
    "jit_module",
    "raise_argument_error",
    "rebind_global",
    "register_precompile",
]
