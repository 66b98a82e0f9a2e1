"""python -m jit_kernel precompile: the declaration contract, the CLI, and every real kernel."""

import os
import re
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from helpers_jit_toolchain import nvcc_missing_reason, run_python, subprocess_env, write_cpp_kernel

from ci_runner import register_cpu_ci
from jit_kernel.compiler import BuildResult, load_jit
from jit_kernel.compiler.arch import ArchInfo
from jit_kernel.tools.precompile import precompile
from jit_kernel.wrapper import cache_once, register_precompile
from jit_kernel.wrapper.registry import PrecompileSpec

register_cpu_ci(est_time=220, suite="base-a-test-cpu")

SUMMARY = re.compile(r"^built (\d+), cached (\d+), failed (\d+)$")


def summary_of(stdout: str) -> tuple[int, int, int]:
    last = stdout.strip().splitlines()[-1]
    match = SUMMARY.match(last)
    assert match, f"last line is not the summary: {last!r}"
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


def test_register_precompile_needs_a_cache_once_function():
    def plain(x):
        return x

    with pytest.raises(TypeError, match=r"'.*plain' has no __wrapped__; decorate .* @cache_once"):
        register_precompile(plain, [(1,)])


def test_register_precompile_needs_tuples():
    @cache_once
    def getter(x):
        return x

    with pytest.raises(TypeError, match=r"entry 1 is 2; each entry must be a tuple"):
        register_precompile(getter, [(1,), 2])


def test_precompile_builds_without_filling_the_in_process_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JIT_KERNEL_CACHE_DIR", str(tmp_path / "cache"))
    source = write_cpp_kernel(tmp_path / "k")
    calls = []

    @cache_once
    def getter(k: int):
        calls.append(k)
        return load_jit(
            "pc", str(k), cpp_files=[str(source)], cpp_wrappers=[("add_k", f"add_k<{k}>")]
        )

    specs = [PrecompileSpec(getter, (1,)), PrecompileSpec(getter, (2,))]
    first = precompile(specs, [ArchInfo(9, 0)], jobs=2)
    assert (first.built, first.cached, first.failures) == (2, 0, [])
    assert first.line == "built 2, cached 0, failed 0"
    second = precompile(specs, [ArchInfo(9, 0)], jobs=2)
    assert (second.built, second.cached) == (0, 2)
    module = getter(1)  # a real module: the precompile results were never memoized
    assert not isinstance(module, BuildResult)
    assert module.add_k(0) == 41
    assert calls == [1, 2, 1, 2, 1]


def test_precompile_says_which_module_it_cannot_prove(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("JIT_KERNEL_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "v.h").write_text("inline int v() { return 3; }\n")
    source = tmp_path / "k" / "m.cpp"
    source.write_text('#define V_HEADER "v.h"\n#include V_HEADER\nint value() { return v(); }\n')

    @cache_once
    def getter():
        return load_jit("unproven", cpp_files=[str(source)], cpp_wrappers=[("value", "value")])

    summary = precompile([PrecompileSpec(getter, ())], [ArchInfo(9, 0)], jobs=1)
    assert summary.line == "built 1, cached 0, failed 0"
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("built ") and "jit_unproven" in lines[0]
    assert lines[1] == (
        "        unproven #include: src0/m.cpp:2: #include V_HEADER: the file is named by a "
        "macro, which only the preprocessor can expand"
    )


def write_fake_package(root: Path, source: Path) -> None:
    """A kernel package with two good specs, one that fails to compile, one broken module, and
    infrastructure that must not be imported (a subpackage, a _-prefixed module)."""
    package = root / "fakekernels"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    # Infrastructure lives in subpackages and _-prefixed modules: precompile imports neither.
    (package / "helpers").mkdir()
    (package / "helpers" / "__init__.py").write_text(
        "raise RuntimeError('helpers must not be imported')\n"
    )
    (package / "_private.py").write_text("raise RuntimeError('_private must not be imported')\n")
    (package / "good.py").write_text(
        textwrap.dedent(
            f"""
            from jit_kernel.compiler import load_jit
            from jit_kernel.wrapper import cache_once, register_precompile

            @cache_once
            def _module(k):
                return load_jit("fake", str(k), cpp_files=[{str(source)!r}],
                                cpp_wrappers=[("add_k", f"add_k<{{k}}>")])

            @cache_once
            def _broken(k):
                return load_jit("fakebroken", cpp_files=[{str(source)!r}],
                                cpp_wrappers=[("f", "no_such_function")])

            register_precompile(_module, [(1,), (2,)])
            register_precompile(_broken, [(0,)])
            """
        )
    )
    (package / "bad_import.py").write_text("import no_such_module_xyz\n")


def test_cli_counts_built_cached_and_failed(tmp_path):
    source = write_cpp_kernel(tmp_path / "k")
    write_fake_package(tmp_path / "pkgroot", source)
    env = subprocess_env(tmp_path / "cache")
    env["PYTHONPATH"] += os.pathsep + str(tmp_path / "pkgroot")
    command = ["-m", "jit_kernel", "precompile", "--package", "fakekernels", "--arch", "9.0"]
    first = run_python([*command, "--jobs", "2"], env)
    assert first.returncode == 1, first.stderr
    assert summary_of(first.stdout) == (2, 0, 2)
    assert "built " in first.stdout and "jit_fake_1" in first.stdout
    assert "FAILED" in first.stdout and "fakekernels.good._broken(0)" in first.stdout
    assert "--- failed: import fakekernels.bad_import" in first.stderr
    assert "No module named 'no_such_module_xyz'" in first.stderr
    assert "JitCompileError" in first.stderr and "no_such_function" in first.stderr
    assert "must not be imported" not in first.stderr
    second = run_python([*command, "-j", "1"], env)
    assert summary_of(second.stdout) == (0, 2, 2)
    # --only imports and builds one wrapper module: bad_import is not even imported.
    only = run_python([*command, "--only", "good"], env)
    assert summary_of(only.stdout) == (0, 2, 1)
    assert "bad_import" not in only.stdout + only.stderr


def test_cli_only_lists_one_kernel(tmp_path):
    env = subprocess_env(tmp_path / "cache", CUDA_HOME=str(tmp_path / "no_cuda"))
    command = ["-m", "jit_kernel", "precompile", "--list", "--arch", "9.0"]
    result = run_python([*command, "--only", "add3"], env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "jit_kernel.add3._jit_add3_module()",
        "1 specializations (sm_90a)",
    ]
    both = run_python([*command, "--only", "add3,scale"], env)
    assert both.stdout.splitlines()[-1] == "2 specializations (sm_90a)"


def test_cli_list_needs_no_compiler(tmp_path):
    result = run_python(
        ["-m", "jit_kernel", "precompile", "--list", "--arch", "9.0"],
        subprocess_env(tmp_path / "cache", CUDA_HOME=str(tmp_path / "no_cuda")),
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[-1].endswith("specializations (sm_90a)")
    assert any(line.startswith("jit_kernel.") for line in lines[:-1])
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--arch", "hopper"], "error: --arch: 'hopper' is not a CUDA architecture"),
        (["--arch", "9.0", "--jobs", "0"], "--jobs must be at least 1, got 0"),
        (
            ["--arch", "9.0", "--package", "no_such_pkg_xyz"],
            "error: --package no_such_pkg_xyz: cannot import it",
        ),
        (
            ["--arch", "9.0", "--package", "jit_kernel.scale"],
            "error: --package jit_kernel.scale: is a module",
        ),
        (
            ["--arch", "9.0", "--only", "add4"],
            "error: --only add4: no such wrapper module in jit_kernel; choose from activation, "
            "add3, add_constant,",
        ),
    ],
)
def test_cli_usage_errors(tmp_path, args, message):
    result = run_python(
        ["-m", "jit_kernel", "precompile", *args], subprocess_env(tmp_path / "cache")
    )
    assert result.returncode == 2
    assert message in result.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a visible GPU")
def test_cli_without_gpu_or_arch_says_to_pass_arch(tmp_path):
    env = subprocess_env(tmp_path / "cache")
    env.pop("TVM_FFI_CUDA_ARCH_LIST", None)
    result = run_python(["-m", "jit_kernel", "precompile"], env)
    assert result.returncode == 2
    assert "cannot determine the CUDA target architecture" in result.stderr
    assert "--arch" in result.stderr


@pytest.mark.skipif(nvcc_missing_reason() is not None, reason=str(nvcc_missing_reason()))
def test_every_registered_kernel_compiles_for_hopper(tmp_path):
    """CPU CI's proof that every kernel compiles. A configured JIT_KERNEL_CACHE_DIR is reused:
    the key covers all the content, so a hit means exactly this source compiled before."""
    cache = Path(os.environ.get("JIT_KERNEL_CACHE_DIR") or tmp_path / "cache")
    env = subprocess_env(cache)
    listing = run_python(["-m", "jit_kernel", "precompile", "--list", "--arch", "9.0"], env)
    assert listing.returncode == 0, listing.stderr
    count = int(listing.stdout.strip().splitlines()[-1].split()[0])
    assert count > 0, "no kernel declares its specializations with register_precompile"
    result = run_python(
        ["-m", "jit_kernel", "precompile", "--arch", "9.0", "--jobs", str(os.cpu_count() or 2)],
        env,
        timeout=900,
    )
    print(result.stdout)
    assert result.returncode == 0, result.stdout + result.stderr
    built, cached, failed = summary_of(result.stdout)
    assert failed == 0 and built + cached == count


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
