"""Find ``register_<backend>_ci(...)`` calls in one file's syntax tree, without importing it.

Accepted: a module-level expression statement that is the call itself, spelled by bare name
(``register_cuda_ci(...)``), through an import alias (``from ci_runner import register_cuda_ci as
reg``, from any module: ``from sglang.test.ci.ci_register import register_cuda_ci``) or through a
module attribute (``ci_runner.register_cuda_ci(...)``, ``cr.markers.register_cuda_ci(...)``).
Which names are markers, and which arguments they take, comes from the catalog's
:class:`~ci_runner.catalog.syntax.RegistrationSyntax`. Anything else that mentions a marker
is reported, and so is a module-level call of an unknown ``register_<name>_ci``, so no
registration is silently ignored.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Mapping

from ci_runner.catalog.syntax import DEFAULT_SYNTAX, RegistrationSyntax
from ci_runner.collect.arguments import parse_call
from ci_runner.model import Problem, Registration


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


def scan_markers(
    source: str, rel_path: str, syntax: RegistrationSyntax = DEFAULT_SYNTAX
) -> tuple[list[Registration], list[Problem]]:
    """Registrations of one file plus every malformed, hidden or duplicated marker call.

    Catalog-independent: suite names are not checked here (see :mod:`ci_runner.collect.suite_checks`).
    """
    tree, problem = parse_source(source, rel_path)
    if tree is None:
        return [], [problem] if problem else []
    return scan_tree(tree, rel_path, source, syntax)


def scan_tree(
    tree: ast.Module,
    rel_path: str,
    source: str | bytes | None = None,
    syntax: RegistrationSyntax = DEFAULT_SYNTAX,
) -> tuple[list[Registration], list[Problem]]:
    """:func:`scan_markers` on an already parsed module.

    With ``source``, only the top-level statements whose lines mention a marker (or an alias of
    one) are walked; the result is the same, just faster on large trees.
    """
    markers = syntax.markers
    if source is not None and _has_bare_carriage_return(source):
        source = None  # line numbers would not match "\n" counting: walk everything
    statements = (
        tree.body if source is None else _statements_mentioning_markers(tree, source, markers)
    )
    aliases = _marker_aliases(statements, markers)
    if source is not None and set(aliases) - set(markers):
        statements = _statements_mentioning_markers(tree, source, markers, aliases)
    registrations: list[Registration] = []
    problems: list[Problem] = []
    for stmt in statements:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(call, ast.Call) and (marker := _marker_of(call.func, aliases, markers)):
            registration, call_problems = parse_call(call, marker, rel_path, syntax)
            problems.extend(call_problems)
            if registration is not None:
                registrations.append(registration)
            arguments = [*call.args, *(kw.value for kw in call.keywords)]
            hidden_roots = [a for a in arguments if not isinstance(a, ast.Constant)]
        else:
            if isinstance(call, ast.Call) and (unknown := unknown_marker_name(call.func)):
                problems.append(_unknown_marker(call, unknown, syntax, rel_path))
            hidden_roots = [stmt]
        for root in hidden_roots:
            problems.extend(_hidden_markers(root, stmt, aliases, markers, rel_path))
    unique, duplicates = _drop_duplicates(registrations)
    problems.extend(duplicates)
    problems.sort(key=lambda p: (p.line, p.col, p.message))
    return unique, problems


_MARKER_PATTERN = r"register_\w+_ci"
_MARKER_NAME = re.compile(r"register_(\w+)_ci\Z")


def unknown_marker_name(func: ast.expr) -> str | None:
    """``register_<x>_ci`` called by bare name or module attribute (known or not), else None."""
    if isinstance(func, ast.Name):
        name = func.id
    elif isinstance(func, ast.Attribute) and _is_dotted_name(func.value):
        name = func.attr
    else:
        return None
    return name if _MARKER_NAME.match(name) else None


def backend_of_marker_name(name: str) -> str:
    """``register_mlx_ci`` -> ``mlx`` (the naming convention of markers)."""
    match = _MARKER_NAME.match(name)
    return match.group(1) if match else name


def _unknown_marker(
    call: ast.Call, name: str, syntax: RegistrationSyntax, rel_path: str
) -> Problem:
    return Problem(
        rel_path,
        call.lineno,
        call.col_offset + 1,
        f"unknown marker {name}(): the catalog declares no such marker (known: "
        f"{', '.join(sorted(syntax.markers))}); if it registers for a backend of this "
        f"repository, declare it: [tool.ci-runner.extra-markers] {name} = "
        f'"{backend_of_marker_name(name)}"',
    )


def _has_bare_carriage_return(source: str | bytes) -> bool:
    if isinstance(source, bytes):
        return source.count(b"\r") != source.count(b"\r\n")
    return source.count("\r") != source.count("\r\n")


def _statements_mentioning_markers(
    tree: ast.Module,
    source: str | bytes,
    markers: Mapping[str, str],
    aliases: dict[str, str] | None = None,
) -> list[ast.stmt]:
    """Top-level statements whose line span contains a marker name or alias, in order."""
    extra = [name for name in markers if not _MARKER_NAME.match(name)]
    words = [_MARKER_PATTERN, *(rf"\b{re.escape(a)}\b" for a in [*extra, *(aliases or ())])]
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


def _marker_aliases(statements: list[ast.stmt], markers: Mapping[str, str]) -> dict[str, str]:
    """Local names bound to a marker by ``from <module> import register_x_ci [as name]``."""
    aliases: dict[str, str] = {}
    for stmt in statements:
        for node in iter_nodes(stmt) if _may_contain_imports(stmt) else ():
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name in markers:
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


def _marker_of(node: ast.AST, aliases: dict[str, str], markers: Mapping[str, str]) -> str | None:
    """The marker function that ``node`` names, or None."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        if node.id in aliases:
            return aliases[node.id]
        return node.id if node.id in markers else None
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Load)
        and node.attr in markers
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
    root: ast.AST,
    stmt: ast.stmt,
    aliases: dict[str, str],
    markers: Mapping[str, str],
    rel_path: str,
) -> list[Problem]:
    """Every marker mentioned under ``root`` (which is not an accepted registration)."""
    where = _describe(stmt)
    problems: list[Problem] = []
    called: set[int] = set()
    nodes = iter_nodes(root)
    for node in nodes:
        if isinstance(node, ast.Call) and (marker := _marker_of(node.func, aliases, markers)):
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
        marker = _marker_of(node, aliases, markers)
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


def _drop_duplicates(
    registrations: list[Registration],
) -> tuple[list[Registration], list[Problem]]:
    """Keep the first registration per (backend, suite); report the others.

    Disabled placeholders with ``suite=""`` belong to no suite, so they are never duplicates.
    """
    first: dict[tuple[str, str], Registration] = {}
    problems: list[Problem] = []
    unique: list[Registration] = []
    for reg in registrations:
        key = (reg.backend, reg.suite)
        if not reg.suite:
            unique.append(reg)
        elif key in first:
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
            unique.append(reg)
    return unique, problems
