"""Which test files directly import a changed module: an independent check of the selection.

A plain syntax-tree scan of every test file for ``import`` and ``from ... import`` statements,
sharing no code with ``ci_runner.impact``: an import ``a.b.c`` (or ``from a.b import c``) names
the files ``X/a/b/c.py`` and ``X/a/b/c/__init__.py`` for any directory ``X`` of the tree that
lies in no package (no ``__init__.py`` in ``X`` or above), and executes the ``__init__.py`` of
``X/a`` and ``X/a/b`` on the way; a relative import names files relative to the test's own
package. A test that names a changed file this way is its direct importer, and a selection
that keeps nothing of it without running the whole suite has dropped a test it must keep.

Run from the repo root (results: docs/change-impact.md)::

    python -m tools.direct_importers --root /tmp/sgl-full \\
        python/sglang/srt/layers/rotary_embedding/__init__.py
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path


def imported_names(source: bytes, path: str) -> set[str]:
    """Every module name a file's import statements name, relative ones as ``.`` paths of the
    file's directory (``./helpers.py``)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return set()
    names: set[str] = set()
    directory = os.path.dirname(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = directory
            for _ in range(node.level - 1):
                base = os.path.dirname(base)
            stem = os.path.join(base, *(node.module or "").split(".")) if node.module else base
            names.add("./" + stem)
            names.update("./" + os.path.join(stem, alias.name) for alias in node.names)
    return names


class Tree:
    """The files of a tree and the directories that lie in no package."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: set[str] = set()
        for directory, subdirs, files in os.walk(root):
            subdirs[:] = [d for d in subdirs if not d.startswith(".") and d != "__pycache__"]
            relative = os.path.relpath(directory, root)
            prefix = "" if relative == "." else relative + "/"
            self.files.update(prefix + name for name in files)
        self._packaged: dict[str, bool] = {}

    def in_package(self, directory: str) -> bool:
        known = self._packaged.get(directory)
        if known is None:
            own = f"{directory}/__init__.py" if directory else "__init__.py"
            parent = os.path.dirname(directory)
            known = own in self.files or (bool(directory) and self.in_package(parent))
            self._packaged[directory] = known
        return known

    def files_named(self, name: str, changed: Iterable[str]) -> set[str]:
        """The changed files ``name`` executes (see the module docstring)."""
        found: set[str] = set()
        if name.startswith("./"):
            stem = name[2:]
            for path in changed:
                if path in (f"{stem}.py", f"{stem}/__init__.py"):
                    found.add(path)
            return found
        parts = name.split(".")
        for path in changed:
            if not path.endswith(".py"):
                continue
            module = path[:-3]
            module = module[: -len("/__init__")] if module.endswith("/__init__") else module
            pieces = module.split("/")
            for length in range(1, len(parts) + 1):
                tail = parts[:length]
                if pieces[-length:] != tail:
                    continue
                holder = "/".join(pieces[:-length])
                if not self.in_package(holder):
                    found.add(path)
        return found


class TestImports:
    """The import names of every test file, read once."""

    def __init__(self, tree: Tree, tests: Iterable[str]) -> None:
        self.tree = tree
        self.names: dict[str, set[str]] = {}
        for test in tests:
            try:
                self.names[test] = imported_names((tree.root / test).read_bytes(), test)
            except OSError:
                self.names[test] = set()

    def importers(self, changed: Iterable[str]) -> dict[str, set[str]]:
        """Changed file -> the tests whose import statements execute it directly (a changed
        test file is its own)."""
        changed = [p for p in changed if p.endswith(".py") and p in self.tree.files]
        found: dict[str, set[str]] = defaultdict(set)
        for test, names in self.names.items() if changed else ():
            for name in names:
                for path in self.tree.files_named(name, changed):
                    found[path].add(test)
            if test in changed:
                found[test].add(test)
        return found


def main(argv: list[str] | None = None) -> int:
    from tools.impact_savings import all_suites

    parser = argparse.ArgumentParser(prog="python -m tools.direct_importers")
    parser.add_argument("--root", required=True, help="the tree (holds a catalog)")
    parser.add_argument("paths", nargs="+", help="changed files, relative to the root")
    args = parser.parse_args(argv)
    root = Path(args.root).resolve()
    _catalog, selection, _suites = all_suites(root)
    found = TestImports(Tree(root), [f.path for f in selection.files]).importers(args.paths)
    for path in args.paths:
        tests = sorted(found.get(path, ()))
        print(f"{path}: {len(tests)} direct importer(s)")
        for test in tests:
            print(f"  {test}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
