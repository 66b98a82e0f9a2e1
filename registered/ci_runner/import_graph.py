"""The imports a Python file makes, read from its syntax tree (never by importing it).

Every import counts, wherever it is written (module level, inside a function, under
``if TYPE_CHECKING:``), so a lazy import cannot hide a dependency. Used by the import-direction
tests (``test_import_direction.py``, ``test_lab_imports.py``).
"""

from __future__ import annotations

import ast
from pathlib import Path


def module_name(path: Path, package_dir: Path, package: str) -> str:
    parts = path.relative_to(package_dir).with_suffix("").parts
    return ".".join([package, *(p for p in parts if p != "__init__")])


def imported(path: Path, module: str) -> set[str]:
    """Every absolute module, or ``module.name``, that the file at ``path`` imports."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                parts = module.split(".")[: None if is_package else -1]
                parts = parts[: len(parts) - node.level + 1]
                target = ".".join([*parts, *([node.module] if node.module else [])])
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found
