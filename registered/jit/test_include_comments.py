"""Lint: every ``#include <sgl_kernel/...>`` line carries a trailing ``// For ...`` comment.

The comment says which names the header is included for (the JIT kernel include rule), so
unused includes are easy to spot in review.
"""

import re
import sys
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=3, suite="base-a-test-cpu")

REPO_ROOT = Path(__file__).resolve().parents[2]
SOURCE_SUFFIXES = {".h", ".hpp", ".cuh", ".cu", ".cc", ".cpp", ".py"}
SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".whl", "build", "dist"}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]sgl_kernel/[^>"]+[>"](?P<rest>.*)$')
FOR_COMMENT = re.compile(r"^\s*// For \S")


def source_files(root: Path) -> list[Path]:
    """C/C++/CUDA sources (and Python files that embed C++) under ``root``."""
    found = []
    for path in root.rglob("*"):
        if any(part in SKIP_DIRS or part.startswith(".") for part in path.relative_to(root).parts):
            continue
        if path.suffix in SOURCE_SUFFIXES and path.is_file():
            found.append(path)
    return sorted(found)


def violations(path: Path, root: Path) -> list[str]:
    """``file:line: text`` for each sgl_kernel include without a ``// For ...`` comment."""
    problems = []
    text = path.read_text(encoding="utf-8", errors="replace")
    for number, line in enumerate(text.splitlines(), start=1):
        match = INCLUDE.match(line)
        if match and not FOR_COMMENT.match(match.group("rest")):
            problems.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return problems


def test_every_sgl_kernel_include_has_a_for_comment() -> None:
    files = source_files(REPO_ROOT)
    assert any(path.suffix == ".cuh" for path in files), "no .cuh files found: wrong repo root?"
    problems = [problem for path in files for problem in violations(path, REPO_ROOT)]
    assert not problems, "add a trailing '// For <names>' comment to these includes:\n" + "\n".join(
        problems
    )


def test_checker_reports_file_line_and_text(tmp_path: Path) -> None:
    (tmp_path / "kernels").mkdir()
    bad = tmp_path / "kernels" / "bad.cuh"
    bad.write_text(
        "#include <sgl_kernel/utils.h>  // For RuntimeCheck\n"
        "#include <sgl_kernel/tensor.h>\n"
        "#include <sgl_kernel/vec.cuh>  // vectors\n"
        "#include <cuda_runtime.h>\n"
    )
    assert source_files(tmp_path) == [bad]
    assert violations(bad, tmp_path) == [
        "kernels/bad.cuh:2: #include <sgl_kernel/tensor.h>",
        "kernels/bad.cuh:3: #include <sgl_kernel/vec.cuh>  // vectors",
    ]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
