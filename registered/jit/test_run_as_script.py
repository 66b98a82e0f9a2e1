"""Registered files run as ``python <file>`` without PYTHONPATH, and the GPU verification scripts
take their kernels from the registries (verification/kernel_tests.py), never from hand lists.

The docs tell a user to run ``python registered/jit/test_<name>.py``; Python then puts only the
file's directory on the path, so every registered file that imports a package at the root that
is not installed (testing, benchmarks, tools, verification) must import ``repo_root`` first.
"""

import ast
import os
import re
import subprocess
import sys
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest
import repo_root

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=40, suite="base-a-test-cpu")

ROOT = Path(__file__).resolve().parents[2]


def uninstalled_root_packages() -> set[str]:
    """Packages at the root that ``pip install -e .`` does not install (packages.find)."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    include = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    return {name for name in packages if not any(fnmatch(name, pat) for pat in include)}


def imports(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, top-level module) of every absolute import in the file, anywhere."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module.split(".")[0]))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
    return found


def test_the_root_packages_the_registered_files_use_are_not_installed():
    # What makes repo_root necessary; if one is installed one day, this test says so.
    assert {"testing", "benchmarks", "tools", "verification"} <= uninstalled_root_packages()
    assert Path(repo_root.ROOT) == ROOT


def test_every_registered_file_importing_them_imports_repo_root_first():
    lab = uninstalled_root_packages()
    problems = []
    for path in sorted((ROOT / "registered").rglob("*.py")):
        rel = path.relative_to(ROOT)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(rel))
        uses = [line for line, module in imports(tree) if module in lab]
        if not uses or path.name == "repo_root.py":
            continue
        bootstrap = [
            node.lineno
            for node in tree.body
            if isinstance(node, ast.Import) and any(a.name == "repo_root" for a in node.names)
        ]
        helper = path.parent / "repo_root.py"
        if not bootstrap or bootstrap[0] > min(uses):
            problems.append(f"{rel}:{min(uses)}: imports a root package before `import repo_root`")
        elif not helper.is_file():
            problems.append(f"{rel}: no repo_root.py beside it")
        else:
            depth = len(helper.relative_to(ROOT).parts) - 1
            if f"parents[{depth}]" not in helper.read_text(encoding="utf-8"):
                problems.append(f"{helper.relative_to(ROOT)}: ROOT is not parents[{depth}]")
    assert problems == []


@pytest.mark.skipif(
    __import__("torch").cuda.is_available(), reason="needs a machine without a visible GPU"
)
@pytest.mark.parametrize("test", ["registered/jit/test_add3.py", "registered/jit/test_l2norm.py"])
def test_a_kernel_test_runs_as_a_script_without_pythonpath(tmp_path, test):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("PYTEST_")}
    done = subprocess.run(
        [sys.executable, str(ROOT / test)],
        cwd=tmp_path,  # not the root: nothing but the file's own directory is on the path
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 skipped" in done.stdout


def kernel_tests(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "verification.kernel_tests", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_kernel_tests_finds_every_kernel_from_the_registries():
    tests, kernels = kernel_tests(), kernel_tests("--kernels")
    assert tests.returncode == 0 and kernels.returncode == 0, tests.stderr + kernels.stderr
    # l2norm was added after the scripts' hand lists were removed: nothing names it there.
    assert "registered/jit/test_l2norm.py" in tests.stdout.split()
    wrappers = {p.stem for p in (ROOT / "jit_kernel").glob("*.py") if not p.name.startswith("_")}
    found = set(kernels.stdout.split())
    assert found <= wrappers and "l2norm" in found and "rmsnorm" in found
    for kernel in wrappers - found:  # the multi-GPU all-reduce: tested in another suite
        assert f"no test of base-b-kernel-unit-1-gpu-large imports jit_kernel.{kernel}" in (
            kernels.stderr
        )


def test_kernel_tests_uses_selects_the_map_kernels_by_the_change_analysis():
    done = kernel_tests("--uses", "jit_kernel/include/sgl_kernel/impl/elementwise.cuh")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "registered/jit/test_add3.py",
        "registered/jit/test_add_constant.py",
        "registered/jit/test_scale.py",
    ]
    row = kernel_tests("--uses", "jit_kernel/include/sgl_kernel/impl/row/map.cuh", "--kernels")
    assert row.stdout.split() == ["fused_add_rmsnorm", "l2norm", "rmsnorm"], row.stderr
    bad = kernel_tests("--uses", "no/such.cuh")
    assert bad.returncode == 2 and "--uses no/such.cuh: no such file" in bad.stderr


def test_the_gpu_verification_scripts_hold_no_hand_kernel_lists():
    # A whole kernel test or benchmark file named in a script is a hand list; a single test
    # (path::name) that a script runs for one purpose is not.
    listed = kernel_tests().stdout.split()
    listed += kernel_tests("--suite", "base-b-kernel-benchmark-1-gpu-large").stdout.split()
    assert "registered/jit/benchmark/bench_l2norm.py" in listed
    for script in sorted((ROOT / "verification").glob("*.sh")):
        text = script.read_text(encoding="utf-8")
        for path in listed:
            named = re.findall(re.escape(path) + r"(?!::)", text)
            assert not named, f"{script.name} names {path} by hand"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
