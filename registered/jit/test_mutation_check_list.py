"""verification/mutation_check.py on a CPU machine: --list shows each planted bug and its
selection; bad usage and a tree that cannot build stop it with exit 2."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=15, suite="base-a-test-cpu")

ROOT = Path(__file__).resolve().parents[2]


def run_list(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "verification/mutation_check.py", "--list", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )


def test_list_shows_each_mutant_with_the_tests_its_file_selects(tmp_path):
    done = run_list("--only", "sgl_kernel/vec", "--per-file", "2")
    assert done.returncode == 0, done.stderr
    mutants = re.findall(
        r"^(jit_kernel/\S+):(\d+) \[([^\]]+)\] '(.*)' -> '(.*)'$", done.stdout, re.M
    )
    files = {m[0] for m in mutants}
    assert files == {
        "jit_kernel/include/sgl_kernel/vec.cuh",
        "jit_kernel/include/sgl_kernel/vec_width.h",
    }
    assert len(mutants) == 4
    for file, line, _operator, before, after in mutants:
        assert before != after
        source = (ROOT / file).read_text().splitlines()[int(line) - 1]
        assert source.strip() == before  # the line as it is now, before the bug
    assert "registered/jit/test_rope.py" in done.stdout  # vec.cuh -> rope_kernels.cuh -> rope
    assert "files 2, mutants 4: not run 4" in done.stdout


def test_a_kernel_no_single_gpu_test_reaches_is_uncovered():
    done = run_list("--only", "csrc/distributed/custom_all_reduce_kernel.cuh")
    assert done.returncode == 0, done.stderr
    assert "selects 0: (none in the suite)" in done.stdout
    assert "files 1, mutants 1: uncovered 1" in done.stdout


@pytest.mark.parametrize("header", ["atomic", "cta", "ipc", "math", "signal", "tile", "warp"])
def test_each_primitive_header_selects_its_single_gpu_test(header):
    # Only the multi-GPU all-reduce uses these headers; test_header_primitives.py builds its
    # kernel file next to it (Path(__file__)...), which the change analysis follows.
    done = run_list("--only", f"include/sgl_kernel/{header}.cuh")
    assert done.returncode == 0, done.stderr
    assert "selects 1: registered/jit/test_header_primitives.py\n" in done.stdout
    assert "files 1, mutants 1: not run 1" in done.stdout


@pytest.mark.parametrize("flag", ["--per-file", "--jobs"])
def test_a_count_below_one_is_a_usage_error(flag):
    done = run_list(flag, "0")
    assert done.returncode == 2
    assert "--per-file and --jobs must be at least 1" in done.stderr


def test_negative_build_jobs_is_a_usage_error():
    done = run_list("--build-jobs", "-1")
    assert done.returncode == 2
    assert "--build-jobs must be at least 0" in done.stderr


def test_a_tree_that_does_not_build_stops_before_any_mutant(tmp_path):
    # A host compiler that always fails: precompile of the unmutated tree fails in seconds, on
    # a GPU machine too (the arch is given), and no mutant runs to be falsely "killed".
    env = {
        **os.environ,
        "CXX": "/bin/false",
        "TVM_FFI_CUDA_ARCH_LIST": "9.0",
        "OUT": str(tmp_path / "out"),
        "JIT_KERNEL_CACHE_DIR": str(tmp_path / "jit"),
    }
    done = subprocess.run(
        [sys.executable, "verification/mutation_check.py", "--only", "elementwise/scale.cuh"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "the unmutated tree does not build" in done.stderr
    assert not (tmp_path / "out" / "mutation_check.json").exists()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
