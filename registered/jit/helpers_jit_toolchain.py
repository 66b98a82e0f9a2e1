"""Shared helpers for the JIT toolchain CPU tests: tiny kernels in temp dirs, subprocess runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jit_kernel
from jit_kernel.compiler.toolchain import JitToolchainError, find_cuda_toolkit

REPO_ROOT = Path(jit_kernel.__file__).resolve().parent.parent


def nvcc_missing_reason() -> str | None:
    """None when nvcc can be found, else why the CUDA tests are skipped."""
    try:
        find_cuda_toolkit()
    except JitToolchainError as error:
        return f"nvcc not available: {str(error).splitlines()[0]}"
    return None


def write_cpp_kernel(directory: Path, base: int = 40) -> Path:
    """A host-only kernel ``add.cpp`` including ``inc/base.h``; returns the .cpp path."""
    (directory / "inc").mkdir(parents=True, exist_ok=True)
    (directory / "inc" / "base.h").write_text(
        f"#pragma once\ninline int64_t base_value() {{ return {base}; }}\n"
    )
    source = directory / "add.cpp"
    source.write_text(
        "#include <cstdint>\n"
        '#include "inc/base.h"\n'
        "template <int K>\n"
        "int64_t add_k(int64_t x) { return x + K + base_value(); }\n"
    )
    return source


def write_cuda_kernel(directory: Path) -> Path:
    """A tiny CUDA kernel file ``fill.cuh`` with a host entry point; returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    source = directory / "fill.cuh"
    source.write_text(
        "#include <cstdint>\n"
        "template <int K>\n"
        "__global__ void fill_kernel(int* out) { out[threadIdx.x] = K; }\n"
        "template <int K>\n"
        "int64_t host_value(int64_t x) { return x + K + SGL_CUDA_ARCH; }\n"
    )
    return source


def subprocess_env(cache_dir: Path, **extra: str) -> dict[str, str]:
    """The current environment with the repo on PYTHONPATH and a private JIT cache."""
    env = dict(os.environ)
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = f"{REPO_ROOT}{os.pathsep}{existing}" if existing else str(REPO_ROOT)
    env["JIT_KERNEL_CACHE_DIR"] = str(cache_dir)
    env.update(extra)
    return env


def run_python(
    args: list[str], env: dict[str, str], cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run ``python <args>`` and capture its output."""
    return subprocess.run(
        [sys.executable, *args],
        env=env,
        cwd=cwd or REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
