"""Cross-check the change analysis on a tree with a second, independent static method.

``python verification/impact_modulefinder_check.py ROOT CHANGED [PYTHON_ROOT ...]`` builds the
import graph of every registered test with the standard library's ``modulefinder`` (which scans
compiled bytecode for import instructions, not the AST, and resolves modules with its own
finder), then lists the tests whose import closure reaches CHANGED. Tests resolve ``import x``
in PYTHON_ROOTs, the root and their own directory. The analysis (``python -m
tools.impact_savings change``) must select every test listed here; tests it selects beyond them
come from what ``modulefinder`` does not model (strings naming modules, dynamic imports, kernel
loaders) and are printed with the analysis's reason chain for inspection.
"""

from __future__ import annotations

import importlib.machinery
import json
import modulefinder
import os
import sys
import threading
from collections import defaultdict, deque
from pathlib import Path


class EdgeFinder(modulefinder.ModuleFinder):
    """A ModuleFinder that records ``importer file -> imported file`` for every import it sees."""

    def __init__(self, path: list[str]) -> None:
        super().__init__(path=path)
        self.stack: list[str] = []
        self.edges: dict[str, set[str]] = defaultdict(set)

    def scan_code(self, co, m):  # type: ignore[override]
        self.stack.append(m.__file__ or "")
        try:
            super().scan_code(co, m)
        finally:
            self.stack.pop()

    def find_module(self, name, path, parent=None):  # type: ignore[override]
        try:
            return super().find_module(name, path, parent)
        except AttributeError:  # a namespace package (no loader), which modulefinder lacks
            spec = importlib.machinery.PathFinder.find_spec(name, path or self.path)
            if spec is None or not spec.submodule_search_locations:
                raise ImportError(name) from None
            location = next(iter(spec.submodule_search_locations))
            return None, location, ("", "", modulefinder._PKG_DIRECTORY)

    def load_package(self, fqname, pathname):  # type: ignore[override]
        if os.path.isfile(os.path.join(pathname, "__init__.py")):
            return super().load_package(fqname, pathname)
        module = self.add_module(fqname)  # a namespace package: no code of its own
        module.__path__ = [pathname]
        return module

    def import_module(self, partname, fqname, parent):  # type: ignore[override]
        module = super().import_module(partname, fqname, parent)
        if module is not None and module.__file__ and self.stack:
            self.edges[self.stack[-1]].add(module.__file__)
        return module


def main(argv: list[str]) -> int:
    root = Path(argv[0]).resolve()
    changed = str(root / argv[1])
    roots = [str(root / r) for r in argv[2:]] + [str(root)]
    tests = json.loads(sys.stdin.read()) if not sys.stdin.isatty() else []
    edges: dict[str, set[str]] = defaultdict(set)
    by_dir: dict[str, list[str]] = defaultdict(list)
    for test in tests:
        by_dir[os.path.dirname(str(root / test))].append(str(root / test))
    finder = EdgeFinder(roots)  # shared: a module is scanned once
    for directory, files in sorted(by_dir.items()):
        finder.path = [directory, *roots]  # sys.path[0] of `python FILE`
        for name in [
            k
            for k, m in finder.modules.items()
            if m.__file__ and os.path.dirname(m.__file__) == directory and "." not in k
        ]:
            del finder.modules[name]  # a sibling module of another directory with the same name
        for file in files:
            try:
                finder.run_script(file)
            except (SyntaxError, ValueError, ImportError) as error:
                print(f"cannot scan {file}: {error}", file=sys.stderr)
            edges[file] |= finder.edges.pop(file, set())
    for importer, targets in finder.edges.items():
        edges[importer] |= targets
    reverse: dict[str, set[str]] = defaultdict(set)
    for importer, targets in edges.items():
        for target in targets:
            reverse[target].add(importer)
    seen, queue = {changed}, deque([changed])
    while queue:
        for importer in reverse.get(queue.popleft(), ()):
            if importer not in seen:
                seen.add(importer)
                queue.append(importer)
    reached = sorted(os.path.relpath(t, root) for t in seen if os.path.relpath(t, root) in tests)
    print(json.dumps(reached))
    return 0


if __name__ == "__main__":
    # modulefinder recurses once per import in a chain: give it a deep stack
    sys.setrecursionlimit(200_000)
    threading.stack_size(512 * 1024 * 1024)
    outcome: list[int] = []
    worker = threading.Thread(target=lambda: outcome.append(main(sys.argv[1:])))
    worker.start()
    worker.join()
    sys.exit(outcome[0] if outcome else 1)
