"""Lint: no ``RuntimeCheck(...)`` argument builds a string.

``RuntimeCheck(cond, args...)`` evaluates its arguments on every call, passing or not, and it
runs on every kernel call: a ``details::describe(view)`` or ``dtype_name(dtype)`` there formats
text (and allocates) each time. Such messages go in ``if (!cond) panic(DebugInfo{}, ...)``.
"""

import re
import sys
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=2, suite="base-a-test-cpu")

REPO_ROOT = Path(__file__).resolve().parents[2]
ROOTS = [REPO_ROOT / "jit_kernel", REPO_ROOT / "registered" / "jit"]
SUFFIXES = {".h", ".cuh", ".cu", ".cpp"}
CALL = re.compile(r"\bRuntimeCheck\s*\(")
BUILDS_TEXT = re.compile(
    r"\b(?:describe|dtype_name|device_name|device_type_name|format_ints|to_string|join|"
    r"shape_pattern)\s*\(|std::string\s*[({]|std::ostringstream"
)


def arguments(text: str, start: int) -> str:
    """The text between the parenthesis at ``start - 1`` and its match."""
    depth, index = 1, start
    while depth and index < len(text):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        index += 1
    return text[start : index - 1]


def offenders(text: str) -> list[str]:
    found = []
    for match in CALL.finditer(text):
        args = arguments(text, match.end())
        if BUILDS_TEXT.search(args):
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"line {line}: RuntimeCheck({' '.join(args.split())[:80]}...)")
    return found


def sources() -> list[Path]:
    return sorted(p for root in ROOTS for p in root.rglob("*") if p.suffix in SUFFIXES)


def test_the_lint_sees_a_string_built_in_the_arguments():
    assert offenders('RuntimeCheck(ok, "x ", details::describe(view));')
    assert offenders("RuntimeCheck(a, b,\n  dtype_name(t));")
    assert not offenders('RuntimeCheck(n > 0, "n: ", n, " at ", name);')


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_no_runtime_check_builds_a_string(path):
    problems = offenders(path.read_text(errors="replace"))
    assert not problems, f"{path.relative_to(REPO_ROOT)}: " + "; ".join(problems)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
