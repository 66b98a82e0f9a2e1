"""``load_jit``: build a header-only kernel into a tvm-ffi module, cached by content.

Cold path: generate a translation unit (``#include`` lines plus one
``TVM_FFI_DLL_EXPORT_TYPED_FUNC`` per wrapper), compile it with nvcc / ``$CXX`` in a private
staging directory (ninja runs the compile and link steps), then publish the ``.so`` atomically into
``<cache>/<module>_<key16>/<module>.so``. Warm path: that file exists, so it is loaded directly
(no ninja, no compiler). See :mod:`jit_kernel.utils.sources` for what the key covers.
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import json
import logging
import os
import re
import shlex
import shutil
import socket
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tvm_ffi
import tvm_ffi.libinfo

from ci_runner.env import get_bool_env
from jit_kernel.utils.arch import get_jit_cuda_arch
from jit_kernel.utils.cache_dir import cache_root
from jit_kernel.utils.ninja_build import BuildStep, BuildStepError, run_ninja
from jit_kernel.utils.sources import Root, source_closure
from jit_kernel.utils.toolchain import (
    JitToolchainError,
    ccbin_flags,
    compiler_version,
    find_cuda_toolkit,
    host_compiler,
)

if TYPE_CHECKING:
    from tvm_ffi import Module

logger = logging.getLogger("jit_kernel")

KERNEL_ROOT = Path(__file__).resolve().parent.parent
INCLUDE_DIR = KERNEL_ROOT / "include"
CSRC_DIR = KERNEL_ROOT / "csrc"

DEFAULT_CFLAGS = ["-std=c++20", "-O3"]
DEFAULT_CUDA_CFLAGS = ["-std=c++20", "-O3", "--expt-relaxed-constexpr"]
MODULE_PREFIX = "jit_"
MAX_MODULE_NAME = 96
KEY_FORMAT = 1

FORCE_REBUILD_ENV = "JIT_KERNEL_FORCE_REBUILD"
VERBOSE_ENV = "JIT_KERNEL_VERBOSE"

_MARKER_RE = re.compile(r"^[A-Za-z0-9_.:+\-]+$")
_EXPORT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TVM_FFI_HEADERS = ("tvm/ffi/container/tensor.h", "tvm/ffi/function.h")

_build_only: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "jit_kernel_build_only", default=False
)


class JitCompileError(RuntimeError):
    """The compiler rejected a JIT module; the message has the command, output and source."""


@dataclass(frozen=True)
class BuildResult:
    """What ``load_jit`` returns inside :func:`build_only`: the library, built or found cached."""

    name: str
    path: Path
    built: bool


@contextmanager
def build_only() -> Iterator[None]:
    """Inside this block ``load_jit`` builds (or finds) the library but never loads it."""
    token = _build_only.set(True)
    try:
        yield
    finally:
        _build_only.reset(token)


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


def _resolve_sources(files: Sequence[str | os.PathLike[str]] | None, arg: str) -> list[Path]:
    resolved: list[Path] = []
    for entry in files or []:
        path = Path(entry)
        full = path if path.is_absolute() else CSRC_DIR / path
        if not full.is_file():
            where = "" if path.is_absolute() else f" (relative paths are under {CSRC_DIR})"
            raise FileNotFoundError(f"load_jit: {arg} entry {str(entry)!r}: no such file{where}")
        resolved.append(full.resolve())
    return resolved


def _check_wrappers(wrappers: Sequence[tuple[str, str]] | None, arg: str) -> list[tuple[str, str]]:
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


def _translation_unit(
    files: Sequence[Path], wrappers: Sequence[tuple[str, str]], spell: Any
) -> str:
    lines = [f"#include <{header}>" for header in _TVM_FFI_HEADERS]
    lines += [f'#include "{spell(path)}"' for path in files]
    lines += [f"TVM_FFI_DLL_EXPORT_TYPED_FUNC({export}, ({expr}));" for export, expr in wrappers]
    return "\n".join(lines) + "\n"


def _digest(material: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:16]


def _index_path(root: Path, plan: _Plan) -> Path:
    """Where the last published build of these sources is recorded.

    The index is keyed by everything except the compilers' identities (nvcc and ``$CXX``
    versions), so a machine without a toolchain (a driver-only image) can still load a module
    that ``python -m jit_kernel precompile`` built elsewhere into a shared cache.
    """
    return root / "by-source" / f"{plan.name}_{plan.source_key}"


def _record_in_index(root: Path, plan: _Plan, target: Path) -> None:
    index = _index_path(root, plan)
    index.parent.mkdir(parents=True, exist_ok=True)
    staged = index.with_name(f"{index.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    staged.write_text(target.parent.name)
    os.replace(staged, index)


def _prebuilt_without_toolchain(root: Path, plan: _Plan) -> Path:
    """The indexed build of these sources, or the toolchain error (with what was looked for)."""
    error = plan.toolchain_error
    assert error is not None
    index = _index_path(root, plan)
    try:
        target = root / index.read_text().strip() / f"{plan.name}.so"
    except OSError:
        target = None
    if target is not None and target.is_file():
        logger.info("no toolchain; loading %s, built elsewhere from the same sources", target)
        return target
    raise JitToolchainError(
        f"{error}\nNo prebuilt {plan.name!r} for these sources, flags and arch was found in "
        f"{root} either (looked for {index})."
    ) from None


@functools.cache
def _versions() -> dict[str, str]:
    try:
        from importlib.metadata import version

        ours = version("gpu-kernel-ci")
    except Exception:
        ours = "unknown"
    return {"tvm_ffi": tvm_ffi.__version__, "jit_kernel": ours}


@dataclass
class _Plan:
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
    toolchain_error: JitToolchainError | None = None  # why the full key could not be computed


def _plan(
    markers: Sequence[str],
    cpp_files: list[Path],
    cuda_files: list[Path],
    cpp_wrappers: list[tuple[str, str]],
    cuda_wrappers: list[tuple[str, str]],
    extra_cflags: Sequence[str],
    extra_cuda_cflags: Sequence[str],
    extra_ldflags: Sequence[str],
    extra_include_paths: Sequence[Path],
) -> _Plan:
    """Generate the sources and flags and compute the cache key (no compiler runs)."""
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
        "cpp": _translation_unit(cpp_files, cpp_wrappers, label) if has_cpp else None,
        "cuda": _translation_unit(cuda_files, cuda_wrappers, label) if needs_cuda else None,
    }
    material["files"] = source_closure([*cpp_files, *cuda_files], search_dirs, roots)
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

    return _Plan(
        name=name,
        key=key,
        source_key=source_key,
        toolchain_error=toolchain_error,
        key_material=material,
        cpp_source=_translation_unit(cpp_files, cpp_wrappers, spell) if has_cpp else None,
        cuda_source=_translation_unit(cuda_files, cuda_wrappers, spell) if needs_cuda else None,
        cpp_flags=[*cpp_flags, *include_flags],
        cuda_flags=[*cuda_flags, *include_flags],
        ldflags=ldflags,
    )


def _build(plan: _Plan, staging: Path) -> Path:
    """Compile and link in ``staging`` with ninja; returns the library path there."""
    staging.mkdir(parents=True, exist_ok=False)
    cxx = host_compiler()
    steps: list[BuildStep] = []
    ldflags: list[str] = []
    if plan.cpp_source is not None:
        source = staging / "main.cpp"
        source.write_text(plan.cpp_source)
        command = (cxx, *plan.cpp_flags, "-c", str(source), "-o", "main.o")
        steps.append(BuildStep("main.o", ("main.cpp",), command, source))
    if plan.cuda_source is not None:
        toolkit = find_cuda_toolkit()
        source = staging / "cuda.cu"
        source.write_text(plan.cuda_source)
        command = (str(toolkit.nvcc), *plan.cuda_flags, "-c", str(source), "-o", "cuda.o")
        steps.append(BuildStep("cuda.o", ("cuda.cu",), command, source))
        cudart = str(toolkit.cudart_dir)
        ldflags = [f"-L{cudart}", "-lcudart", f"-Wl,-rpath,{cudart}"]
    (staging / "key.json").write_text(json.dumps(plan.key_material, indent=1, sort_keys=True))
    objects = tuple(step.output for step in steps)
    library = f"{plan.name}.so"
    tvm_lib = Path(tvm_ffi.libinfo.find_libtvm_ffi())
    link = (
        cxx,
        "-shared",
        *objects,
        f"-L{tvm_lib.parent}",
        "-ltvm_ffi",
        *ldflags,
        *plan.ldflags,
        "-o",
        library,
    )
    steps.append(BuildStep(library, objects, link, steps[-1].source))
    try:
        run_ninja(staging, steps, verbose=get_bool_env(VERBOSE_ENV))
    except BuildStepError as failure:
        raise JitCompileError(
            f"failed to build JIT module {plan.name!r} (cache key {plan.key})\n"
            f"command (exit code {failure.exit_code}):\n  {shlex.join(failure.step.command)}\n"
            f"compiler output:\n{failure.output.rstrip()}\n"
            f"generated source: {failure.step.source}\n"
            f"build directory (kept for inspection): {staging}"
        ) from None
    return staging / library


def _publish(staged: Path, target: Path, replace: bool) -> None:
    """Move ``staged`` to ``target`` atomically; the first publisher wins unless ``replace``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if not replace:
        try:
            os.link(staged, target)
            return
        except FileExistsError:
            return  # another process published the same key first; keep theirs
        except OSError:
            pass  # no hard links on this filesystem
    os.replace(staged, target)


def _check_not_capturing(name: str) -> None:
    import torch

    if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
        raise RuntimeError(
            f"JIT module {name!r} is not built yet and the current CUDA stream is capturing a "
            "graph; compiling now would break the capture. Build it before capture: run "
            "`python -m jit_kernel precompile` (or call the kernel once before capturing)."
        )


def _load(path: Path) -> Module:

    return tvm_ffi.load_module(str(path))


def _prepare(
    markers: Sequence[str],
    cpp_files: Sequence[str | os.PathLike[str]] | None,
    cuda_files: Sequence[str | os.PathLike[str]] | None,
    cpp_wrappers: Sequence[tuple[str, str]] | None,
    cuda_wrappers: Sequence[tuple[str, str]] | None,
    extra_cflags: Sequence[str] | None,
    extra_cuda_cflags: Sequence[str] | None,
    extra_ldflags: Sequence[str] | None,
    extra_include_paths: Sequence[str | os.PathLike[str]] | None,
    build_directory: str | os.PathLike[str] | None,
) -> tuple[_Plan, Path, Path]:
    """Validate the arguments; returns the plan, the cache root and the library path."""
    plan = _plan(
        markers,
        _resolve_sources(cpp_files, "cpp_files"),
        _resolve_sources(cuda_files, "cuda_files"),
        _check_wrappers(cpp_wrappers, "cpp_wrappers"),
        _check_wrappers(cuda_wrappers, "cuda_wrappers"),
        list(extra_cflags or []),
        list(extra_cuda_cflags or []),
        list(extra_ldflags or []),
        [Path(path).resolve() for path in extra_include_paths or []],
    )
    root = Path(build_directory) if build_directory is not None else cache_root()
    if plan.toolchain_error is not None:
        return plan, root, _prebuilt_without_toolchain(root, plan)
    return plan, root, root / f"{plan.name}_{plan.key}" / f"{plan.name}.so"


def jit_module_path(
    *markers: str,
    cpp_files: Sequence[str | os.PathLike[str]] | None = None,
    cuda_files: Sequence[str | os.PathLike[str]] | None = None,
    cpp_wrappers: Sequence[tuple[str, str]] | None = None,
    cuda_wrappers: Sequence[tuple[str, str]] | None = None,
    extra_cflags: Sequence[str] | None = None,
    extra_cuda_cflags: Sequence[str] | None = None,
    extra_ldflags: Sequence[str] | None = None,
    extra_include_paths: Sequence[str | os.PathLike[str]] | None = None,
    build_directory: str | os.PathLike[str] | None = None,
) -> Path:
    """Where ``load_jit`` with the same arguments keeps its library (it may not exist yet)."""
    return _prepare(
        markers,
        cpp_files,
        cuda_files,
        cpp_wrappers,
        cuda_wrappers,
        extra_cflags,
        extra_cuda_cflags,
        extra_ldflags,
        extra_include_paths,
        build_directory,
    )[2]


def load_jit(
    *markers: str,
    cpp_files: Sequence[str | os.PathLike[str]] | None = None,
    cuda_files: Sequence[str | os.PathLike[str]] | None = None,
    cpp_wrappers: Sequence[tuple[str, str]] | None = None,
    cuda_wrappers: Sequence[tuple[str, str]] | None = None,
    extra_cflags: Sequence[str] | None = None,
    extra_cuda_cflags: Sequence[str] | None = None,
    extra_ldflags: Sequence[str] | None = None,
    extra_include_paths: Sequence[str | os.PathLike[str]] | None = None,
    build_directory: str | os.PathLike[str] | None = None,
) -> Module:
    """Build (or load from the cache) a module exporting the wrappers; see the module docstring.

    ``markers`` name the module (kernel name, then ``*make_cpp_args(...)``). Files are relative
    to ``jit_kernel/csrc`` or absolute. Wrappers are ``(export_name, cpp_expression)``; the export
    is called as ``module.export_name(...)``. Extra flags come after the defaults, so they win.
    ``build_directory`` replaces the cache root (``JIT_KERNEL_CACHE_DIR``) for this module.
    Inside :func:`build_only` the result is a :class:`BuildResult` instead of a module.
    """
    plan, root, target = _prepare(
        markers,
        cpp_files,
        cuda_files,
        cpp_wrappers,
        cuda_wrappers,
        extra_cflags,
        extra_cuda_cflags,
        extra_ldflags,
        extra_include_paths,
        build_directory,
    )
    only_build = _build_only.get()
    force = get_bool_env(FORCE_REBUILD_ENV)
    corrupt = False
    if plan.toolchain_error is not None:  # nothing can be built: use what was found, or fail
        if only_build or force:
            raise plan.toolchain_error
        try:
            return _load(target)
        except Exception as error:
            raise JitToolchainError(
                f"{plan.toolchain_error}\nThe prebuilt {target} failed to load ({error}) and "
                "cannot be rebuilt here."
            ) from None
    if target.is_file() and not force:
        if only_build:
            return BuildResult(plan.name, target, built=False)
        try:
            return _load(target)
        except Exception as error:
            logger.warning("cached JIT module %s failed to load (%s); rebuilding", target, error)
            corrupt = True
    if not only_build:
        _check_not_capturing(plan.name)
    host = re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname())
    unique = f"{host}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    staging = root / ".staging" / f"{plan.name}_{plan.key}.{unique}"
    library = _build(plan, staging)
    _publish(library, target, replace=corrupt or force)
    os.replace(staging / "key.json", target.parent / "key.json")  # what the key covered
    _record_in_index(root, plan, target)
    shutil.rmtree(staging, ignore_errors=True)
    if only_build:
        return BuildResult(plan.name, target, built=True)
    return _load(target)
