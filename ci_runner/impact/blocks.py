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
import hashlib
from dataclasses import dataclass

from ci_runner.impact.parsed import parse

MODULE = "<module>"
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Block:
    """One block of a file: its key, its hash, and the lines of its own body."""

    key: str
    digest: str
    lines: frozenset[int]  # lines whose execution counts as executing this block


def _dump(node: object, top: ast.AST) -> str:
    """``ast.dump`` without positions, with the body of every function nested in ``top``
    written as ``...`` (its signature kept)."""
    parts: list[str] = []
    _dump_into(node, top, parts)
    return "".join(parts)


def _dump_into(node: object, top: ast.AST, out: list[str]) -> None:
    """:func:`_dump`'s text, appended piece by piece (one list, no intermediate strings)."""
    if isinstance(node, ast.AST):
        kind = node.__class__
        stub = (kind is ast.FunctionDef or kind is ast.AsyncFunctionDef) and node is not top
        out.append(kind.__name__ + "(")
        for index, name in enumerate(node._fields):
            out.append(f"{name}=" if index == 0 else f",{name}=")
            if stub and name == "body":
                out.append("...")
            else:
                _dump_into(getattr(node, name, None), top, out)
        out.append(")")
    elif node.__class__ is list:
        out.append("[")
        for index, item in enumerate(node):  # type: ignore[arg-type]
            if index:
                out.append(",")
            _dump_into(item, top, out)
        out.append("]")
    else:
        out.append(repr(node))


def stub_dump(node: ast.AST) -> str:
    """``node``'s position-free dump with the bodies of the functions nested in it stubbed."""
    return _dump(node, node)


def _digest(node: ast.AST) -> str:
    return hashlib.sha256(_dump(node, node).encode("utf-8", "surrogatepass")).hexdigest()


def _body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[int]:
    first = node.body[0]
    # A docstring-only first statement still belongs to the body.
    return set(range(first.lineno, (node.end_lineno or first.lineno) + 1))


_HOLDERS = (ast.stmt, ast.excepthandler, ast.match_case)  # what a function can be nested in


def _statement_children(node: ast.AST) -> list[ast.AST]:
    """The children of ``node`` that can hold a ``def`` (statements, ``except`` clauses and
    ``case`` blocks; an expression cannot), in :func:`ast.iter_child_nodes` order."""
    found = []
    for name in node._fields:
        value = getattr(node, name, None)
        if value.__class__ is list:
            found += [item for item in value if isinstance(item, _HOLDERS)]
    return found


def function_nodes(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function of a parsed file (nested ones included) with its block key, in source
    order."""
    found: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
    counts: dict[str, int] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in _statement_children(node):
            if isinstance(child, _FUNCTIONS):
                name = prefix + child.name
                counts[name] = counts.get(name, 0) + 1
                key = name if counts[name] == 1 else f"{name}#{counts[name]}"
                found.append((key, child))
                walk(child, key + ".")
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    return found


def blocks_of(tree: ast.Module) -> list[Block]:
    """The blocks of a parsed file, the module-level block first."""
    owned: dict[int, str] = {}  # line -> key of the innermost function whose body holds it
    found = []
    for key, node in function_nodes(tree):
        for line in _body_lines(node):
            owned[line] = key
        found.append(Block(key, _digest(node), frozenset()))
    lines_of: dict[str, set[int]] = {}
    for line, key in owned.items():
        lines_of.setdefault(key, set()).add(line)
    module = Block(MODULE, _digest(tree), frozenset())
    blocks = [module, *found]
    return [Block(b.key, b.digest, frozenset(lines_of.get(b.key, ()))) for b in blocks]


def parse_blocks(source: str | bytes) -> list[Block] | None:
    """The blocks of ``source`` (module level first); None when it does not parse."""
    try:
        return blocks_of(parse(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def block_hashes(source: str | bytes) -> dict[str, str] | None:
    """``{key: digest}`` of every block of ``source``; None when it does not parse."""
    blocks = parse_blocks(source)
    return None if blocks is None else {b.key: b.digest for b in blocks}


def executed(blocks: list[Block], lines: set[int]) -> dict[str, str]:
    """``{key: digest}`` of the blocks that ``lines`` (executed line numbers) fall in; a line in
    no function's body is module level."""
    owner = {line: block for block in blocks[1:] for line in block.lines}
    hit: dict[str, str] = {}
    for line in lines:
        block = owner.get(line, blocks[0])
        hit[block.key] = block.digest
    return hit


def executed_blocks(source: str | bytes, lines: set[int]) -> dict[str, str] | None:
    """:func:`executed` for a source text; None when it does not parse."""
    blocks = parse_blocks(source)
    return None if blocks is None else executed(blocks, lines)
