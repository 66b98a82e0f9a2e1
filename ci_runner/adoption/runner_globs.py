"""``init``'s reading of the directories a tree's own runner collects, for ``extra-dirs``.

A registry-based runner names its files with ``glob.glob(<path>, recursive=True)``, the path
built from string literals, ``__file__`` and ``os.path.join`` / ``dirname`` / ``abspath`` of
names assigned once (SGLang's ``test/run_suite.py``: ``os.path.join(script_dir, "registered",
"**", "*.py")``, and at some commits ``os.path.join(jit_kernel_dir, "tests", "**",
"test_*.py")``). Each glob of the form ``<dir>/**/<name glob>.py`` is read as a root-relative
directory and a file-name glob; a literal relative path counts from the runner's directory
(where its CI calls it). Anything else (other calls, names assigned twice) is not guessed at.
"""

from __future__ import annotations

import ast
from pathlib import PurePosixPath

_SAME_PATH = {"abspath", "realpath", "normpath"}
_GLOB_CHARS = set("*?[")


class _Paths:
    """Evaluates path expressions of one runner file to root-relative POSIX paths."""

    def __init__(self, tree: ast.Module, runner: PurePosixPath) -> None:
        self.runner = runner
        self.assigned: dict[str, ast.expr | None] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):  # a name assigned twice is not guessed at
                    seen = target.id in self.assigned
                    self.assigned[target.id] = None if seen else node.value

    def value(self, node: ast.expr, depth: int = 0) -> tuple[PurePosixPath, bool] | None:
        """(path, anchored): anchored paths come from ``__file__``; others are literal."""
        if depth > 20:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return PurePosixPath(node.value), False
        if isinstance(node, ast.Name):
            if node.id == "__file__":
                return self.runner, True
            bound = self.assigned.get(node.id)
            return self.value(bound, depth + 1) if bound is not None else None
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            return None
        if node.keywords:
            return None
        name = node.func.attr
        args = [self.value(arg, depth + 1) for arg in node.args]
        if not args or any(a is None for a in args):
            return None
        if name in _SAME_PATH and len(args) == 1:
            return args[0]
        if name == "dirname" and len(args) == 1:
            path, anchored = args[0]  # type: ignore[misc]
            return path.parent, anchored
        if name == "join":
            path, anchored = args[0]  # type: ignore[misc]
            for more, _ in args[1:]:  # type: ignore[misc]
                path = path / more
            return path, anchored
        return None


def _is_recursive_glob(node: ast.Call) -> bool:
    func = node.func
    named_glob = (isinstance(func, ast.Attribute) and func.attr == "glob") or (
        isinstance(func, ast.Name) and func.id == "glob"
    )
    recursive = any(
        kw.arg == "recursive" and isinstance(kw.value, ast.Constant) and kw.value.value is True
        for kw in node.keywords
    )
    return named_glob and recursive and len(node.args) == 1


def collected_dirs(text: str, runner: str) -> list[tuple[str, str]]:
    """``(directory, file-name glob)`` of each ``<dir>/**/<glob>.py`` the runner at ``runner``
    (root-relative) globs recursively, in source order; directories are root-relative."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    runner_path = PurePosixPath(runner)
    paths = _Paths(tree, runner_path)
    found: list[tuple[str, str]] = []
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _is_recursive_glob(n)]
    for call in sorted(calls, key=lambda n: (n.lineno, n.col_offset)):
        evaluated = paths.value(call.args[0])
        if evaluated is None:
            continue
        path, anchored = evaluated
        if not anchored:
            path = runner_path.parent / path
        parts = path.parts
        if len(parts) < 2 or parts[-2] != "**" or not parts[-1].endswith(".py"):
            continue
        directory = PurePosixPath(*parts[:-2]) if len(parts) > 2 else PurePosixPath(".")
        if ".." in directory.parts or any(_GLOB_CHARS & set(p) for p in directory.parts):
            continue
        found.append((directory.as_posix(), parts[-1]))
    return found
