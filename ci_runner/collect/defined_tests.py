"""Whether a file defines test cases that pytest or unittest would run, read without running it.

A file that exits 0 without any test case having run is ``no_tests`` when it defines tests:
module-level ``test*`` functions (pytest's default ``python_functions``), or classes named
``Test*`` or deriving from a ``*TestCase`` class (pytest's ``python_classes``, unittest) with
``test*`` methods. A plain script defines none and is one passing case, as before.
"""

from __future__ import annotations

import ast
from pathlib import Path

from ci_runner.file_safety import read_regular

MAX_SOURCE_BYTES = 16 * 1024 * 1024


def _is_test_class(node: ast.ClassDef) -> bool:
    if node.name.startswith("Test"):
        return True
    for base in node.bases:
        name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
        if name.endswith("TestCase"):
            return True
    return False


def defined_tests(source: bytes) -> list[str]:
    """The names of the test functions and methods ``source`` defines at module level
    (``Class.test_x`` for methods); [] when it defines none or does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found: list[str] = []
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    for node in tree.body:
        if isinstance(node, functions) and node.name.startswith("test"):
            found.append(node.name)
        elif isinstance(node, ast.ClassDef) and _is_test_class(node):
            found += [
                f"{node.name}.{item.name}"
                for item in node.body
                if isinstance(item, functions) and item.name.startswith("test")
            ]
    return found


def file_defines_tests(path: Path) -> list[str]:
    """:func:`defined_tests` of the file at ``path``; [] when it cannot be read."""
    try:
        return defined_tests(read_regular(path, follow_links=False, limit=MAX_SOURCE_BYTES))
    except (OSError, ValueError):
        return []
