"""The planted bugs of the mutation replay (lab tool, see ``tools/impact_replay.py``): one
operator, comparison, boolean constant, integer or return value changed, on a line that ran, in a
function whose body the replayed commit changed."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Mutant:
    file: str
    line: int
    operator: str
    before: str  # the whole line
    after: str


_BINOPS = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "+"), ast.Div: ("/", "*"),
           ast.FloorDiv: ("//", "*"), ast.Mod: ("%", "//"), ast.BitAnd: ("&", "|"),
           ast.BitOr: ("|", "&"), ast.LShift: ("<<", ">>"), ast.RShift: (">>", "<<")}  # fmt: skip
_CMPOPS = {ast.Eq: ("==", "!="), ast.NotEq: ("!=", "=="), ast.Lt: ("<", "<="),
           ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">"),
           ast.Is: (" is ", " is not "), ast.IsNot: (" is not ", " is "),
           ast.In: (" in ", " not in "), ast.NotIn: (" not in ", " in ")}  # fmt: skip


def touched_lines(diff: str) -> set[int]:
    """The new-side line numbers of a ``git diff -U0`` (a pure deletion: the line after it)."""
    lines: set[int] = set()
    for row in diff.splitlines():
        if row.startswith("@@"):
            new = row.split("+", 1)[1].split(" ", 1)[0]
            start, _, count = new.partition(",")
            count_n = int(count) if count else 1
            lines.update(range(int(start), int(start) + max(count_n, 1)))
    return lines


def _replace_between(
    lines: list[str], node_a: ast.AST, node_b: ast.AST, old: str, new: str
) -> tuple[int, str] | None:
    """Replace the first ``old`` between the end of ``node_a`` and the start of ``node_b`` when
    both are on one line."""
    if node_a.end_lineno != node_b.lineno:
        return None
    line = lines[node_b.lineno - 1].encode()
    start, end = node_a.end_col_offset, node_b.col_offset
    segment = line[start:end].decode(errors="replace")
    if old not in segment:
        return None
    mutated = line[:start].decode() + segment.replace(old, new, 1) + line[end:].decode()
    return node_b.lineno, mutated


def mutants_of(source: str, path: str, touched: set[int], executed: set[int]) -> list[Mutant]:
    """Every mutant on an executed line of a function whose body holds a touched line."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    lines = source.splitlines()
    functions = [
        n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        and touched & set(range(n.body[0].lineno, (n.end_lineno or 0) + 1))
    ]  # fmt: skip
    found: dict[tuple[int, str], Mutant] = {}

    def add(line: int, operator: str, after: str) -> None:
        before = lines[line - 1]
        if after != before and line in executed:
            found.setdefault((line, after), Mutant(path, line, operator, before, after))

    for function in functions:
        body = [n for stmt in function.body for n in ast.walk(stmt)]
        docstring = function.body[0] if isinstance(function.body[0], ast.Expr) else None
        for node in body:
            if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
                old, new = _BINOPS[type(node.op)]
                hit = _replace_between(lines, node.left, node.right, old, new)
                if hit:
                    add(hit[0], f"{old.strip()} to {new.strip()}", hit[1])
            elif (
                isinstance(node, ast.Compare)
                and len(node.ops) == 1
                and type(node.ops[0]) in _CMPOPS
            ):
                old, new = _CMPOPS[type(node.ops[0])]
                hit = _replace_between(lines, node.left, node.comparators[0], old, new)
                if hit:
                    add(hit[0], f"{old.strip()} to {new.strip()}", hit[1])
            elif isinstance(node, ast.BoolOp) and len(node.values) >= 2:
                old, new = (" and ", " or ") if isinstance(node.op, ast.And) else (" or ", " and ")
                hit = _replace_between(lines, node.values[0], node.values[1], old, new)
                if hit:
                    add(hit[0], f"{old.strip()} to {new.strip()}", hit[1])
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                line = lines[node.lineno - 1].encode()
                segment = line[node.col_offset : node.operand.col_offset].decode(errors="replace")
                if node.lineno == node.operand.lineno and segment.strip() == "not":
                    add(
                        node.lineno,
                        "drop not",
                        (line[: node.col_offset] + line[node.operand.col_offset :]).decode(),
                    )
            elif isinstance(node, ast.Constant) and node is not getattr(docstring, "value", None):
                if node.lineno != node.end_lineno:
                    continue
                line = lines[node.lineno - 1].encode()
                text = line[node.col_offset : node.end_col_offset].decode(errors="replace")
                replacement = None
                if node.value is True and text == "True":
                    replacement = "False"
                elif node.value is False and text == "False":
                    replacement = "True"
                elif type(node.value) is int and text.isdigit():
                    replacement = str(node.value + 1)
                if replacement is not None:
                    mutated = (
                        line[: node.col_offset].decode()
                        + replacement
                        + line[node.end_col_offset :].decode()
                    )
                    add(node.lineno, f"{text} to {replacement}", mutated)
            elif isinstance(node, ast.Return) and node.value is not None:
                value = node.value
                if value.lineno == value.end_lineno == node.lineno and not (
                    isinstance(value, ast.Constant) and value.value is None
                ):
                    line = lines[node.lineno - 1].encode()
                    mutated = (
                        line[: value.col_offset].decode()
                        + "None"
                        + line[value.end_col_offset :].decode()
                    )
                    add(node.lineno, "return None", mutated)
    return list(found.values())


def apply(work: Path, mutant: Mutant) -> str:
    path = work / mutant.file
    original = path.read_text(encoding="utf-8")
    lines = original.split("\n")
    assert lines[mutant.line - 1] == mutant.before, (mutant.file, mutant.line)
    lines[mutant.line - 1] = mutant.after
    path.write_text("\n".join(lines), encoding="utf-8")
    return original
