"""A Python file cut into the blocks a recorded test can execute: functions and module level.

Every function or method (nested ones included) is one block; everything else of the file (its
imports, assignments, class bodies, and the ``def`` lines themselves: decorators, defaults and
annotations run when the ``def`` runs) is the module-level block, :data:`MODULE`. A block's hash
is the SHA-256 of its ``ast`` dump without positions, with the bodies of the functions nested in
it left out (each is its own block). So a change to one function's body changes that block's
hash only, while comments, blank lines and moving code change no hash; adding, removing or
re-decorating a function changes the block that holds its ``def``.

A block's key is its qualified name (``Class.method``, ``outer.inner``); a name defined twice in
one scope (a property's setter, a conditional definition) gets ``#2``, ``#3`` in source order.
"""

from __future__ import annotations

import ast
import copy
import hashlib
from dataclasses import dataclass

MODULE = "<module>"
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Block:
    """One block of a file: its key, its hash, and the lines of its own body."""

    key: str
    digest: str
    lines: frozenset[int]  # lines whose execution counts as executing this block


class _Stub(ast.NodeTransformer):
    """Replaces each nested function's body with ``...``, keeping its signature."""

    def __init__(self, top: ast.AST) -> None:
        self.top = top

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return self._stub(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        return self._stub(node)

    def _stub(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        if node is self.top:
            return self.generic_visit(node)
        copy = type(node)(**{f: getattr(node, f) for f in node._fields})
        copy.body = [ast.Expr(ast.Constant(...))]
        copy.decorator_list = [self.visit(d) for d in node.decorator_list]
        copy.args = self.visit(node.args)
        return copy


def _digest(node: ast.AST) -> str:
    own = copy.deepcopy(node)
    stubbed = _Stub(own).visit(own)
    return hashlib.sha256(ast.dump(stubbed, include_attributes=False).encode()).hexdigest()


def _body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[int]:
    first = node.body[0]
    # A docstring-only first statement still belongs to the body.
    return set(range(first.lineno, (node.end_lineno or first.lineno) + 1))


def blocks_of(tree: ast.Module) -> list[Block]:
    """The blocks of a parsed file, the module-level block first."""
    found: list[Block] = []
    counts: dict[str, int] = {}
    owned: dict[int, str] = {}  # line -> key of the innermost function whose body holds it

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _FUNCTIONS):
                name = prefix + child.name
                counts[name] = counts.get(name, 0) + 1
                key = name if counts[name] == 1 else f"{name}#{counts[name]}"
                for line in _body_lines(child):
                    owned[line] = key
                found.append(Block(key, _digest(child), frozenset()))
                walk(child, key + ".")
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    lines_of: dict[str, set[int]] = {}
    for line, key in owned.items():
        lines_of.setdefault(key, set()).add(line)
    module = Block(MODULE, _digest(tree), frozenset())
    blocks = [module, *found]
    return [Block(b.key, b.digest, frozenset(lines_of.get(b.key, ()))) for b in blocks]


def block_hashes(source: str | bytes) -> dict[str, str] | None:
    """``{key: digest}`` of every block of ``source``; None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return {b.key: b.digest for b in blocks_of(tree)}


def executed_blocks(source: str | bytes, lines: set[int]) -> dict[str, str] | None:
    """``{key: digest}`` of the blocks that ``lines`` (executed line numbers) fall in; a line in
    no function's body is module level. None when ``source`` does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    blocks = blocks_of(tree)
    owner: dict[int, Block] = {}
    for block in blocks[1:]:
        for line in block.lines:
            owner[line] = block
    hit: dict[str, str] = {}
    for line in lines:
        block = owner.get(line, blocks[0])
        hit[block.key] = block.digest
    return hit
