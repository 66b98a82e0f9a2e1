"""Paths a Python file spells relative to its own location, read from its syntax tree.

The idiom of a kernel file kept next to the code that builds it: ``Path(__file__).parent /
"kernels" / "x.cuh"``, ``Path(__file__).resolve().parent``, ``Path(__file__).parents[1]``,
``Path(__file__).with_name("x.cuh")``, ``.joinpath("a", "b")``, ``os.path.join(os.path.dirname(
os.path.abspath(__file__)), "x.cuh")`` (``realpath`` and ``normpath`` too), each optionally inside
``str(...)`` or ``os.fspath(...)``, written in place or through a module-level name bound exactly
once in the file (``KERNELS = Path(__file__).parent / "kernels"``, then ``KERNELS / "x.cuh"``).
Names resolve through the file's imports (``from pathlib import Path``, ``import os.path as
osp``); a name bound more than once anywhere in the file (a parameter, a loop variable, a second
assignment) stands for nothing. :meth:`LocalPaths.resolve` gives such a path relative to the
file's directory (POSIX, normalized, with ``..`` where it climbs), or None for anything else.
"""

from __future__ import annotations

import ast
import posixpath
from collections import Counter
from dataclasses import dataclass

_MAX_DEPTH = 32  # names standing for names: deeper is a cycle or not worth following
_SAME_PATH_CALLS = frozenset(
    {"str", "os.fspath", "os.path.abspath", "os.path.realpath", "os.path.normpath"}
)
_PATH_TYPES = frozenset(
    {"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "pathlib.PurePosixPath"}
)
_SAME_PATH_METHODS = frozenset({"resolve", "absolute"})
_BUILTINS = frozenset({"str"})


@dataclass(frozen=True)
class _Place:
    """The file itself (``relative`` None) or a path relative to the file's directory."""

    relative: str | None


_SOURCE_FILE = _Place(None)


def _binding_counts(tree: ast.AST) -> Counter[str]:
    """How often each name is bound anywhere in the file (assigned, a parameter, a loop or
    ``with`` target, imported, defined, caught, matched, deleted, declared global)."""
    counts: Counter[str] = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            counts[node.id] += 1
        elif isinstance(node, ast.arg):
            counts[node.arg] += 1
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            counts[node.name] += 1
        elif isinstance(node, ast.alias):
            counts[node.asname or node.name.split(".")[0]] += 1
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            counts[node.name] += 1
        elif isinstance(node, ast.Global | ast.Nonlocal):
            counts.update(node.names)
    return counts


def _import_aliases(tree: ast.AST, counts: Counter[str]) -> dict[str, str]:
    """Local name -> the dotted name it imports, for names bound by imports alone, all agreeing."""
    seen: dict[str, set[str]] = {}
    imported: Counter[str] = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                seen.setdefault(local, set()).add(alias.name if alias.asname else local)
                imported[local] += 1
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                local = alias.asname or alias.name
                seen.setdefault(local, set()).add(f"{node.module}.{alias.name}")
                imported[local] += 1
    return {
        local: next(iter(targets))
        for local, targets in seen.items()
        if len(targets) == 1 and counts[local] == imported[local]
    }


class LocalPaths:
    """Resolves the expressions of one file that name a path next to it (module docstring)."""

    def __init__(self, tree: ast.Module) -> None:
        counts = _binding_counts(tree)
        self._aliases = _import_aliases(tree, counts)
        self._file_is_ours = counts["__file__"] == 0
        self.bound: dict[str, ast.expr] = {}  # module-level names bound once, and their values
        for statement in tree.body:
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                target, value = statement.targets[0], statement.value
            elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                target, value = statement.target, statement.value
            else:
                continue
            if isinstance(target, ast.Name) and counts[target.id] == 1:
                self.bound[target.id] = value

    def value_of(self, node: ast.expr) -> ast.expr:
        """``node``, or the expression a module-level name bound once in the file stands for."""
        for _ in range(_MAX_DEPTH):
            if not isinstance(node, ast.Name) or node.id not in self.bound:
                return node
            node = self.bound[node.id]
        return node

    def resolve(self, node: ast.expr) -> str | None:
        """The path ``node`` names, relative to the file's directory, or None."""
        place = self._place(node, 0)
        if place is None or place.relative is None or place.relative == ".":
            return None
        return place.relative

    def resolve_dir(self, node: ast.expr) -> str | None:
        """Like :meth:`resolve`, but the file's own directory (``"."``) is an answer too."""
        place = self._place(self.value_of(node), 0)
        return None if place is None or place.relative is None else place.relative

    def is_own_file(self, node: ast.expr) -> bool:
        """Whether ``node`` names the file itself (``__file__``, ``Path(__file__).resolve()``)."""
        place = self._place(self.value_of(node), 0)
        return place is not None and place.relative is None

    # ------------------------------------------------------------------ evaluation

    def _place(self, node: ast.expr, depth: int) -> _Place | None:
        if depth > _MAX_DEPTH:
            return None
        depth += 1
        if isinstance(node, ast.Name):
            if node.id == "__file__":
                return _SOURCE_FILE if self._file_is_ours else None
            bound = self.bound.get(node.id)
            return self._place(bound, depth) if bound is not None else None
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            return _parent(self._place(node.value, depth), 1)
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "parents"
            and isinstance(node.slice, ast.Constant)
            and type(node.slice.value) is int
            and node.slice.value >= 0
        ):
            return _parent(self._place(node.value.value, depth), node.slice.value + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return self._join(self._place(node.left, depth), [node.right])
        if isinstance(node, ast.Call) and not node.keywords:
            if any(isinstance(argument, ast.Starred) for argument in node.args):
                return None
            return self._call(node, depth)
        return None

    def _call(self, node: ast.Call, depth: int) -> _Place | None:
        name, args = self._dotted(node.func), node.args
        if name in _SAME_PATH_CALLS and len(args) == 1:
            return self._place(args[0], depth)
        if name in _PATH_TYPES and args:
            return self._join(self._place(args[0], depth), args[1:])
        if name == "os.path.dirname" and len(args) == 1:
            return _parent(self._place(args[0], depth), 1)
        if name == "os.path.join" and args:
            return self._join(self._place(args[0], depth), args[1:])
        if name is None and isinstance(node.func, ast.Attribute):
            method, base = node.func.attr, node.func.value
            if method in _SAME_PATH_METHODS and not args:
                return self._place(base, depth)
            if method == "joinpath":
                return self._join(self._place(base, depth), args)
            if method == "with_name" and len(args) == 1:
                return self._with_name(self._place(base, depth), args[0])
        return None

    def _dotted(self, func: ast.expr) -> str | None:
        """The imported dotted name a callee spells (``osp.join`` -> ``os.path.join``), if any."""
        if isinstance(func, ast.Name):
            return self._aliases.get(func.id, func.id if func.id in _BUILTINS else None)
        if isinstance(func, ast.Attribute):
            base = self._dotted(func.value)
            return f"{base}.{func.attr}" if base is not None else None
        return None

    def _literal(self, node: ast.expr) -> str | None:
        """A relative path segment written as a string (or a name bound once to one)."""
        node = self.value_of(node)
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            return None
        text = node.value
        if not text or text.startswith("/") or "\\" in text or "\0" in text:
            return None
        return text

    def _join(self, place: _Place | None, parts: list[ast.expr]) -> _Place | None:
        if place is None or not parts:
            return place
        if place.relative is None:  # nothing lies inside a file
            return None
        segments = [self._literal(part) for part in parts]
        if any(segment is None for segment in segments):
            return None
        return _Place(posixpath.normpath(posixpath.join(place.relative, *segments)))

    def _with_name(self, place: _Place | None, part: ast.expr) -> _Place | None:
        name = self._literal(part)
        if place is None or name is None or "/" in name:
            return None
        if place.relative is None:
            return _Place(name)
        if place.relative == "." or posixpath.basename(place.relative) == "..":
            return None
        return _Place(posixpath.normpath(posixpath.join(posixpath.dirname(place.relative), name)))


def _parent(place: _Place | None, levels: int) -> _Place | None:
    if place is None:
        return None
    relative = place.relative
    if relative is None:  # the file's parent is its directory
        relative, levels = ".", levels - 1
    return _Place(posixpath.normpath(posixpath.join(relative, *[".."] * levels)))
