"""Toolchain discovery: nvcc and libcudart, -ccbin from CXX, version probes, clear errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers_jit_toolchain import nvcc_missing_reason, write_cuda_kernel

import jit_kernel.compiler.toolchain as toolchain
from ci_runner import register_cpu_ci
from jit_kernel.compiler import JitToolchainError, build_only, load_jit, override_arch
from jit_kernel.compiler.toolchain import ccbin_flags, compiler_version, find_cuda_toolkit

register_cpu_ci(est_time=11, suite="base-a-test-cpu")


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """No CUDA anywhere unless the test creates it; discovery caches cleared around the test."""
    for var in ("CUDA_HOME", "CUDA_PATH", "CXX"):
        monkeypatch.delenv(var, raising=False)
    empty_bin = tmp_path / "empty_bin"
    empty_bin.mkdir()
    monkeypatch.setenv("PATH", str(empty_bin))
    monkeypatch.setattr(toolchain, "DEFAULT_CUDA_ROOT", tmp_path / "no_default_cuda")
    monkeypatch.setenv("JIT_KERNEL_CACHE_DIR", str(tmp_path / "cache"))
    find_cuda_toolkit.cache_clear()
    compiler_version.cache_clear()
    yield tmp_path
    find_cuda_toolkit.cache_clear()
    compiler_version.cache_clear()


def fake_toolkit(root: Path, lib_dir: str | None = "lib64") -> Path:
    (root / "bin").mkdir(parents=True)
    nvcc = root / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 99.9'\n")
    nvcc.chmod(0o755)
    (root / "include").mkdir()
    (root / "include" / "cuda_runtime.h").write_text("")
    if lib_dir is not None:
        (root / lib_dir).mkdir(parents=True)
        (root / lib_dir / "libcudart.so").write_text("")
    return root


def test_missing_nvcc_says_where_it_looked_and_how_to_fix(isolated, monkeypatch):
    monkeypatch.setenv("CUDA_HOME", str(isolated / "nowhere"))
    with pytest.raises(JitToolchainError) as info:
        find_cuda_toolkit()
    message = str(info.value)
    assert "nvcc (the CUDA toolkit) was not found" in message
    assert f"$CUDA_HOME={isolated / 'nowhere'}" in message
    assert "no_default_cuda" in message
    assert "set CUDA_HOME" in message and "python -m jit_kernel precompile" in message


def test_cuda_module_without_nvcc_raises_the_toolchain_error(isolated):
    source = write_cuda_kernel(isolated / "k")
    with override_arch("9.0"), pytest.raises(JitToolchainError, match=r"nvcc .* not found"):
        load_jit("fill", cuda_files=[str(source)], cuda_wrappers=[("v", "host_value<1>")])


def test_cuda_home_then_cuda_path_then_path(isolated, monkeypatch):
    home = fake_toolkit(isolated / "home")
    other = fake_toolkit(isolated / "other", lib_dir="targets/x86_64-linux/lib")
    monkeypatch.setenv("CUDA_PATH", str(other))
    assert find_cuda_toolkit().root == other
    assert find_cuda_toolkit().cudart_dir == other / "targets/x86_64-linux/lib"
    find_cuda_toolkit.cache_clear()
    monkeypatch.setenv("CUDA_HOME", str(home))
    toolkit = find_cuda_toolkit()
    assert (toolkit.root, toolkit.nvcc, toolkit.cudart_dir) == (
        home,
        home / "bin" / "nvcc",
        home / "lib64",
    )


def test_nvcc_on_path_finds_its_root(isolated, monkeypatch):
    root = fake_toolkit(isolated / "cuda-x")
    monkeypatch.setenv("PATH", str(root / "bin"))
    assert find_cuda_toolkit().root == root


def test_a_wrapper_script_on_path_falls_through_to_the_default(isolated, monkeypatch):
    wrapper_bin = isolated / "wrapper" / "bin"
    wrapper_bin.mkdir(parents=True)
    (wrapper_bin / "nvcc").write_text('#!/bin/sh\nexec nvcc "$@"\n')
    (wrapper_bin / "nvcc").chmod(0o755)
    monkeypatch.setenv("PATH", str(wrapper_bin))
    default = fake_toolkit(isolated / "default_cuda")
    monkeypatch.setattr(toolchain, "DEFAULT_CUDA_ROOT", default)
    assert find_cuda_toolkit().root == default


def test_nvcc_without_cudart_is_reported(isolated, monkeypatch):
    monkeypatch.setenv("CUDA_HOME", str(fake_toolkit(isolated / "nolib", lib_dir=None)))
    with pytest.raises(JitToolchainError, match=r"has nvcc but no libcudart\.so"):
        find_cuda_toolkit()


def test_ccbin_follows_cxx(monkeypatch):
    monkeypatch.delenv("CXX", raising=False)
    assert ccbin_flags() == []
    monkeypatch.setenv("CXX", "g++-12")
    assert ccbin_flags() == ["-ccbin", "g++-12"]


def test_missing_host_compiler_is_reported(isolated, monkeypatch):
    monkeypatch.setenv("CXX", "no-such-compiler-xyz")
    with pytest.raises(JitToolchainError, match="'no-such-compiler-xyz' was not found on PATH"):
        compiler_version("no-such-compiler-xyz")


def test_missing_ninja_says_how_to_install_it(monkeypatch):
    import builtins

    from jit_kernel.compiler import build as ninja_build

    real_import = builtins.__import__

    def no_ninja(name, *args, **kwargs):
        if name == "ninja":
            raise ImportError("No module named 'ninja'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(ninja_build.shutil, "which", lambda _name: None)
    monkeypatch.setattr(builtins, "__import__", no_ninja)
    with pytest.raises(RuntimeError, match=r"ninja not found: install it with `pip install ninja`"):
        ninja_build.find_ninja()


def test_version_probe_is_remembered_on_disk(isolated, monkeypatch):
    root = fake_toolkit(isolated / "cuda")
    nvcc = str(root / "bin" / "nvcc")
    assert "release 99.9" in compiler_version(nvcc)
    compiler_version.cache_clear()

    def no_subprocess(*args, **kwargs):
        raise AssertionError("the probe must come from the disk memo")

    monkeypatch.setattr(subprocess, "run", no_subprocess)
    assert "release 99.9" in compiler_version(nvcc)


@pytest.mark.skipif(nvcc_missing_reason() is not None, reason=str(nvcc_missing_reason()))
def test_real_cuda_build_uses_arch_and_ccbin(tmp_path, monkeypatch):
    monkeypatch.setenv("JIT_KERNEL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CXX", "g++")
    source = write_cuda_kernel(tmp_path / "k")
    with override_arch("9.0"), build_only():
        result = load_jit("fill", cuda_files=[str(source)], cuda_wrappers=[("v", "host_value<1>")])
    assert result.built and result.path.is_file()
    key = json.loads((result.path.parent / "key.json").read_text())
    assert key["arch"] == "9.0a"
    assert key["flags"]["cuda"][:2] == ["-ccbin", "g++"]
    assert "-gencode=arch=compute_90a,code=sm_90a" in key["flags"]["cuda"]
    assert "-DSGL_CUDA_ARCH=900" in key["flags"]["cuda"]
    assert "Cuda compilation tools" in key["nvcc"]
    assert all(str(tmp_path) not in json.dumps(value) for value in key.values())
    monkeypatch.setenv("CXX", "c++")
    with override_arch("9.0"):
        from jit_kernel.compiler import jit_module_path

        other = jit_module_path(
            "fill", cuda_files=[str(source)], cuda_wrappers=[("v", "host_value<1>")]
        )
    assert other != result.path, "the host compiler is part of the key"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
