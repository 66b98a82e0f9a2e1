"""Finding the compilers: nvcc (with its CUDA runtime library) and the host C++ compiler.

nvcc is searched in this order: ``$CUDA_HOME/bin``, ``$CUDA_PATH/bin``, ``nvcc`` on ``PATH``
(its CUDA root is the directory above ``bin`` that holds ``include/cuda_runtime.h``), then
``/usr/local/cuda``. The host compiler is ``$CXX`` (default ``c++``); when ``CXX`` is set, nvcc
gets ``-ccbin $CXX`` so both sides of a module use the same compiler.

Compiler versions go into the cache key. ``nvcc --version`` takes ~150 ms, so each probe's output
is remembered on disk, keyed by the compiler's resolved path, size and mtime.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

DEFAULT_CUDA_ROOT = Path("/usr/local/cuda")
_SHELL_SAFE = re.compile(r"[A-Za-z0-9_./+@%,:=-]+")  # what a shell reads unquoted as one word
_LIB_SUBDIRS = ("lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib")


class JitToolchainError(RuntimeError):
    """A compiler or library needed to build a JIT module is missing."""


@dataclass(frozen=True)
class CudaToolkit:
    """A CUDA installation usable for building: nvcc and the directory holding libcudart."""

    root: Path
    nvcc: Path
    cudart_dir: Path


def _is_cuda_root(root: Path) -> bool:
    return (root / "bin" / "nvcc").is_file() and (root / "include" / "cuda_runtime.h").is_file()


def _candidate_roots() -> list[tuple[str, Path]]:
    candidates: list[tuple[str, Path]] = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        value = os.environ.get(var)
        if value:
            candidates.append((f"${var}={value}", Path(value)))
    on_path = shutil.which("nvcc")
    if on_path is not None:
        resolved = Path(on_path).resolve()
        candidates.append((f"nvcc on PATH ({on_path})", resolved.parent.parent))
    candidates.append(("the default", DEFAULT_CUDA_ROOT))
    return candidates


def _find_cudart_dir(root: Path) -> Path | None:
    for sub in _LIB_SUBDIRS:
        directory = root / sub
        if (directory / "libcudart.so").exists():
            return directory
    return None


@functools.cache
def find_cuda_toolkit() -> CudaToolkit:
    """The CUDA toolkit to build with; raises :class:`JitToolchainError` with a fix if absent."""
    tried: list[str] = []
    for label, root in _candidate_roots():
        if not _is_cuda_root(root):
            tried.append(f"{label}: {root} has no bin/nvcc with include/cuda_runtime.h")
            continue
        cudart_dir = _find_cudart_dir(root)
        if cudart_dir is None:
            tried.append(
                f"{label}: {root} has nvcc but no libcudart.so in {', '.join(_LIB_SUBDIRS)}"
            )
            continue
        return CudaToolkit(root=root, nvcc=root / "bin" / "nvcc", cudart_dir=cudart_dir)
    raise JitToolchainError(
        "nvcc (the CUDA toolkit) was not found, so JIT CUDA kernels cannot be compiled.\n"
        "Looked at:\n  "
        + "\n  ".join(tried)
        + "\nFix: install the CUDA toolkit (e.g. the cuda-toolkit package or the nvidia/cuda "
        "*-devel image) and set CUDA_HOME to its root, e.g. `export CUDA_HOME=/usr/local/cuda`. "
        "To use kernels on a machine without nvcc, build them elsewhere with "
        "`python -m jit_kernel precompile` and share JIT_KERNEL_CACHE_DIR."
    )


def shell_safe(text: str) -> bool:
    """True when ``text`` reads as one shell word without quoting (letters, digits, ``_./+@%,:=-``).

    nvcc runs its sub-steps through a shell with paths unquoted, so every path nvcc sees (its
    working directory, its own location, -I directories, -ccbin, TMPDIR) must pass this.
    """
    return _SHELL_SAFE.fullmatch(text) is not None


def host_compiler() -> str:
    """The host C++ compiler: ``$CXX`` or ``c++``."""
    return os.environ.get("CXX") or "c++"


def ccbin_flags() -> list[str]:
    """``["-ccbin", $CXX]`` when ``CXX`` is set, so nvcc's host pass uses the same compiler."""
    cxx = os.environ.get("CXX")
    return ["-ccbin", cxx] if cxx else []


def _resolve_program(program: str) -> Path:
    found = shutil.which(program)
    if found is None:
        raise JitToolchainError(
            f"compiler {program!r} was not found on PATH; install it or set CXX to a C++ compiler"
        )
    return Path(found).resolve()


def _probe_dir() -> Path:
    from jit_kernel.compiler.cache import cache_root

    return cache_root() / ".probes"


@functools.cache
def compiler_version(program: str) -> str:
    """``<program> --version`` output, memoized in-process and on disk."""
    path = _resolve_program(program)
    stat = path.stat()
    ident = f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\0{program}"
    memo = _probe_dir() / (hashlib.sha256(ident.encode()).hexdigest()[:24] + ".txt")
    try:
        return memo.read_text()
    except OSError:
        pass
    result = subprocess.run(
        [program, "--version"], capture_output=True, text=True, check=False, timeout=60
    )
    if result.returncode != 0:
        raise JitToolchainError(
            f"`{program} --version` failed with exit code {result.returncode}:\n{result.stderr}"
        )
    text = result.stdout
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        staged = memo.with_name(f"{memo.name}.{os.getpid()}.tmp")
        staged.write_text(text)
        os.replace(staged, memo)
    except OSError:
        pass  # a read-only cache only costs the probe next time
    return text


@functools.cache
def system_include_dirs(program: str) -> tuple[str, ...]:
    """The directories ``program`` searches for ``#include <...>`` of its own (real paths), as
    ``-v`` prints them; empty when it cannot tell."""
    try:
        done = subprocess.run(
            [program, "-E", "-x", "c++", "-v", os.devnull],
            capture_output=True,
            text=True,
            errors="replace",
            check=False,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ()
    found: list[str] = []
    listing = False
    for line in done.stderr.splitlines():
        if line.startswith("#include <...> search starts here:"):
            listing = True
        elif line.startswith("End of search list."):
            break
        elif listing and line.startswith(" "):
            found.append(os.path.realpath(line.strip()))
    return tuple(found)
