"""Planning one JIT module: its name, generated translation unit, flags and cache key.

Nothing here runs a compiler except to ask for its version (part of the key). The key covers the
generated sources, every file they include from our trees (:mod:`jit_kernel.compiler.sources`),
the flags, the target arch and the versions of tvm-ffi, this package and the compilers.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tvm_ffi
import tvm_ffi.libinfo

from jit_kernel.compiler.arch import get_jit_cuda_arch
from jit_kernel.compiler.closure_cache import cached_source_closure
from jit_kernel.compiler.sources import Root
from jit_kernel.compiler.toolchain import (
    JitToolchainError,
    ccbin_flags,
    compiler_version,
    find_cuda_toolkit,
    host_compiler,
)

KERNEL_ROOT = Path(__file__).resolve().parent.parent
INCLUDE_DIR = KERNEL_ROOT / "include"
CSRC_DIR = KERNEL_ROOT / "csrc"

DEFAULT_CFLAGS = ["-std=c++20", "-O3"]
DEFAULT_CUDA_CFLAGS = ["-std=c++20", "-O3", "--expt-relaxed-constexpr"]
MODULE_PREFIX = "jit_"
MAX_MODULE_NAME = 96
KEY_FORMAT = 3  # 3: records hold the compiler-reported dependencies; unproven closures keyed


_MARKER_RE = re.compile(r"^[A-Za-z0-9_.:+\-]+$")
_EXPORT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TVM_FFI_HEADERS = ("tvm/ffi/container/tensor.h", "tvm/ffi/function.h")


def module_name(markers: Sequence[str]) -> str:
    """``jit_`` + markers joined by ``_``, made filesystem-safe and at most 96 characters."""
    for position, marker in enumerate(markers):
        if not isinstance(marker, str) or not _MARKER_RE.match(marker):
            raise ValueError(
                f"load_jit: marker {position} is {marker!r}; markers must be non-empty strings of "
                "letters, digits and _ . : + - (pass the kernel name and *make_cpp_args(...))"
            )
    if not markers:
        raise ValueError("load_jit: give at least one marker, the kernel name")
    joined = "_".join(markers)
    safe = re.sub(r"[^A-Za-z0-9_]", "_", joined).replace("__", "_")
    name = MODULE_PREFIX + safe
    if safe != joined or len(name) > MAX_MODULE_NAME:
        digest = hashlib.sha256("\0".join(markers).encode()).hexdigest()[:10]
        name = f"{name[: MAX_MODULE_NAME - 11]}_{digest}"
    return name


def resolve_sources(files: Sequence[str | os.PathLike[str]] | None, arg: str) -> list[Path]:
    resolved: list[Path] = []
    for entry in files or []:
        path = Path(entry)
        full = path if path.is_absolute() else CSRC_DIR / path
        if not full.is_file():
            where = "" if path.is_absolute() else f" (relative paths are under {CSRC_DIR})"
            raise FileNotFoundError(f"load_jit: {arg} entry {str(entry)!r}: no such file{where}")
        resolved.append(full.resolve())
    return resolved


def check_wrappers(wrappers: Sequence[tuple[str, str]] | None, arg: str) -> list[tuple[str, str]]:
    checked: list[tuple[str, str]] = []
    for position, item in enumerate(wrappers or []):
        if (
            not isinstance(item, tuple | list)
            or len(item) != 2
            or not all(isinstance(part, str) for part in item)
        ):
            raise TypeError(
                f"load_jit: {arg}[{position}] is {item!r}; expected (export_name, cpp_expression)"
            )
        export, expr = item
        if not _EXPORT_RE.match(export):
            raise ValueError(
                f"load_jit: {arg}[{position}] export name {export!r} is not a C identifier"
            )
        checked.append((export, expr))
    return checked


def translation_unit(files: Sequence[Path], wrappers: Sequence[tuple[str, str]], spell: Any) -> str:
    lines = [f"#include <{header}>" for header in _TVM_FFI_HEADERS]
    lines += [f'#include "{spell(path)}"' for path in files]
    lines += [f"TVM_FFI_DLL_EXPORT_TYPED_FUNC({export}, ({expr}));" for export, expr in wrappers]
    return "\n".join(lines) + "\n"


def _digest(material: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:16]


@functools.cache
def _versions() -> dict[str, str]:
    try:
        from importlib.metadata import version

        ours = version("gpu-kernel-ci")
    except Exception:
        ours = "unknown"
    return {"tvm_ffi": tvm_ffi.__version__, "jit_kernel": ours}


@dataclass
class ModulePlan:
    """Everything needed to build one module, plus its cache key."""

    name: str
    key: str  # everything, compiler versions included ("" when a compiler is missing)
    source_key: str  # everything but the compilers' identities (see _index_path)
    key_material: dict[str, Any]
    cpp_source: str | None
    cuda_source: str | None
    cpp_flags: list[str]
    cuda_flags: list[str]
    ldflags: list[str]
    roots: list[Root]  # the trees whose files are named by label (key, dependency record)
    sources: list[Path]  # the cpp_files and cuda_files, absolute
    unproven: list[str]  # what the static #include closure cannot prove (label:line: why)
    toolchain_error: JitToolchainError | None = None  # why the full key could not be computed


def plan_module(
    markers: Sequence[str],
    cpp_files: list[Path],
    cuda_files: list[Path],
    cpp_wrappers: list[tuple[str, str]],
    cuda_wrappers: list[tuple[str, str]],
    extra_cflags: Sequence[str],
    extra_cuda_cflags: Sequence[str],
    extra_ldflags: Sequence[str],
    extra_include_paths: Sequence[Path],
    closure_store: Path | None = None,
) -> ModulePlan:
    """Generate the sources and flags and compute the cache key (no compiler runs).

    ``closure_store``: where the ``#include`` closures are kept across processes
    (:mod:`jit_kernel.compiler.closure_cache`); None computes it afresh."""
    name = module_name(markers)
    if not (cpp_files or cuda_files or cpp_wrappers or cuda_wrappers):
        raise ValueError(f"load_jit({name}): give cpp_files/cuda_files and wrappers to export")
    roots = [Root("include", INCLUDE_DIR), Root("csrc", CSRC_DIR)]
    roots += [Root(f"extra{i}", path) for i, path in enumerate(extra_include_paths)]
    source_dirs = sorted({path.parent for path in (*cpp_files, *cuda_files)})
    roots += [Root(f"src{i}", path) for i, path in enumerate(source_dirs)]

    def label(path: Path) -> str:
        for root in roots:
            found = root.label_of(path)
            if found is not None:
                return found
        return path.name

    search_dirs = [INCLUDE_DIR, *extra_include_paths]
    includes = [tvm_ffi.libinfo.find_include_path(), tvm_ffi.libinfo.find_dlpack_include_path()]
    include_flags = [f"-I{path}" for path in dict.fromkeys([*includes, *map(str, search_dirs)])]

    has_cpp = bool(cpp_files or cpp_wrappers)
    needs_cuda = bool(cuda_files or cuda_wrappers)
    cpp_flags = [*DEFAULT_CFLAGS, "-fPIC", *extra_cflags]
    cuda_flags: list[str] = []
    material: dict[str, Any] = {"format": KEY_FORMAT, "name": name, **_versions()}
    if needs_cuda:
        arch = get_jit_cuda_arch()
        cuda_flags = [
            *ccbin_flags(),
            "-Xcompiler",
            "-fPIC",
            *DEFAULT_CUDA_CFLAGS,
            arch.define_flag,
            arch.gencode_flag,
            *extra_cuda_cflags,
        ]
        material["arch"] = arch.target_name
    ldflags = list(extra_ldflags)
    material["flags"] = {"cpp": cpp_flags, "cuda": cuda_flags, "ld": ldflags}
    material["include_dirs"] = [label(path) + "/" for path in extra_include_paths]
    material["tu"] = {
        "cpp": translation_unit(cpp_files, cpp_wrappers, label) if has_cpp else None,
        "cuda": translation_unit(cuda_files, cuda_wrappers, label) if needs_cuda else None,
    }
    material["files"], unproven = cached_source_closure(
        [*cpp_files, *cuda_files], search_dirs, roots, closure_store
    )
    material["unproven"] = unproven
    source_key = _digest(material)
    toolchain_error = None
    try:
        toolkit = find_cuda_toolkit() if needs_cuda else None  # the likelier missing tool first
        cxx = host_compiler()
        material["cxx"] = [cxx, compiler_version(cxx)]
        if toolkit is not None:
            material["nvcc"] = compiler_version(str(toolkit.nvcc))
        key = _digest(material)
    except JitToolchainError as error:
        toolchain_error, key = error, ""

    def spell(path: Path) -> str:
        return str(path)

    return ModulePlan(
        name=name,
        key=key,
        source_key=source_key,
        toolchain_error=toolchain_error,
        key_material=material,
        cpp_source=translation_unit(cpp_files, cpp_wrappers, spell) if has_cpp else None,
        cuda_source=translation_unit(cuda_files, cuda_wrappers, spell) if needs_cuda else None,
        cpp_flags=[*cpp_flags, *include_flags],
        cuda_flags=[*cuda_flags, *include_flags],
        ldflags=ldflags,
        roots=roots,
        sources=[*cpp_files, *cuda_files],
        unproven=unproven,
    )
