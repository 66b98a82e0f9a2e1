"""docs/add-a-kernel.md, followed as a newcomer would: its files alone make working kernels.

In a copy of the repository without add3 and l2norm (no kernel, wrapper, test, benchmark
definition or benchmark), the page's ten ``file=`` code blocks are written to the paths they
name; then the page's commands run there: ``precompile --only add3,l2norm`` compiles both for
Hopper with nvcc, ruff and clang-format find nothing to change, the benchmarks list their full
sweeps from the definitions, the registrations validate and the dry runs of the unit and
benchmark suites list the files (and warn about nothing), the GPU verification's kernel lists
(verification/kernel_tests.py) hold both, and the test files run as ``python <file>`` on this
GPU-less machine are skipped, not failed. (test_docs.py checks that the blocks equal the
shipped files; the GPU suite runs the shipped tests.)
"""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers_jit_toolchain import nvcc_missing_reason

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=75, suite="base-a-test-cpu")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "registered" / "ci_runner"))

from docs_commands import COPY_IGNORE  # noqa: E402
from docs_markdown import parse  # noqa: E402

PAGE = ROOT / "docs" / "add-a-kernel.md"
KERNELS = {
    name: (
        f"jit_kernel/csrc/elementwise/{name}.cuh",
        f"jit_kernel/{name}.py",
        f"registered/jit/test_{name}.py",
        f"testing/bench/{name}.py",
        f"registered/jit/benchmark/bench_{name}.py",
    )
    for name in ("add3", "l2norm")
}
FILES = [rel for files in KERNELS.values() for rel in files]
KERNEL_FILES = [files[0] for files in KERNELS.values()]
PYTHON_FILES = [rel for files in KERNELS.values() for rel in files[1:]]
TESTS = [files[2] for files in KERNELS.values()]
BENCHES = [files[4] for files in KERNELS.values()]
# The dev extra installs clang-format beside the interpreter, which may not be on PATH.
CLANG_FORMAT = shutil.which(
    "clang-format", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
)


def page_files() -> dict[str, str]:
    """The page's ``file=`` blocks: path -> text."""
    blocks = [block for block in parse(PAGE, ROOT).blocks if block.file]
    return {block.file: "\n".join(block.lines) + "\n" for block in blocks}


@pytest.fixture(scope="module")
def newcomer_tree(tmp_path_factory) -> Path:
    """A copy of the repository without the two kernels, then with the page's files written in."""
    tree = tmp_path_factory.mktemp("newcomer") / "repo"
    shutil.copytree(ROOT, tree, ignore=COPY_IGNORE, symlinks=True)
    for rel in FILES:
        (tree / rel).unlink()
    for rel, text in page_files().items():
        (tree / rel).write_text(text, encoding="utf-8")
    return tree


def run(tree: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(tree)
    # The build cache is keyed by content, not location: a shared cache hits for the same code.
    env.setdefault("JIT_KERNEL_CACHE_DIR", str(tree.parent / "jit-cache"))
    return subprocess.run(
        args, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def test_the_page_shows_the_ten_files():
    assert sorted(page_files()) == sorted(FILES)


@pytest.mark.parametrize(
    ("name", "listing"),
    [
        # 3 dtypes x 8 sizes (CI: bf16 x 3 sizes), each against jit, torch and torch_compile
        ("add3", "24 ['jit', 'torch', 'torch_compile']"),
        # 2 dtypes x 4 row sizes x 5 row counts
        ("l2norm", "40 ['jit', 'torch', 'torch_compile']"),
    ],
)
def test_the_benchmark_lists_its_sweep_from_the_definition(newcomer_tree, name, listing):
    script = (
        "import importlib.util, os, sys\n"
        "os.environ.pop('SGLANG_IS_IN_CI', None)  # the full sweep\n"
        f"path = {KERNELS[name][4]!r}\n"
        "sys.path.insert(0, os.path.dirname(path))  # as pytest and python <file> do\n"
        "spec = importlib.util.spec_from_file_location('bench', path)\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "bench = module.benchmark\n"
        "print(len(bench.rows()), list(bench.line_vals))\n"
    )
    result = run(newcomer_tree, sys.executable, "-c", script)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split("\n")[0] == listing


@pytest.mark.skipif(nvcc_missing_reason() is not None, reason=str(nvcc_missing_reason()))
def test_precompile_only_builds_the_kernel(newcomer_tree):
    result = run(
        newcomer_tree, sys.executable, "-m", "jit_kernel", "precompile", "--only", "add3,l2norm",
        "--arch", "9.0",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    last = result.stdout.strip().splitlines()[-1]
    counts = re.fullmatch(r"built (\d+), cached (\d+), failed 0", last)
    assert counts and int(counts[1]) + int(counts[2]) == 2, result.stdout


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None, reason="ruff is not installed")
def test_ruff_is_clean(newcomer_tree):
    for command in (["check"], ["format", "--check"]):
        result = run(newcomer_tree, sys.executable, "-m", "ruff", *command, *PYTHON_FILES)
        assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.skipif(CLANG_FORMAT is None, reason="clang-format is not installed")
def test_clang_format_is_clean(newcomer_tree):
    result = run(newcomer_tree, str(CLANG_FORMAT), "--dry-run", "-Werror", *KERNEL_FILES)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("suite", "paths"),
    [("base-b-kernel-unit-1-gpu-large", TESTS), ("base-b-kernel-benchmark-1-gpu-large", BENCHES)],
)
def test_the_dry_run_lists_the_files_and_warns_about_nothing(newcomer_tree, suite, paths):
    result = run(
        newcomer_tree, sys.executable, "run_suite.py", "--hw", "cuda", "--suite", suite,
        "--dry-run", "--format", "json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert set(paths) <= {f["path"] for f in document["files"]}
    assert document["warnings"] == []
    check = run(
        newcomer_tree, sys.executable, "-m", "ci_runner.maintenance", "check-registered-tests"
    )
    assert check.returncode == 0, check.stderr


def test_the_gpu_verification_picks_both_kernels_up(newcomer_tree):
    tests = run(newcomer_tree, sys.executable, "-m", "verification.kernel_tests")
    kernels = run(newcomer_tree, sys.executable, "-m", "verification.kernel_tests", "--kernels")
    assert set(TESTS) <= set(tests.stdout.split()), tests.stderr
    assert set(KERNELS) <= set(kernels.stdout.split()), kernels.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a visible GPU")
@pytest.mark.parametrize("test", TESTS)
def test_the_test_file_skips_without_a_gpu(newcomer_tree, test):
    result = run(newcomer_tree, sys.executable, test)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 skipped" in result.stdout


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
