"""The dependency record of a JIT build, the load log, and a cache without a home directory.

Every build records what its compilers read (checked files by label or path, with sha256 and a
stat; toolchain files apart); a warm load stats the checked files and reads none whose stat is
unchanged; a file that changed during the build is never trusted; ``JIT_KERNEL_LOAD_LOG`` gets
one line per module and process; with no cache directory at all, ``load_jit`` builds into a
private directory of the process, says so once, and removes it at exit (and so when the cache
directory cannot be written).
"""

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest
from helpers_jit_toolchain import run_python, subprocess_env, write_cpp_kernel

import jit_kernel.compiler.deps as deps
from ci_runner import register_cpu_ci
from jit_kernel.compiler import build_only, load_jit, make_cpp_args
from jit_kernel.compiler.cache import read_record, read_toolchain_record
from jit_kernel.compiler.sources import Root

register_cpu_ci(est_time=30, suite="base-a-test-cpu")

ADD = {"cpp_wrappers": [("add_k", f"add_k<{make_cpp_args(2)}>")]}


def add_call(source: Path) -> dict:
    return {"cpp_files": [str(source)], **ADD}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    """(kernel directory, cache) with the ``add`` module built once; the kernel's files are
    older than the build's start, so their stat is recorded."""
    kernel = tmp_path_factory.mktemp("kernel")
    write_cpp_kernel(kernel)
    time.sleep(0.05)  # past the filesystem's timestamp tick
    cache = tmp_path_factory.mktemp("built") / "cache"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JIT_KERNEL_CACHE_DIR", str(cache))
        with build_only():
            load_jit("add", **add_call(kernel / "add.cpp"))
    return kernel, cache


def copy_of(built, tmp_path, monkeypatch) -> tuple[Path, Path]:
    """(the kernel source, its library) in copies of the built kernel and cache."""
    kernel, cache = built
    shutil.copytree(kernel, tmp_path / "kernel")
    shutil.copytree(cache, tmp_path / "cache")
    monkeypatch.setenv("JIT_KERNEL_CACHE_DIR", str(tmp_path / "cache"))
    (library,) = (tmp_path / "cache").glob("jit_add_*/jit_add.so")
    return tmp_path / "kernel" / "add.cpp", library


def test_the_record_holds_what_the_compiler_read(built) -> None:
    kernel, cache = built
    (library,) = cache.glob("jit_add_*/jit_add.so")
    record = read_record(library)
    checked = {name: (digest, stat) for name, digest, stat in record["dependencies"]}
    assert set(checked) == {"src0/add.cpp", "src0/inc/base.h"}  # labels: relocatable
    for name, (digest, stat) in checked.items():
        path = kernel / name.removeprefix("src0/")
        assert digest == deps.file_sha256(str(path), path.stat())
        assert stat == deps.stat_key(path.stat())
    toolchain = read_toolchain_record(library)
    assert any("/c++/" in path for path in toolchain), "libstdc++ headers are recorded"
    assert all(os.path.isabs(path) and len(digest) == 64 for path, digest in toolchain.items())
    assert not any(path.endswith(("main.cpp", "add.cpp")) for path in toolchain)


def test_a_warm_load_reads_no_unchanged_dependency(built, tmp_path, monkeypatch) -> None:
    kernel, cache = built
    monkeypatch.setenv("JIT_KERNEL_CACHE_DIR", str(cache))
    hashed: list[str] = []
    real = deps.file_sha256
    monkeypatch.setattr(
        deps, "file_sha256", lambda path, stat: hashed.append(path) or real(path, stat)
    )
    with build_only():
        assert not load_jit("add", **add_call(kernel / "add.cpp")).built
    assert hashed == []
    header = kernel / "inc" / "base.h"
    os.utime(header, ns=(header.stat().st_atime_ns, header.stat().st_mtime_ns + 10**9))
    with build_only():
        assert not load_jit("add", **add_call(kernel / "add.cpp")).built  # same bytes: served
    assert hashed == [str(header.resolve())]


def test_a_moved_kernel_tree_still_hits(built, tmp_path, monkeypatch) -> None:
    source, _ = copy_of(built, tmp_path, monkeypatch)
    with build_only():
        assert not load_jit("add", **add_call(source)).built


@pytest.mark.parametrize(
    ("written", "keyed", "expected"),
    [
        ("before", None, "digest and stat"),  # older than the build's start: both recorded
        ("during", "same", "digest only"),  # changed since the start; the key hashed these bytes
        ("during", "other", "nothing"),  # changed since the start: the compiler may read others
        ("ahead", None, "digest only"),  # dated after the hashing: a clock ahead of this one
    ],
)
def test_a_file_changed_during_the_build_is_not_trusted(tmp_path, written, keyed, expected):
    staging = tmp_path / "staging"
    staging.mkdir()
    header = tmp_path / "src" / "h.h"
    header.parent.mkdir()
    header.write_text("int h;\n")
    if written == "ahead":
        os.utime(header, ns=(time.time_ns(), time.time_ns() + 10**12))
    digest = deps.file_sha256(str(header), header.stat())
    started = time.time_ns() + (10**12 if written == "before" else -(10**12))
    hashes = {"same": digest, "other": "0" * 64}
    checked, toolchain = deps.record_dependencies(
        [str(header), "cuda.cu"],
        staging,
        [Root("src0", tmp_path / "src")],
        [],
        {"src0/h.h": hashes[keyed]} if keyed else {},
        started,
    )
    assert toolchain == {}
    ((name, recorded, stat),) = checked  # cuda.cu, in staging, is left out
    assert name == "src0/h.h"
    found = {(True, True): "digest and stat", (True, False): "digest only"}
    assert found.get((recorded == digest, stat is not None), "nothing") == expected


def test_dependency_problems_are_named(tmp_path) -> None:
    roots = [Root("src0", tmp_path)]
    (tmp_path / "h.h").write_text("x")
    digest = deps.file_sha256(str(tmp_path / "h.h"), (tmp_path / "h.h").stat())
    assert deps.dependency_problem([["src0/h.h", digest, None]], roots) is None
    assert "h.h changed since it was built" in deps.dependency_problem(
        [["src0/h.h", "0" * 64, None]], roots
    )
    assert "h.h changed while the module was being compiled" in deps.dependency_problem(
        [["src0/h.h", None, None]], roots
    )
    assert "gone.h, which it was built from, is gone" in deps.dependency_problem(
        [["src0/gone.h", digest, None]], roots
    )
    assert "no root of this build holds" in deps.dependency_problem(
        [["extra3/x.h", digest, None]], roots
    )
    for damaged in (None, 7, [["only-a-name"]], [[1, 2, 3, 4]]):
        assert deps.dependency_problem(damaged, roots) == "its dependency record is damaged"
    # A machine that cannot rebuild checks only the files under the module's roots.
    assert (
        deps.dependency_problem([["/no/such/file.h", digest, None]], roots, absolute=False) is None
    )


def test_a_damaged_record_rebuilds(built, tmp_path, monkeypatch, caplog) -> None:
    source, library = copy_of(built, tmp_path, monkeypatch)
    record = read_record(library)
    record["dependencies"] = "not a list"
    library.with_name(library.name + ".json").write_text(json.dumps(record))
    with build_only():
        assert load_jit("add", **add_call(source)).built
    assert "is stale (its dependency record is damaged); rebuilding" in caplog.text


LOG_SCRIPT = """
import os, sys
from jit_kernel.compiler import load_jit
call = {"cpp_files": [sys.argv[1]], "cpp_wrappers": [("add_k", "add_k<2>")]}
print(os.getpid(), load_jit("add", **call).add_k(0), load_jit("add", **call).add_k(1))
"""


def test_the_load_log_has_one_line_per_module_and_process(built, tmp_path, monkeypatch) -> None:
    source, library = copy_of(built, tmp_path, monkeypatch)
    log = tmp_path / "log"
    env = subprocess_env(tmp_path / "cache", JIT_KERNEL_LOAD_LOG=str(log))
    pids = []
    for _ in range(2):
        done = run_python(["-c", LOG_SCRIPT, str(source)], env)
        assert done.returncode == 0, done.stderr
        pid, first, second = done.stdout.split()
        assert (first, second) == ("42", "43")
        pids.append(pid)
    assert sorted(path.name for path in log.iterdir()) == sorted(f"{pid}.jsonl" for pid in pids)
    for pid in pids:
        (line,) = (log / f"{pid}.jsonl").read_text().splitlines()  # loaded twice, logged once
        entry = json.loads(line)
        assert set(entry) == {"module", "library", "sources", "dependencies"}
        assert entry["module"] == "jit_add"
        assert entry["library"] == str(library.resolve())
        assert entry["sources"] == [str(source.resolve())]
        header = str((source.parent / "inc" / "base.h").resolve())
        assert entry["dependencies"][header] == deps.file_sha256(header, os.stat(header))
        assert entry["dependencies"][str(source.resolve())] is not None
        assert any("/c++/" in path for path in entry["dependencies"])  # toolchain files too


def test_an_unwritable_load_log_is_said_once_and_loading_goes_on(built, tmp_path, monkeypatch):
    source, _ = copy_of(built, tmp_path, monkeypatch)
    (tmp_path / "a-file").write_text("")
    env = subprocess_env(tmp_path / "cache", JIT_KERNEL_LOAD_LOG=str(tmp_path / "a-file"))
    done = run_python(["-c", LOG_SCRIPT, str(source)], env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[1:] == ["42", "43"]
    assert done.stderr.count("cannot write the JIT load log") == 1


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"JIT_KERNEL_CACHE_DIR": "/c", "XDG_CACHE_HOME": "/x", "HOME": "/h"}, "/c"),
        ({"XDG_CACHE_HOME": "/x", "HOME": "/h"}, "/x/jit_kernel"),
        ({"XDG_CACHE_HOME": "relative", "HOME": "/h"}, "/h/.cache/jit_kernel"),  # the XDG spec
        ({"JIT_KERNEL_CACHE_DIR": "~/c", "HOME": "/h"}, "/h/c"),
        ({"HOME": "relative"}, None),  # no usable home: a private directory
        ({"HOME": ""}, None),
    ],
)
def test_where_the_cache_is(monkeypatch, env, expected) -> None:
    from jit_kernel.compiler.cache import cache_root, is_private_root

    for name in ("JIT_KERNEL_CACHE_DIR", "XDG_CACHE_HOME", "HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    root = cache_root()
    assert is_private_root(root) if expected is None else root == Path(expected)


NO_HOME_SCRIPT = """
import pwd, sys
def no_entry(uid):
    raise KeyError(f"getpwuid(): uid not found: {uid}")
pwd.getpwuid = no_entry  # as for `docker run --user N`: no passwd entry
from jit_kernel.compiler import jit_module_path, load_jit
call = {"cpp_files": [sys.argv[1]], "cpp_wrappers": [("add_k", "add_k<2>")]}
print(load_jit("add", **call).add_k(0), load_jit("add", **call).add_k(1))
print(jit_module_path("add", **call))
"""


def test_without_a_home_directory_modules_build_in_a_private_directory(tmp_path) -> None:
    source = write_cpp_kernel(tmp_path / "k")
    env = subprocess_env(tmp_path / "unused", TMPDIR=str(tmp_path / "tmp"))
    for name in ("HOME", "XDG_CACHE_HOME", "JIT_KERNEL_CACHE_DIR"):
        env.pop(name, None)
    (tmp_path / "tmp").mkdir()
    done = run_python(["-c", NO_HOME_SCRIPT, str(source)], env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    values, path = done.stdout.splitlines()
    assert values == "42 43"
    assert done.stderr.count("no JIT cache directory") == 1, done.stderr
    assert "JIT_KERNEL_CACHE_DIR and XDG_CACHE_HOME are unset and the home directory" in done.stderr
    assert Path(path).is_relative_to(tmp_path / "tmp")  # the private directory ...
    assert list((tmp_path / "tmp").iterdir()) == []  # ... is gone after the process
    assert not (tmp_path / "unused").exists()


def test_a_cache_directory_that_cannot_be_written_builds_privately(built, tmp_path) -> None:
    source = write_cpp_kernel(tmp_path / "k", base=7)  # a miss: nothing to load from the cache
    (tmp_path / "a-file").write_text("")
    env = subprocess_env(tmp_path / "a-file" / "cache", TMPDIR=str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    done = run_python(["-c", LOG_SCRIPT, str(source)], env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[1:] == ["9", "10"]
    assert done.stderr.count("no JIT cache directory (the cache directory") == 1, done.stderr
    assert "a-file/cache cannot be written" in done.stderr
    assert list((tmp_path / "tmp").iterdir()) == []


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
