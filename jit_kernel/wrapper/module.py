"""``jit_module``: the module getter of a kernel whose C++ exports are templates on ``kUsePDL``.

Most kernels compile one module per target architecture: every dtype and size inside it,
dispatched in C++, and programmatic dependent launch on where the architecture has it. Their
getter is always the same few lines, so it is written once here::

    _jit_add3_module = jit_module("add3", "elementwise/add3.cuh", ["add3"])

is ``load_jit("add3", "true", cuda_files=["elementwise/add3.cuh"], cuda_wrappers=[("add3",
"add3<true>")])`` behind :func:`cache_once`, declared to ``python -m jit_kernel precompile``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from jit_kernel.compiler import is_arch_support_pdl, load_jit, make_cpp_args
from jit_kernel.wrapper.cache_once import cache_once
from jit_kernel.wrapper.registry import register_precompile

if TYPE_CHECKING:
    from tvm_ffi.module import Module


def jit_module(
    name: str,
    cuda_file: str,
    exports: Iterable[str] | Mapping[str, str],
    *,
    precompile: bool = True,
) -> Callable[[], Module]:
    """A :func:`cache_once` getter of the module ``jit_<name>_<pdl>``, built from ``cuda_file``
    (relative to ``jit_kernel/csrc``).

    ``exports``: the names Python calls, each the C++ function template ``name<kUsePDL>`` of the
    same name, or a mapping ``{python_name: cpp_template}``. ``precompile``: declare the module
    to ``python -m jit_kernel precompile``. The getter is named ``_jit_<name>_module`` in the
    calling module (for precompile's listing and ``--only``).
    """
    pairs = (
        tuple(exports.items()) if isinstance(exports, Mapping) else tuple((e, e) for e in exports)
    )
    if not pairs:
        raise ValueError(f"jit_module({name!r}): list at least one export")

    def build() -> Module:
        args = make_cpp_args(is_arch_support_pdl())
        return load_jit(
            name,
            *args,
            cuda_files=[cuda_file],
            cuda_wrappers=[(export, f"{cpp}<{args}>") for export, cpp in pairs],
        )

    build.__name__ = build.__qualname__ = f"_jit_{name}_module"
    build.__module__ = sys._getframe(1).f_globals.get("__name__", build.__module__)
    build.__doc__ = f"Build (or load from the cache) the {name} module ({cuda_file})."
    getter = cache_once(build)
    if precompile:
        register_precompile(getter, [()])
    return getter
