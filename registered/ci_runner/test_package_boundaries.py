"""The package boundaries change selection relies on: the kernel library imports nothing of the
runner, the shared ``#include`` scanner only the standard library, and the runner (change
selection included) runs without torch."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=6, suite="base-a-test-cpu")

ROOT = Path(__file__).resolve().parents[2]


def imported_tops(package: str) -> dict[str, set[str]]:
    """``{file: top-level names it imports}`` for every Python file of ``package``, wherever the
    import is written; relative imports count as the package itself."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                names.add(package if node.level else (node.module or "").split(".")[0])
        found[path.relative_to(ROOT).as_posix()] = names
    return found


def test_the_kernel_library_imports_nothing_of_the_runner():
    offenders = {f: n for f, n in imported_tops("jit_kernel").items() if "ci_runner" in n}
    assert not offenders


def test_the_include_scanner_imports_only_the_standard_library():
    allowed = set(sys.stdlib_module_names) | {"cpp_includes", "__future__"}
    offenders = {f: n - allowed for f, n in imported_tops("cpp_includes").items() if n - allowed}
    assert not offenders
    assert imported_tops("cpp_includes")  # the package is there


@pytest.mark.parametrize("changed", ["jit_kernel/include/sgl_kernel/vec.cuh", "jit_kernel/rope.py"])
def test_the_runner_selects_by_change_with_torch_unimportable(changed):
    code = (
        "import sys; sys.modules['torch'] = None\n"  # any `import torch` now raises
        "from ci_runner.cli import main\n"
        "sys.exit(main(['--hw', 'cuda', '--suite', 'base-b-kernel-unit-1-gpu-large', "
        "'--dry-run', '--changed-files', '-']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        input=changed + "\n",
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "registered/jit/test_rope.py:" in done.stdout  # one reason chain per kept file


def test_a_dry_run_loads_neither_psutil_nor_junitparser():
    """Only running files needs them; a dry run (and a warm rerun of one) skips their import."""
    code = (
        "import sys\n"
        "from ci_runner.cli import main\n"
        "code = main(['--hw', 'cpu', '--suite', 'base-a-test-cpu', '--dry-run'])\n"
        "print(sorted({'psutil', 'junitparser'} & set(sys.modules)))\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
