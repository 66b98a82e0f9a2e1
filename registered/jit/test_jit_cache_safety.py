"""The JIT cache against hostile input: includes hidden behind comments or line continuations
still key the module; no environment path reaches a shell (nvcc runs its sub-steps through one);
a truncated or foreign cached library is rebuilt, never loaded; ``MAX_JOBS`` is checked."""

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers_jit_toolchain import nvcc_missing_reason, run_python, subprocess_env

from ci_runner import register_cpu_ci
from cpp_includes import scan_source
from jit_kernel.compiler import JitToolchainError, build_only, jit_module_path, load_jit
from jit_kernel.compiler.build import _jobs, nvcc_command
from jit_kernel.compiler.cache import library_problem, read_record, record_path
from jit_kernel.compiler.toolchain import shell_safe

register_cpu_ci(est_time=30, suite="base-a-test-cpu")

INJECTION = "$(touch PWNED)"  # a directory name a shell would run


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (b'#include /* base value */ "dep.h"\n', [(b'"', "dep.h")]),
        (b'#include \\\n  "dep.h"\n', [(b'"', "dep.h")]),
        (b"#  /* why */ include <sgl_kernel/x.h>\n", [(b"<", "sgl_kernel/x.h")]),
        (b'#inc\\\nlude "dep.h"\n', [(b'"', "dep.h")]),
        (b'// #include "old.h"\n/*\n#include "older.h"\n*/\n#include "dep.h"\n', [(b'"', "dep.h")]),
        (b'auto s = "/*";\n#include "dep.h"\n// */\n', [(b'"', "dep.h")]),
        (b'auto r = R"x(/* )x";\nchar c = \'"\';\n#include "dep.h"\n', [(b'"', "dep.h")]),
    ],
)
def test_includes_are_read_as_the_preprocessor_reads_them(source, expected):
    assert [(i.quote, i.target) for i in scan_source(source).includes] == expected


def write_kernel(directory: Path, include_line: str, base: int) -> Path:
    (directory / "inc").mkdir(parents=True, exist_ok=True)
    (directory / "inc" / "dep.h").write_text(
        f"#pragma once\ninline int64_t base_value() {{ return {base}; }}\n"
    )
    source = directory / "add.cpp"
    source.write_text(
        f"#include <cstdint>\n{include_line}\nint64_t add1(int64_t x) {{ return x + base_value(); }}\n"
    )
    return source


LOAD = (
    "import sys\nfrom jit_kernel.compiler import load_jit\n"
    "print(load_jit('safe', cpp_files=[sys.argv[1]], cpp_wrappers=[('add1', 'add1')]).add1(1))\n"
)
ADD1 = {"cpp_wrappers": [("add1", "add1")]}


@pytest.mark.parametrize(
    "include_line",
    [
        '#include /* base value */ "inc/dep.h"',
        '#include \\\n  "inc/dep.h"',
        '#inc\\\nlude "inc/dep.h"',
    ],
)
def test_the_key_follows_a_header_behind_a_comment_or_continuation(tmp_path, include_line):
    source = write_kernel(tmp_path / "k", include_line, 1000)
    before = jit_module_path("dep", cpp_files=[str(source)], **ADD1)
    write_kernel(tmp_path / "k", include_line, 50000)
    assert jit_module_path("dep", cpp_files=[str(source)], **ADD1) != before


def test_editing_a_header_included_behind_a_comment_rebuilds(tmp_path, monkeypatch):
    monkeypatch.setenv("JIT_KERNEL_CACHE_DIR", str(tmp_path / "cache"))
    source = write_kernel(tmp_path / "k", '#include /* base value */ "inc/dep.h"', 1000)
    assert load_jit("dep", cpp_files=[str(source)], **ADD1).add1(1) == 1001
    write_kernel(tmp_path / "k", '#include /* base value */ "inc/dep.h"', 50000)
    assert load_jit("dep", cpp_files=[str(source)], **ADD1).add1(1) == 50001  # not a stale 1001


def test_nvcc_sees_only_shell_safe_paths(tmp_path):
    weird = tmp_path / INJECTION
    (weird / "inc").mkdir(parents=True)
    staging = tmp_path / "staging"
    staging.mkdir()
    flags = ["-ccbin", str(weird / "g++"), f"-I{weird / 'inc'}", "-I/usr/include", "-O3"]
    command = nvcc_command(Path("/usr/local/cuda/bin/nvcc"), flags, staging, "-c", "cuda.cu")
    assert all(shell_safe(word) for word in command), command
    linked = Path(command[command.index("-ccbin") + 1])
    assert linked.parent == staging / "links" and os.readlink(linked) == str(weird / "g++")
    assert "-I/usr/include" in command  # a safe path is passed as it is


def test_an_unsafe_nvcc_location_is_refused_naming_it(tmp_path):
    (tmp_path / INJECTION).mkdir()
    nvcc = tmp_path / INJECTION / "nvcc"
    nvcc.write_text("")
    with pytest.raises(JitToolchainError, match=r"nvcc is at .*\$\(touch PWNED\)/nvcc, a path"):
        nvcc_command(nvcc, [], tmp_path, "-c", "cuda.cu")


@pytest.mark.skipif(nvcc_missing_reason() is not None, reason=str(nvcc_missing_reason()))
def test_a_cache_dir_temp_dir_compiler_and_include_named_to_inject_build_safely(tmp_path):
    weird = tmp_path / INJECTION
    for sub in ("cache", "tmp", "inc", "bin"):
        (weird / sub).mkdir(parents=True)
    (weird / "bin" / "g++").symlink_to(subprocess.check_output(["which", "g++"], text=True).strip())
    (weird / "inc" / "val.h").write_text("#pragma once\nconstexpr int kVal = 3;\n")
    kernel = tmp_path / "fill.cuh"
    kernel.write_text(
        '#include <cstdint>\n#include "val.h"\n__global__ void fill(int* o) { o[0] = kVal; }\n'
        "int64_t value(int64_t x) { return x + kVal; }\n"
    )
    script = (
        "import sys\nfrom jit_kernel.compiler import build_only, load_jit\nwith build_only():\n"
        "    r = load_jit('inject', cuda_files=[sys.argv[1]], cuda_wrappers=[('value', 'value')],"
        " extra_include_paths=[sys.argv[2]])\nprint(r.built)\n"
    )
    env = subprocess_env(
        weird / "cache", TMPDIR=str(weird / "tmp"), CXX=str(weird / "bin" / "g++"),
        TVM_FFI_CUDA_ARCH_LIST="9.0",
    )  # fmt: skip
    result = run_python(["-c", script, str(kernel), str(weird / "inc")], env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "True"
    assert list(tmp_path.rglob("PWNED")) == [], "a shell ran a path from the environment"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A cache holding the ``safe`` module, built once; each test damages a copy of it."""
    cache = tmp_path_factory.mktemp("built") / "cache"
    source = write_kernel(tmp_path_factory.mktemp("kernel"), '#include "inc/dep.h"', 1000)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JIT_KERNEL_CACHE_DIR", str(cache))
        with build_only():
            load_jit("safe", cpp_files=[str(source)], **ADD1)
    return cache


def copy_of(built: Path, tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """(kernel source, the cached library) in a copy of the built cache (same key: the key
    does not depend on where the source or the cache lives)."""
    shutil.copytree(built, tmp_path / "cache")
    monkeypatch.setenv("JIT_KERNEL_CACHE_DIR", str(tmp_path / "cache"))
    source = write_kernel(tmp_path / "k", '#include "inc/dep.h"', 1000)
    (library,) = (tmp_path / "cache").glob("jit_safe_*/jit_safe.so")
    assert jit_module_path("safe", cpp_files=[str(source)], **ADD1) == library
    return source, library


def test_a_truncated_library_is_rebuilt_not_loaded(built, tmp_path, monkeypatch):
    source, library = copy_of(built, tmp_path, monkeypatch)
    data = library.read_bytes()
    library.write_bytes(data[: len(data) // 2])  # dlopen would map past the end: SIGBUS
    problem = library_problem(library, read_record(library))
    assert problem == f"{len(data) // 2} bytes, {len(data)} were built"
    result = run_python(["-c", LOAD, str(source)], subprocess_env(tmp_path / "cache"))
    assert result.returncode == 0 and result.stdout.strip() == "1001", result.stderr  # no SIGBUS
    assert "is damaged" in result.stderr and library.read_bytes() == data


def test_a_foreign_library_is_never_loaded(built, tmp_path, monkeypatch):
    source, library = copy_of(built, tmp_path, monkeypatch)
    marker = tmp_path / "constructor-ran"
    foreign = tmp_path / "foreign.cpp"
    foreign.write_text(
        "#include <fstream>\n__attribute__((constructor)) static void run() "
        f"{{ std::ofstream({json.dumps(str(marker))}) << 1; }}\n"
    )
    subprocess.run(
        shlex.split(f"c++ -shared -fPIC {foreign} -o {library}"), check=True, capture_output=True
    )  # the same name, another library: its constructor would run on load
    assert library_problem(library, read_record(library)) is not None
    assert load_jit("safe", cpp_files=[str(source)], **ADD1).add1(1) == 1001
    assert not marker.exists(), "the foreign library was loaded"


def test_a_library_without_its_digest_record_is_rebuilt(built, tmp_path, monkeypatch):
    source, library = copy_of(built, tmp_path, monkeypatch)
    record_path(library).unlink()
    problem = library_problem(library, read_record(library))
    assert problem == f"no readable {library.name}.json records what was built"
    assert (
        jit_module_path("safe", cpp_files=[str(source)], cpp_wrappers=[("add1", "add1")]) == library
    )
    with build_only():
        result = load_jit("safe", cpp_files=[str(source)], cpp_wrappers=[("add1", "add1")])
    assert result.built and library_problem(library, read_record(library)) is None


@pytest.mark.parametrize("value", ["0", "-2", "many", "1.5"])
def test_max_jobs_must_be_a_positive_whole_number(monkeypatch, value):
    monkeypatch.setenv("MAX_JOBS", value)
    with pytest.raises(JitToolchainError, match=f"MAX_JOBS={value!r} is not a positive whole"):
        _jobs()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
