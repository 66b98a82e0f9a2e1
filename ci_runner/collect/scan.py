"""Find ``register_<backend>_ci(...)`` calls in one file's syntax tree, without importing it.

Accepted: a module-level expression statement that is the call itself, spelled by bare name
(``register_cuda_ci(...)``), through an import alias (``from ci_runner import register_cuda_ci as
reg``) or through a module attribute (``ci_runner.register_cuda_ci(...)``, ``cr.markers.
register_cuda_ci(...)``). Every argument must be a literal. Anything else that mentions a marker
is reported, so no registration is silently ignored.
"""

from __future__ import annotations

import ast
import bisect
import difflib
import math
import re

from ci_runner.markers import MARKER_BACKENDS, MARKER_PARAMETERS
from ci_runner.model import Problem, Registration

_MISSING = object()


def parse_source(source: str | bytes, rel_path: str) -> tuple[ast.Module | None, Problem | None]:
    """Parse ``source``; a syntax error (or a NUL byte) becomes a Problem instead."""
    try:
        return ast.parse(source, filename=rel_path), None
    except SyntaxError as exc:
        line = exc.lineno or 1
        col = exc.offset or 1
        return None, Problem(rel_path, line, col, f"syntax error: {exc.msg}")
    except ValueError as exc:  # e.g. "source code string cannot contain null bytes"
        return None, Problem(rel_path, 1, 1, f"cannot parse: {exc}")


def scan_markers(source: str, rel_path: str) -> tuple[list[Registration], list[Problem]]:
    """Registrations of one file plus every malformed, hidden or duplicated marker call.

    Catalog-independent: suite names are not checked here (see :mod:`ci_runner.collect.suites`).
    """
    tree, problem = parse_source(source, rel_path)
    if tree is None:
        return [], [problem] if problem else []
    return scan_tree(tree, rel_path, source)


def scan_tree(
    tree: ast.Module, rel_path: str, source: str | bytes | None = None
) -> tuple[list[Registration], list[Problem]]:
    """:func:`scan_markers` on an already parsed module.

    With ``source``, only the top-level statements whose lines mention a marker (or an alias of
    one) are walked; the result is the same, just faster on large trees.
    """
    if source is not None and _has_bare_carriage_return(source):
        source = None  # line numbers would not match "\n" counting: walk everything
    statements = tree.body if source is None else _statements_mentioning_markers(tree, source)
    aliases = _marker_aliases(statements)
    if source is not None and set(aliases) - set(MARKER_BACKENDS):
        statements = _statements_mentioning_markers(tree, source, aliases)
    registrations: list[Registration] = []
    problems: list[Problem] = []
    for stmt in statements:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(call, ast.Call) and (marker := _marker_of(call.func, aliases)):
            registration, call_problems = _parse_call(call, marker, rel_path)
            problems.extend(call_problems)
            if registration is not None:
                registrations.append(registration)
            arguments = [*call.args, *(kw.value for kw in call.keywords)]
            hidden_roots = [a for a in arguments if not isinstance(a, ast.Constant)]
        else:
            hidden_roots = [stmt]
        for root in hidden_roots:
            problems.extend(_hidden_markers(root, stmt, aliases, rel_path))
    unique, duplicates = _drop_duplicates(registrations)
    problems.extend(duplicates)
    problems.sort(key=lambda p: (p.line, p.col, p.message))
    return unique, problems


_MARKER_PATTERN = r"register_\w+_ci"


def _has_bare_carriage_return(source: str | bytes) -> bool:
    if isinstance(source, bytes):
        return source.count(b"\r") != source.count(b"\r\n")
    return source.count("\r") != source.count("\r\n")


def _statements_mentioning_markers(
    tree: ast.Module, source: str | bytes, aliases: dict[str, str] | None = None
) -> list[ast.stmt]:
    """Top-level statements whose line span contains a marker name or alias, in order."""
    words = [_MARKER_PATTERN, *(rf"\b{re.escape(a)}\b" for a in aliases or ())]
    pattern = "|".join(words)
    if isinstance(source, bytes):
        matches = re.finditer(pattern.encode(), source)
        newline: str | bytes = b"\n"
    else:
        matches = re.finditer(pattern, source)
        newline = "\n"
    lines: list[int] = []
    line, position = 1, 0
    for match in matches:
        line += source.count(newline, position, match.start())  # type: ignore[arg-type]
        position = match.start()
        lines.append(line)
    if not lines:
        return []
    selected = []
    for stmt in tree.body:
        end = stmt.end_lineno or stmt.lineno
        index = bisect.bisect_left(lines, stmt.lineno)
        if index < len(lines) and lines[index] <= end:
            selected.append(stmt)
    return selected


def _marker_aliases(statements: list[ast.stmt]) -> dict[str, str]:
    """Local names bound to a marker by ``from <module> import register_x_ci [as name]``."""
    aliases: dict[str, str] = {}
    for stmt in statements:
        for node in iter_nodes(stmt) if _may_contain_imports(stmt) else ():
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name in MARKER_BACKENDS:
                        aliases[alias.asname or alias.name] = alias.name
    return aliases


def _may_contain_imports(stmt: ast.stmt) -> bool:
    return not isinstance(stmt, ast.Expr | ast.Assign | ast.AnnAssign | ast.AugAssign | ast.Import)


def iter_nodes(root: ast.AST) -> list[ast.AST]:
    """Every node under ``root`` (included), like :func:`ast.walk` but faster."""
    out: list[ast.AST] = []
    stack = [root]
    while stack:
        node = stack.pop()
        out.append(node)
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                stack.extend(item for item in value if isinstance(item, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append(value)
    return out


def _is_dotted_name(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _marker_of(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """The marker function that ``node`` names, or None."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        if node.id in aliases:
            return aliases[node.id]
        return node.id if node.id in MARKER_BACKENDS else None
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Load)
        and node.attr in MARKER_BACKENDS
        and _is_dotted_name(node.value)
    ):
        return node.attr
    return None


def _describe(stmt: ast.stmt) -> str:
    """Where a hidden marker sits, in words, from its enclosing top-level statement."""
    if isinstance(stmt, ast.If):
        return "an if block"
    if isinstance(stmt, ast.Try | ast.TryStar):
        return "a try block"
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
        return f"function {stmt.name!r}"
    if isinstance(stmt, ast.ClassDef):
        return f"class {stmt.name!r}"
    if isinstance(stmt, ast.With | ast.AsyncWith):
        return "a with block"
    if isinstance(stmt, ast.For | ast.AsyncFor | ast.While):
        return "a loop"
    if isinstance(stmt, ast.Match):
        return "a match statement"
    if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
        return "an assignment"
    if isinstance(stmt, ast.Expr):
        return "an expression"
    return f"a {type(stmt).__name__.lower()} statement"


def _hidden_markers(
    root: ast.AST, stmt: ast.stmt, aliases: dict[str, str], rel_path: str
) -> list[Problem]:
    """Every marker mentioned under ``root`` (which is not an accepted registration)."""
    where = _describe(stmt)
    problems: list[Problem] = []
    called: set[int] = set()
    nodes = iter_nodes(root)
    for node in nodes:
        if isinstance(node, ast.Call) and (marker := _marker_of(node.func, aliases)):
            called.add(id(node.func))
            problems.append(
                Problem(
                    rel_path,
                    node.lineno,
                    node.col_offset + 1,
                    f"{marker}() inside {where} is not collected: a registration must be a "
                    "module-level statement of its own",
                )
            )
    for node in nodes:
        if id(node) in called:
            continue
        marker = _marker_of(node, aliases)
        if marker is None:
            continue
        problems.append(
            Problem(
                rel_path,
                node.lineno,
                node.col_offset + 1,
                f"{marker} is used inside {where} without being called at module level: "
                "wrappers and indirect calls are not collected",
            )
        )
    return problems


def _parse_call(
    call: ast.Call, marker: str, rel_path: str
) -> tuple[Registration | None, list[Problem]]:
    """Turn one accepted marker call into a Registration, or into Problems."""
    problems: list[Problem] = []

    def report(node: ast.AST, message: str) -> None:
        problems.append(Problem(rel_path, node.lineno, node.col_offset + 1, message))

    values: dict[str, ast.expr] = {}
    unpacked = False
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            report(arg, f"starred argument {ast.unparse(arg)} is not supported in {marker}()")
            unpacked = True
        elif index >= len(MARKER_PARAMETERS):
            report(
                arg,
                f"too many positional arguments in {marker}(): at most "
                f"{len(MARKER_PARAMETERS)} ({', '.join(MARKER_PARAMETERS)})",
            )
            break
        else:
            values[MARKER_PARAMETERS[index]] = arg
    for keyword in call.keywords:
        if keyword.arg is None:
            report(keyword, f"**{ast.unparse(keyword.value)} is not supported in {marker}()")
            unpacked = True
        elif keyword.arg not in MARKER_PARAMETERS:
            close = difflib.get_close_matches(keyword.arg, MARKER_PARAMETERS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            report(
                keyword,
                f"unknown argument {keyword.arg!r} in {marker}(); expected "
                f"{', '.join(MARKER_PARAMETERS)}{hint}",
            )
        elif keyword.arg in values:
            report(
                keyword,
                f"argument {keyword.arg!r} given twice in {marker}() (positionally and by keyword)",
            )
        else:
            values[keyword.arg] = keyword.value
    if not unpacked:
        for required in ("est_time", "suite"):
            if required not in values:
                report(call, f"{marker}() is missing the required argument {required!r}")
    checked: dict[str, object] = {}
    for name, node in values.items():
        value = _literal(node)
        if value is _MISSING:
            report(
                node,
                f"{name} must be a literal ({_EXPECTED[name]}), got `{ast.unparse(node)}`: "
                "the runner reads registrations without running the file",
            )
            continue
        error = _CHECKS[name](value)
        if error:
            report(node, f"{name} {error}")
        else:
            checked[name] = value
    if problems:
        return None, problems
    est = checked["est_time"]
    return (
        Registration(
            path=rel_path,
            backend=MARKER_BACKENDS[marker],
            suite=str(checked["suite"]),
            est_time=float(est),  # type: ignore[arg-type]
            nightly=bool(checked.get("nightly", False)),
            disabled=checked.get("disabled"),  # type: ignore[arg-type]
            line=call.lineno,
            col=call.col_offset + 1,
        ),
        [],
    )


def _literal(node: ast.expr) -> object:
    """The value of a literal constant (a signed number counts), else ``_MISSING``."""
    if isinstance(node, ast.Constant):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub | ast.UAdd)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) in (int, float)
    ):
        value = node.operand.value
        return -value if isinstance(node.op, ast.USub) else value
    return _MISSING


def _type_name(value: object) -> str:
    return "None" if value is None else type(value).__name__


def _check_est_time(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number of seconds, got {value!r} ({_type_name(value)})"
    if not math.isfinite(value) or value <= 0:
        return f"must be a positive finite number of seconds, got {value!r}"
    return None


def _check_suite(value: object) -> str | None:
    if not isinstance(value, str):
        return f"must be a string, got {value!r} ({_type_name(value)})"
    if not value.strip():
        return "must be a non-empty suite name"
    return None


def _check_nightly(value: object) -> str | None:
    if not isinstance(value, bool):
        return f"must be True or False, got {value!r} ({_type_name(value)})"
    return None


def _check_disabled(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        return f"must be a reason string or None, got {value!r} ({_type_name(value)})"
    if not value.strip():
        return "must be a non-empty reason string (or None for enabled)"
    return None


_CHECKS = {
    "est_time": _check_est_time,
    "suite": _check_suite,
    "nightly": _check_nightly,
    "disabled": _check_disabled,
}
_EXPECTED = {
    "est_time": "a positive number of seconds",
    "suite": "a string",
    "nightly": "True or False",
    "disabled": "a reason string or None",
}


def _drop_duplicates(
    registrations: list[Registration],
) -> tuple[list[Registration], list[Problem]]:
    """Keep the first registration per (backend, suite); report the others."""
    first: dict[tuple[str, str], Registration] = {}
    problems: list[Problem] = []
    for reg in registrations:
        key = (reg.backend, reg.suite)
        if key in first:
            problems.append(
                Problem(
                    reg.path,
                    reg.line,
                    reg.col,
                    f"duplicate registration: suite {reg.suite!r} ({reg.backend}) is already "
                    f"registered at line {first[key].line}",
                )
            )
        else:
            first[key] = reg
    return list(first.values()), problems
