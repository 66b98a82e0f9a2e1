"""One file's catalog-independent result: its registrations and problems, from one parse.

:func:`scan_file` is what discovery and ``init`` compute per file and what the parse cache
(:mod:`ci_runner.collect.parse_cache`) stores: the marker calls read under a registration syntax,
plus the ``__main__`` block check. Checks against the catalog's suites and file patterns come
after, so a cached result stays valid while the suites change.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ci_runner.catalog.syntax import RegistrationSyntax
from ci_runner.collect.calls import _statements_mentioning
from ci_runner.collect.entry_point import _is_main_test, check_entry_point
from ci_runner.collect.prefix_parse import parse_for_scan
from ci_runner.collect.scan import scan_tree
from ci_runner.model import Problem, Registration


@dataclass(frozen=True)
class FileScan:
    """Registrations and problems of one file (problems in scan order: line, column); the
    ``__main__`` block's problems apart (``init`` reports registration problems only)."""

    registrations: tuple[Registration, ...]
    problems: tuple[Problem, ...]
    entry_problems: tuple[Problem, ...] = ()


def scan_parsed(
    tree: ast.Module, rel_path: str, source: bytes | None, syntax: RegistrationSyntax
) -> FileScan:
    """:class:`FileScan` of an already parsed module (``source``: None walks every statement)."""
    registrations, problems = scan_tree(tree, rel_path, source, syntax)
    enabled = [r for r in registrations if r.disabled is None]
    entry = check_entry_point(tree, rel_path, (enabled[0].line, enabled[0].col)) if enabled else []
    return FileScan(tuple(registrations), tuple(problems), tuple(entry))


def scan_file(data: bytes, rel_path: str, syntax: RegistrationSyntax) -> FileScan:
    """Parse ``data`` once (the parts a scan reads: :func:`parse_for_scan`) and scan it; a file
    that does not parse is one problem."""
    tree, problem = parse_for_scan(data, rel_path, syntax)
    if tree is None:
        return FileScan((), (problem,) if problem else ())
    return scan_parsed(tree, rel_path, data, syntax)


def reduced_module(tree: ast.Module, source: bytes, syntax: RegistrationSyntax) -> ast.Module:
    """The top-level statements a scan under any catalog reads: those whose lines mention a marker
    (or a name the survey saw bound to one: ``names``) and the ``__main__`` blocks.

    ``init`` keeps this instead of the whole tree between its survey and its scan (a tree of
    SGLang's 1,624 files holds ~0.5 GB), so it parses each file once. Scanning it with
    ``source=None`` gives what scanning the whole tree gives, for any syntax whose extra marker
    names all match ``register_<x>_ci`` (the only ones a survey adds).
    """
    if source.count(b"\r") != source.count(b"\r\n"):
        return tree  # bare carriage returns: line numbers do not match the text; keep it all
    first = _statements_mentioning(tree, source, syntax.markers)
    words = _bound_names(first)
    mentioning = _statements_mentioning(tree, source, syntax.markers, words) if words else first
    keep = {id(stmt) for stmt in mentioning}
    body = [
        stmt
        for stmt in tree.body
        if id(stmt) in keep or (isinstance(stmt, ast.If) and _is_main_test(stmt.test))
    ]
    return ast.Module(body=body, type_ignores=[])


def _bound_names(statements: list[ast.stmt]) -> list[str]:
    """Every name a statement binds (imports, assignment targets): a superset of the names
    bound to markers, so the statements using an alias are kept whatever the binding rules."""
    names: set[str] = set()
    for stmt in statements:
        for node in ast.walk(stmt):
            if isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[0])
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return sorted(names)
