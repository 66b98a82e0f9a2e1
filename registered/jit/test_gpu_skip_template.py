"""A GPU test file on a machine without a GPU is reported skipped by run_suite.py, not failed.

run_suite.py runs each file as ``python <file>``. The GPU test files skip their module with
``testing.skip.skip_module_unless``; here the real ``registered/jit/test_add_constant.py`` runs
through the real runner, alone in a copy of this repository's catalog, on this GPU-less
machine. The pattern it replaced (a module-level ``pytest.skip``) is run too: it crashes
outside pytest and is reported failed, which is what the template exists to prevent.
"""

import re
import shutil
import sys
from pathlib import Path

import pytest
import torch

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=10, suite="base-a-test-cpu")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "registered" / "ci_runner"))

from execution_tree import run_suite  # noqa: E402

GPU_FILE = "registered/jit/test_add_constant.py"
TEMPLATE_LINE = re.compile(r"^skip_module_unless\((.+), (\".+\")\)$", re.MULTILINE)
OLD_PATTERN = r"if not \1:\n    pytest.skip(\2, allow_module_level=True)"

pytestmark = pytest.mark.skipif(
    torch.cuda.is_available(), reason="needs a machine without a visible GPU"
)


def run_gpu_file(tmp_path: Path, text: str):
    """Run ``text`` as registered/jit/test_add_constant.py of a copy of the catalog, like CI."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / GPU_FILE).parent.mkdir(parents=True)
    (tmp_path / GPU_FILE).write_text(text, encoding="utf-8")
    shutil.copy(ROOT / "registered/jit/repo_root.py", tmp_path / "registered/jit/repo_root.py")
    return run_suite(tmp_path, hw="cuda", suite="base-b-kernel-unit-1-gpu-large", timeout=300)


def test_gpu_test_file_is_reported_skipped(tmp_path):
    text = (ROOT / GPU_FILE).read_text(encoding="utf-8")
    assert TEMPLATE_LINE.search(text), f"{GPU_FILE} no longer uses skip_module_unless"
    result = run_gpu_file(tmp_path, text)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "summary: 0 passed, 0 failed, 1 skipped" in result.stdout, result.stdout


def test_module_level_pytest_skip_is_reported_failed(tmp_path):
    text = TEMPLATE_LINE.sub(OLD_PATTERN, (ROOT / GPU_FILE).read_text(encoding="utf-8"))
    assert "allow_module_level=True" in text
    result = run_gpu_file(tmp_path, text)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "summary: 0 passed, 1 failed, 0 skipped" in result.stdout, result.stdout


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
