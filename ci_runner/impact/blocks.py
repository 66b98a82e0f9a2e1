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

A function's position-free dump depends only on its own text, so cutting a new version of a
file reuses the hash of each function whose key, columns and text (its first decorator's line to
its last line, split as the parser splits lines) are those of a block of an earlier version
(``like``): a warm ``--deps-from`` run re-dumps only the functions a change touched, not the 261
of SGLang's 4,400-line ``common.py``.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import re
from collections.abc import Sequence
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
    text: str = ""  # a digest of a function's key, columns and source text ("": none known)


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
_LINE_END = re.compile(r"\r\n|\r|\n")  # the parser's line ends (a form feed is none)


def _source_lines(source: str | bytes) -> list[str] | None:
    """The lines of ``source`` as the parser numbers them (None: it cannot be decoded)."""
    try:
        text = importlib.util.decode_source(source) if isinstance(source, bytes) else source
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return None
    return _LINE_END.split(text)


def _text_key(key: str, node: ast.FunctionDef | ast.AsyncFunctionDef, lines: Sequence[str]) -> str:
    """A digest of the function's key, columns and text; "" where the lines do not show its
    start where the tree says (then its hash is never reused)."""
    first = min([d.lineno for d in node.decorator_list] + [node.lineno])
    end = node.end_lineno or node.lineno
    if end > len(lines):
        return ""
    head = lines[first - 1].lstrip(" \t\f")
    if not head.startswith("@" if node.decorator_list else ("def", "async")):
        return ""
    text = "\n".join(lines[first - 1 : end])
    identity = f"{key}\0{node.col_offset}\0{node.end_col_offset}\0{text}"
    return hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()[:32]


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


def blocks_of(
    tree: ast.Module, lines: Sequence[str] | None = None, like: Sequence[Block] = ()
) -> list[Block]:
    """The blocks of a parsed file, the module-level block first. With the file's ``lines``,
    each function's hash is taken from the block of ``like`` (an earlier version's blocks) that
    has its text key, and dumped otherwise."""
    known = {b.text: b.digest for b in like if b.text}
    owned: dict[int, str] = {}  # line -> key of the innermost function whose body holds it
    found = []
    for key, node in function_nodes(tree):
        for line in _body_lines(node):
            owned[line] = key
        text = _text_key(key, node, lines) if lines is not None else ""
        digest = known.get(text) if text else None
        found.append((key, digest or _digest(node), text))
    lines_of: dict[str, set[int]] = {}
    for line, key in owned.items():
        lines_of.setdefault(key, set()).add(line)
    module = Block(MODULE, _digest(tree), frozenset())
    return [module] + [Block(k, d, frozenset(lines_of.get(k, ())), t) for k, d, t in found]


def parse_blocks(source: str | bytes, like: Sequence[Block] = ()) -> list[Block] | None:
    """The blocks of ``source`` (module level first); None when it does not parse. Functions
    whose text a block of ``like`` has keep that block's hash."""
    try:
        return blocks_of(parse(source), _source_lines(source), like)
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
