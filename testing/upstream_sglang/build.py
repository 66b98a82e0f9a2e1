"""Compile one upstream module the way upstream's ``load_jit`` does, with tvm-ffi's own builder.

Upstream (``sglang/kernels/jit/utils/compile``) generates a translation unit that includes
tvm-ffi's headers and the kernel's ``.cuh`` and exports each entry point with
``TVM_FFI_DLL_EXPORT_TYPED_FUNC(name, (Kernel<args>::run));`` inside ``namespace sglang``, and
compiles it with ``-DSGL_CUDA_ARCH=<arch> -std=c++20 -O3 --expt-relaxed-constexpr`` (plus
``--use_fast_math`` for the activations) for one target, ``sm_90a`` on an H100. We generate the
same text and flags and hand them to ``tvm_ffi.cpp.build`` (not our ``load_jit``: our include
folder also provides ``<sgl_kernel/...>`` and would shadow upstream's), with upstream's
``include/`` and ``csrc/`` as the only include folders besides tvm-ffi's.

Builds land in ``$BENCH_SGLANG_CACHE`` (default ``~/.cache/upstream-sglang-jit``), apart from
ours, as ``<module>_<key16>/<module>.so`` beside the ``build.ninja`` that built it; the key covers the generated text, the flags, the
target, every upstream header the module can include and the tvm-ffi and nvcc versions, so a
build found there is loaded as it is.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jit_kernel.compiler import ArchInfo
from jit_kernel.compiler.arch import ARCH_LIST_ENV
from jit_kernel.compiler.toolchain import compiler_version, find_cuda_toolkit
from testing.upstream_sglang.source import UpstreamSource

CACHE_ENV = "BENCH_SGLANG_CACHE"
FFI_HEADERS = (
    "tvm/ffi/container/tensor.h",
    "tvm/ffi/dtype.h",
    "tvm/ffi/error.h",
    "tvm/ffi/extra/c_env_api.h",
    "tvm/ffi/function.h",
)
BASE_CUDA_FLAGS = ("-std=c++20", "-O3", "--expt-relaxed-constexpr")
FAST_MATH_FLAG = "--use_fast_math"


class UpstreamBuildError(RuntimeError):
    """nvcc rejected an upstream module, or the built library lacks an export."""


@dataclass(frozen=True)
class ModuleSpec:
    """One upstream module: what upstream's ``load_jit`` is called with.

    ``markers``: the module's name and template arguments, as upstream passes them
    (``("rmsnorm", "4096", "true", "bf16_t")``); ``header``: the kernel's file under ``csrc/``;
    ``exports``: ``(export name, C++ function)`` pairs; ``fast_math``: add ``--use_fast_math``.
    """

    markers: tuple[str, ...]
    header: str
    exports: tuple[tuple[str, str], ...]
    fast_math: bool = False

    @property
    def name(self) -> str:
        """A file-name-safe module name: ``sgl_`` + the markers joined by ``_``."""
        return "sgl_" + re.sub(r"[^A-Za-z0-9_]+", "_", "_".join(self.markers))


def translation_unit(spec: ModuleSpec) -> str:
    """The generated source: tvm-ffi headers, the kernel header, one export per entry point."""
    lines = [f"#include <{header}>" for header in FFI_HEADERS]
    lines += [f'#include "{spec.header}"', "namespace sglang {"]
    lines += [f"TVM_FFI_DLL_EXPORT_TYPED_FUNC({name}, ({cpp}));" for name, cpp in spec.exports]
    lines.append("}  // namespace sglang")
    return "\n".join(lines) + "\n"


def cuda_flags(spec: ModuleSpec, arch: ArchInfo) -> list[str]:
    """nvcc flags besides the target (tvm-ffi adds ``-gencode`` for ``$TVM_FFI_CUDA_ARCH_LIST``)."""
    return [arch.define_flag, *BASE_CUDA_FLAGS, *([FAST_MATH_FLAG] if spec.fast_math else [])]


def cache_root() -> Path:
    """``$BENCH_SGLANG_CACHE``, else ``$XDG_CACHE_HOME`` or ``~/.cache``, ``/upstream-sglang-jit``."""
    value = os.environ.get(CACHE_ENV)
    if value:
        return Path(value).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser()
    return base / "upstream-sglang-jit"


@functools.cache
def _tool_versions() -> dict[str, str]:
    import tvm_ffi

    return {
        "tvm_ffi": tvm_ffi.__version__,
        "nvcc": compiler_version(str(find_cuda_toolkit().nvcc)),
    }


def library_path(spec: ModuleSpec, source: UpstreamSource, arch: ArchInfo) -> Path:
    """Where the build of ``spec`` for ``arch`` lives (it may not exist yet)."""
    material: dict[str, Any] = {
        "tu": translation_unit(spec),
        "flags": cuda_flags(spec, arch),
        "arch": arch.target_name,
        "sources": source.digest(spec.header),
        **_tool_versions(),
    }
    key = hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:16]
    return cache_root() / f"{spec.name}_{key}" / f"{spec.name}.so"


@contextmanager
def _toolchain_env(arch: ArchInfo) -> Iterator[None]:
    """Inside the block tvm-ffi targets exactly ``arch`` and uses our CUDA toolkit.

    ``$TVM_FFI_CUDA_ARCH_LIST`` = ``arch`` (tvm-ffi's ``-gencode``); ``$CUDA_HOME`` = the
    toolkit our builds use, unless ``CUDA_HOME``/``CUDA_PATH`` is set (tvm-ffi would otherwise
    take the folder above ``nvcc`` on ``PATH``, which may be a bare symlink farm).
    """
    wanted = {ARCH_LIST_ENV: arch.target_name}
    if not (os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")):
        wanted["CUDA_HOME"] = str(find_cuda_toolkit().root)
    before = {name: os.environ.get(name) for name in wanted}
    os.environ.update(wanted)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _build_one(spec: ModuleSpec, source: UpstreamSource, arch: ArchInfo) -> Path:
    """Build ``spec`` unless its library exists; the library appears whole (an atomic rename)."""
    import tvm_ffi.cpp

    library = library_path(spec, source, arch)
    if library.is_file():
        return library
    staging = library.parent / "build"
    staging.mkdir(parents=True, exist_ok=True)
    unit = staging / f"{spec.name}.cu"
    unit.write_text(translation_unit(spec))
    cudart = find_cuda_toolkit().cudart_dir
    try:
        built = tvm_ffi.cpp.build(
            spec.name,
            cuda_files=[str(unit)],
            extra_cuda_cflags=cuda_flags(spec, arch),
            # our toolkit's cudart, whatever CUDA root tvm-ffi settled on; loadable without torch
            extra_ldflags=[f"-L{cudart}", f"-Wl,-rpath,{cudart}"],
            extra_include_paths=[str(source.include_dir), str(source.csrc_dir)],
            build_directory=str(staging),
            backend="cuda",
        )
    except RuntimeError as error:
        raise UpstreamBuildError(
            f"upstream module {spec.name} ({spec.header}) did not build in {staging}:\n{error}"
        ) from None
    os.replace(staging / "build.ninja", library.with_name("build.ninja"))  # the commands used
    os.replace(built, library)
    shutil.rmtree(staging, ignore_errors=True)  # objects and ninja's state
    return library


_loaded: dict[Path, Any] = {}
_failed: dict[Path, UpstreamBuildError] = {}  # builds that failed in this process: not retried
_load_lock = threading.Lock()


def build_all(
    specs: Iterable[ModuleSpec], source: UpstreamSource, arch: ArchInfo, jobs: int | None = None
) -> dict[str, Path | UpstreamBuildError]:
    """Build every distinct module, ``jobs`` at a time (default: one per CPU); no GPU needed.

    Returns the library, or the error, by module name.
    """
    unique = {spec.name: spec for spec in specs}
    results: dict[str, Path | UpstreamBuildError] = {}

    def one(spec: ModuleSpec) -> None:
        try:
            results[spec.name] = _build_one(spec, source, arch)
        except UpstreamBuildError as error:
            results[spec.name] = _failed[library_path(spec, source, arch)] = error

    with _toolchain_env(arch), ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        list(pool.map(one, unique.values()))
    return results


def load(spec: ModuleSpec, source: UpstreamSource, arch: ArchInfo) -> Any:
    """The loaded module (built first if needed); raises if it did not build or lacks an export."""
    import tvm_ffi

    library = library_path(spec, source, arch)
    with _load_lock:
        if library in _failed:
            raise _failed[library]
        if library not in _loaded:
            if not library.is_file():
                result = build_all([spec], source, arch)[spec.name]
                if isinstance(result, UpstreamBuildError):
                    raise result
            module = tvm_ffi.load_module(str(library))
            _check_exports(module, spec.name, [name for name, _ in spec.exports])
            _loaded[library] = module
        return _loaded[library]


def _check_exports(module: Any, name: str, exports: Sequence[str]) -> None:
    missing = [export for export in exports if not hasattr(module, export)]
    if missing:
        raise UpstreamBuildError(f"upstream module {name}: no export {', '.join(missing)}")
