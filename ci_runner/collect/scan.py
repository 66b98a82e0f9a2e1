"""One file's registrations and problems, from its syntax tree, without importing it.

Accepted: a module-level expression statement that is a marker call itself, however the marker
is spelled (see :mod:`ci_runner.collect.calls`, which finds the calls: bare name, import alias,
a name assigned from an attribute, a module attribute). Which names are markers, and which
arguments they take, comes from the catalog's :class:`~ci_runner.catalog.syntax.RegistrationSyntax`.
Any other use of a marker is reported, and so is a module-level call of an unknown
``register_<name>_ci``, so no registration is silently ignored.
"""

from __future__ import annotations

import ast

from ci_runner.catalog.syntax import DEFAULT_SYNTAX, RegistrationSyntax
from ci_runner.collect.arguments import parse_call
from ci_runner.collect.calls import MarkerCall, backend_of_marker_name, read_marker_calls
from ci_runner.model import Problem, Registration


def parse_source(source: str | bytes, rel_path: str) -> tuple[ast.Module | None, Problem | None]:
    """Parse ``source``; a syntax error, a NUL byte or nesting too deep for Python's parser
    becomes a Problem instead."""
    try:
        return ast.parse(source, filename=rel_path), None
    except SyntaxError as exc:
        line = exc.lineno or 1
        col = exc.offset or 1
        return None, Problem(rel_path, line, col, f"syntax error: {exc.msg}")
    except ValueError as exc:  # e.g. "source code string cannot contain null bytes"
        return None, Problem(rel_path, 1, 1, f"cannot parse: {exc}")
    except (RecursionError, MemoryError) as exc:  # a 3,000-term sum, 1,000 nested lambdas
        return None, Problem(
            rel_path,
            1,
            1,
            f"cannot parse: nested too deeply for Python's parser ({type(exc).__name__}: "
            f"{exc or 'parser stack overflow'}); `python {rel_path}` fails the same way: "
            "split the expression",
        )


def scan_markers(
    source: str | bytes, rel_path: str, syntax: RegistrationSyntax = DEFAULT_SYNTAX
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

    With ``source``, only the top-level statements that mention a marker are walked; the result
    is the same, just faster on large trees.
    """
    uses = read_marker_calls(tree, syntax, source)
    registrations: list[Registration] = []
    problems: list[Problem] = []
    for call in uses.calls:
        if call.is_registration and call.known:
            registration, call_problems = parse_call(call, rel_path, syntax)
            problems.extend(call_problems)
            if registration is not None:
                registrations.append(registration)
        elif call.is_registration:
            problems.append(_unknown_marker(call, syntax, rel_path))
        elif call.known:
            problems.append(
                _problem(
                    rel_path,
                    call.call,
                    f"{call.marker}() inside {_describe(call.statement)} is not collected: a "
                    "registration must be a module-level statement of its own",
                    lint=True,
                )
            )
    problems.extend(
        _problem(
            rel_path,
            reference.node,
            f"{reference.marker} is used inside {_describe(reference.statement)} without being "
            "called at module level: wrappers and indirect calls are not collected",
            lint=True,
        )
        for reference in uses.references
        if reference.known
    )
    unique, duplicates = _drop_duplicates(registrations)
    problems.extend(duplicates)
    problems.sort(key=lambda p: (p.line, p.col, p.message))
    return unique, problems


def _problem(rel_path: str, node: ast.AST, message: str, lint: bool = False) -> Problem:
    return Problem(rel_path, node.lineno, node.col_offset + 1, message, lint)  # type: ignore[attr-defined]


def _unknown_marker(call: MarkerCall, syntax: RegistrationSyntax, rel_path: str) -> Problem:
    name = call.marker
    return _problem(
        rel_path,
        call.call,
        f"unknown marker {name}(): the catalog declares no such marker (known: "
        f"{', '.join(sorted(syntax.markers))}); if it registers for a backend of this "
        f"repository, declare it: [tool.ci-runner.extra-markers] {name} = "
        f'"{backend_of_marker_name(name)}"',
        lint=True,
    )


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


def _drop_duplicates(
    registrations: list[Registration],
) -> tuple[list[Registration], list[Problem]]:
    """Keep the first registration per (backend, suite, nightly); report the others (one suite
    may hold both cadences under the catalog's policy; else the suite check reports the second).

    Disabled placeholders with ``suite=""`` belong to no suite, so they are never duplicates.
    """
    first: dict[tuple[str, str, bool], Registration] = {}
    problems: list[Problem] = []
    unique: list[Registration] = []
    for reg in registrations:
        key = (reg.backend, reg.suite, reg.nightly)
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
                    lint=True,
                )
            )
        else:
            first[key] = reg
            unique.append(reg)
    return unique, problems
