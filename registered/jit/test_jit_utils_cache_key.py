"""The build cache: right in both directions, atomic, diagnosable.

Host-only C++ modules (g++, ~1 s each) exercise the same key and publish code as CUDA ones.
"""

import os
import shutil
import sys
import time
from pathlib import Path

import pytest
import torch
from helpers_jit_toolchain import run_python, subprocess_env, write_cpp_kernel

import jit_kernel.compiler.load as compile_mod
import jit_kernel.compiler.plan as plan_mod
from ci_runner import register_cpu_ci
from jit_kernel.compiler import (
    JitCompileError,
    build_only,
    jit_module_path,
    load_jit,
    make_cpp_args,
)

register_cpu_ci(est_time=29, suite="base-a-test-cpu")


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("JIT_KERNEL_CACHE_DIR", str(root))
    monkeypatch.delenv("JIT_KERNEL_FORCE_REBUILD", raising=False)
    return root


def add_call(source: Path, k: int = 2, **kwargs) -> tuple[tuple[str, ...], dict]:
    args = make_cpp_args(k)
    call = {"cpp_files": [str(source)], "cpp_wrappers": [("add_k", f"add_k<{args}>")]}
    return ("add", *args), {**call, **kwargs}


def build_add(source: Path, k: int = 2, **kwargs):
    markers, call = add_call(source, k, **kwargs)
    return load_jit(*markers, **call)


def path_of_add(source: Path, k: int = 2, **kwargs) -> Path:
    markers, call = add_call(source, k, **kwargs)
    return jit_module_path(*markers, **call)


def built_modules(root: Path) -> list[Path]:
    return sorted(root.glob("jit_*/*.so"))


def test_build_then_hit(cache, tmp_path):
    source = write_cpp_kernel(tmp_path / "k")
    with build_only():
        first = build_add(source)
        second = build_add(source)
    assert first.built and not second.built
    assert first.path == second.path
    assert first.path == cache / first.path.parent.name / "jit_add_2.so"
    assert built_modules(cache) == [first.path]
    assert not any((cache / ".staging").iterdir()), "staging directories are cleaned up"
    assert build_add(source).add_k(1) == 1 + 2 + 40
    assert path_of_add(source) == first.path


def test_warm_load_is_fast_and_runs_no_compiler(cache, tmp_path, monkeypatch):
    source = write_cpp_kernel(tmp_path / "k")
    build_add(source)

    def no_build(*args, **kwargs):
        raise AssertionError("a warm load must not build")

    monkeypatch.setattr(compile_mod, "_build", no_build)
    begin = time.perf_counter()
    module = build_add(source)
    elapsed = time.perf_counter() - begin
    assert module.add_k(0) == 42
    print(f"warm load_jit: {elapsed * 1000:.1f} ms")
    assert elapsed < 0.5


def test_editing_an_included_header_rebuilds(cache, tmp_path):
    source = write_cpp_kernel(tmp_path / "k", base=40)
    assert build_add(source).add_k(0) == 42
    write_cpp_kernel(tmp_path / "k", base=100)  # same .cpp, new inc/base.h
    with build_only():
        result = build_add(source)
    assert result.built
    assert build_add(source).add_k(0) == 102
    assert len(built_modules(cache)) == 2


def test_moving_the_tree_keeps_the_key(cache, tmp_path):
    source = write_cpp_kernel(tmp_path / "a" / "k")
    original = path_of_add(source)
    shutil.move(tmp_path / "a", tmp_path / "b")
    assert path_of_add(tmp_path / "b" / "k" / "add.cpp") == original


def test_flags_template_args_and_headers_change_the_key(cache, tmp_path):
    source = write_cpp_kernel(tmp_path / "k")
    base = path_of_add(source)
    variants = {
        path_of_add(source, extra_cflags=["-DEXTRA=1"]),
        path_of_add(source, extra_ldflags=["-lm"]),
        path_of_add(source, k=3),
    }
    write_cpp_kernel(tmp_path / "k", base=41)
    variants.add(path_of_add(source))
    assert base not in variants and len(variants) == 4


def test_compiler_version_is_part_of_the_key(cache, tmp_path, monkeypatch):
    source = write_cpp_kernel(tmp_path / "k")
    before = path_of_add(source)
    monkeypatch.setattr(plan_mod, "compiler_version", lambda program: "g++ 99.0 (test)")
    assert path_of_add(source) != before


def test_unrelated_files_do_not_change_the_key(cache, tmp_path):
    source = write_cpp_kernel(tmp_path / "k")
    before = path_of_add(source)
    (tmp_path / "k" / "inc" / "unused.h").write_text("#error not included\n")
    (tmp_path / "k" / "notes.txt").write_text("hello")
    assert path_of_add(source) == before


def test_relocated_package_checkout_hits_the_cache(tmp_path):
    """Copy jit_kernel + ci_runner + cpp_includes, build one of its csrc kernels, move the copy: a cache hit."""
    from helpers_jit_toolchain import REPO_ROOT

    checkout = tmp_path / "checkout_a"
    for package in ("jit_kernel", "ci_runner", "cpp_includes"):
        shutil.copytree(
            REPO_ROOT / package, checkout / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    write_cpp_kernel(checkout / "jit_kernel" / "csrc" / "reloc_probe")
    script = (
        "from jit_kernel.compiler import build_only, load_jit, KERNEL_ROOT\n"
        "with build_only():\n"
        "    r = load_jit('reloc', cpp_files=['reloc_probe/add.cpp'],"
        " cpp_wrappers=[('add_k', 'add_k<1>')])\n"
        "print(KERNEL_ROOT, r.built, r.path)\n"
    )
    cache_dir = tmp_path / "cache"
    env = subprocess_env(cache_dir)
    others = [p for p in env["PYTHONPATH"].split(os.pathsep) if p and Path(p) != REPO_ROOT]
    env["PYTHONPATH"] = os.pathsep.join([str(checkout), *others])
    first = run_python(["-c", script], env, cwd=checkout)
    assert first.returncode == 0, first.stderr
    shutil.move(checkout, tmp_path / "checkout_b")
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "checkout_b"), *others])
    second = run_python(["-c", script], env, cwd=tmp_path / "checkout_b")
    assert second.returncode == 0, second.stderr
    root_a, built_a, path_a = first.stdout.split()
    root_b, built_b, path_b = second.stdout.split()
    assert root_a != root_b
    assert (built_a, built_b) == ("True", "False")
    assert path_a == path_b


def test_corrupt_cached_library_is_rebuilt(cache, tmp_path, caplog):
    source = write_cpp_kernel(tmp_path / "k")
    with build_only():
        result = build_add(source)
    staged = result.path.with_name("garbage")
    staged.write_bytes(b"not an ELF file")
    os.replace(staged, result.path)
    module = build_add(source)
    assert module.add_k(0) == 42
    assert f"cached JIT module {result.path} is damaged (15 bytes, " in caplog.text
    assert "rebuilding" in caplog.text
    assert result.path.read_bytes()[:4] == b"\x7fELF"


def test_force_rebuild_env(cache, tmp_path, monkeypatch):
    source = write_cpp_kernel(tmp_path / "k")
    (cache / path_of_add(source).parent.name).mkdir(parents=True)
    path_of_add(source).write_bytes(b"stale")  # a hit unless the rebuild is forced
    monkeypatch.setenv("JIT_KERNEL_FORCE_REBUILD", "1")
    assert build_add(source).add_k(0) == 42


def test_build_directory_replaces_the_cache_root(cache, tmp_path):
    source = write_cpp_kernel(tmp_path / "k")
    with build_only():
        result = build_add(source, build_directory=tmp_path / "elsewhere")
    assert result.path.parent.parent == tmp_path / "elsewhere"
    assert not cache.exists() or not built_modules(cache)


def test_compile_error_reports_command_output_and_source(cache, tmp_path):
    broken = tmp_path / "broken.cpp"
    broken.write_text("int broken( { return 1; }\n")
    with pytest.raises(JitCompileError) as info:
        load_jit("broken", cpp_files=[str(broken)], cpp_wrappers=[("f", "broken")])
    message = str(info.value)
    assert "failed to build JIT module 'jit_broken'" in message
    assert "command (exit code 1):" in message and " -c " in message and "main.cpp" in message
    assert "compiler output:" in message and "error" in message
    source_line = next(line for line in message.splitlines() if line.startswith("generated source"))
    generated = Path(source_line.split(": ", 1)[1])
    assert generated.is_file()
    assert str(broken) in generated.read_text()
    assert not built_modules(cache)


def test_a_refused_build_is_not_compiled_again_in_the_process(cache, tmp_path, monkeypatch):
    broken = tmp_path / "refused.cpp"
    broken.write_text("int refused( { return 1; }\n")
    builds = []
    real_run_ninja = compile_mod.run_ninja
    monkeypatch.setattr(
        compile_mod, "run_ninja", lambda *a, **k: builds.append(1) or real_run_ninja(*a, **k)
    )

    def build():
        return load_jit("refused", cpp_files=[str(broken)], cpp_wrappers=[("f", "refused")])

    with pytest.raises(JitCompileError) as first:
        build()
    with pytest.raises(JitCompileError, match="not compiled again") as second:
        build()
    assert len(builds) == 1  # the second call raised without running the compiler
    assert str(first.value) in str(second.value)  # with the first failure's full report
    assert "JIT_KERNEL_FORCE_REBUILD=1 to retry" in str(second.value)

    monkeypatch.setenv("JIT_KERNEL_FORCE_REBUILD", "1")
    with pytest.raises(JitCompileError, match="failed to build") as forced:
        build()
    assert len(builds) == 2 and "not compiled again" not in str(forced.value)
    monkeypatch.delenv("JIT_KERNEL_FORCE_REBUILD")

    broken.write_text("int refused() { return 1; }\n")  # fixed: a new key, built
    assert build().f() == 1
    assert len(builds) == 3


def test_a_compiler_killed_by_a_signal_is_tried_again(cache, tmp_path, monkeypatch):
    def killed(staging, steps, verbose=False):
        raise compile_mod.BuildStepError(steps[0], 137, "nvcc: Killed")

    real_run_ninja = compile_mod.run_ninja
    monkeypatch.setattr(compile_mod, "run_ninja", killed)
    source = write_cpp_kernel(tmp_path / "k")
    for _ in range(2):
        with pytest.raises(JitCompileError) as info:
            build_add(source)
        assert "not compiled again" not in str(info.value)
    monkeypatch.setattr(compile_mod, "run_ninja", real_run_ninja)
    assert build_add(source).add_k(0) == 42


def test_cache_miss_during_graph_capture_says_to_precompile(cache, tmp_path, monkeypatch):
    source = write_cpp_kernel(tmp_path / "k")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
    with pytest.raises(RuntimeError, match=r"capturing a graph.*python -m jit_kernel precompile"):
        build_add(source)


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"markers": ("a b",)}, ValueError, r"marker 0 is 'a b'"),
        ({"markers": ("ok", 3)}, ValueError, r"marker 1 is 3"),
        ({"markers": ("x/../y",)}, ValueError, r"marker 0 is 'x/../y'"),
        ({"markers": ()}, ValueError, "at least one marker"),
        ({"cpp_files": ["no/such.cuh"]}, FileNotFoundError, r"cpp_files entry 'no/such.cuh'"),
        ({"cpp_wrappers": [("f",)]}, TypeError, r"cpp_wrappers\[0\] is \('f',\)"),
        ({"cpp_wrappers": [("bad name", "f")]}, ValueError, "export name 'bad name'"),
    ],
)
def test_bad_arguments_are_named(cache, tmp_path, kwargs, error, pattern):
    source = write_cpp_kernel(tmp_path / "k")
    markers = kwargs.pop("markers", ("ok",))
    call = {"cpp_files": [str(source)], "cpp_wrappers": [("f", "add_k<1>")], **kwargs}
    with pytest.raises(error, match=pattern):
        load_jit(*markers, **call)


def test_module_names_are_safe_and_bounded():
    assert plan_mod.module_name(["scale", "fp16_t", "true"]) == "jit_scale_fp16_t_true"
    odd = plan_mod.module_name(["k", "-3", "1e-06", "ns::T"])
    assert odd.startswith("jit_k_3_1e_06_ns_T_") and odd.replace("_", "").isalnum()
    long_name = plan_mod.module_name(["k", *[str(i) for i in range(200)]])
    assert len(long_name) <= 96
    assert long_name != plan_mod.module_name(["k", *[str(i) for i in range(201)]])


def test_without_a_toolchain_a_module_built_elsewhere_still_loads(cache, tmp_path, monkeypatch):
    """A driver-only machine (no compiler) loads what precompile put into a shared cache."""
    source = write_cpp_kernel(tmp_path / "k")
    built = build_add(source)
    expected = built.add_k(40)  # x + K + base_value()
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    reused = build_add(source)
    assert reused.add_k(40) == expected
    assert built_modules(cache) == [path_of_add_with_compiler(source, monkeypatch)]


def path_of_add_with_compiler(source: Path, monkeypatch) -> Path:
    monkeypatch.delenv("CXX")
    return path_of_add(source)


def test_without_a_toolchain_and_no_prebuilt_module_the_error_says_what_was_looked_for(
    cache, tmp_path, monkeypatch
):
    source = write_cpp_kernel(tmp_path / "k")
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    with pytest.raises(RuntimeError) as info:
        build_add(source)
    message = str(info.value)
    assert "no-such-compiler" in message and "set CXX" in message
    assert "No prebuilt 'jit_add_2' for these sources, flags and arch was found in" in message
    assert str(cache / "by-source") in message
    with build_only(), pytest.raises(RuntimeError, match="no-such-compiler"):
        build_add(source)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
