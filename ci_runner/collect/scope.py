"""``--scoped-validation``: which registration problems concern the suites a job selected.

A problem blocks the job when its file might belong to a selected suite: some marker call in it
names one of the suites (or an old name of one, or a name the catalog does not know that is a
near-miss spelling of one), or names a suite that cannot be read statically (``suite=NAME``, a missing suite, a marker used without a call). A file
that cannot be parsed is judged by its text: it blocks when a selected suite's name, or all the
template fields that compose it, appear in it as string literals. Every other problem is only a
warning for this job; the strict default, and the registration lint, still report it.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from ci_runner.catalog import Catalog, Suite
from ci_runner.collect.scan import iter_nodes, parse_source, unknown_marker_name
from ci_runner.model import Problem

_UNKNOWN = object()  # a marker whose suite cannot be read without running the file


@dataclass(frozen=True)
class ScopedProblems:
    """Problems split by the selected suites: ``blocking`` fail the job, ``warnings`` do not."""

    blocking: list[Problem]
    warnings: list[Problem]


def split_by_scope(
    problems: list[Problem], catalog: Catalog, suites: Iterable[Suite]
) -> ScopedProblems:
    """Keep the problems of files that may belong to ``suites`` as blocking; warn about the rest."""
    names = {name for suite in suites for name in (suite.name, *suite.renamed_from)}
    verdict: dict[str, bool] = {}
    blocking: list[Problem] = []
    warnings: list[Problem] = []
    for problem in problems:
        if problem.path not in verdict:
            verdict[problem.path] = file_may_belong(catalog, problem.path, names)
        (blocking if verdict[problem.path] else warnings).append(problem)
    return ScopedProblems(blocking, warnings)


def file_may_belong(catalog: Catalog, rel_path: str, names: set[str]) -> bool:
    """True unless the file provably registers for none of the suites ``names``."""
    try:
        data = (catalog.root / rel_path).read_bytes()
    except OSError:
        return True
    tree, _ = parse_source(data, rel_path)
    if tree is None:
        return _text_mentions(data.decode("utf-8", errors="replace"), catalog, names)
    for suite in _named_suites(tree, catalog):
        if suite is _UNKNOWN or _matches(str(suite), names, catalog):
            return True
    return False


def _matches(suite: str, names: set[str], catalog: Catalog) -> bool:
    """The suite is selected, or it is no catalog suite but a typo of a selected one."""
    if suite in names:
        return True
    if catalog.get(suite) is not None or catalog.renamed(suite) is not None:
        return False  # another suite of the catalog, not a misspelling
    return bool(difflib.get_close_matches(suite, names, n=1, cutoff=0.8))


def _named_suites(tree: ast.Module, catalog: Catalog) -> list[object]:
    """The suite named by every marker call or reference anywhere in the file."""
    nodes = iter_nodes(tree)
    markers = set(catalog.syntax.markers)
    markers.update(
        alias.asname
        for node in nodes
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.asname and (alias.name in markers or unknown_marker_name(ast.Name(alias.name)))
    )
    found: list[object] = []
    calls: set[int] = set()
    for node in nodes:
        if isinstance(node, ast.Call) and _is_marker(node.func, markers):
            calls.add(id(node.func))
            found.append(_suite_of(node, catalog))
    for node in nodes:
        if id(node) not in calls and _is_marker(node, markers) and _is_load(node):
            found.append(_UNKNOWN)  # a wrapper or indirect call: cannot tell its suite
    return found


def _is_marker(node: ast.AST, markers: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in markers or unknown_marker_name(node) is not None
    if isinstance(node, ast.Attribute):
        return node.attr in markers or unknown_marker_name(node) is not None
    return False


def _is_load(node: ast.AST) -> bool:
    return isinstance(getattr(node, "ctx", None), ast.Load)


def _suite_of(call: ast.Call, catalog: Catalog) -> object:
    """The suite name a marker call gives (plain or composed), or ``_UNKNOWN``."""
    given = {kw.arg: kw.value for kw in call.keywords if kw.arg is not None}
    if len(call.args) > 1 and not isinstance(call.args[1], ast.Starred):
        given.setdefault("suite", call.args[1])
    if any(isinstance(a, ast.Starred) for a in call.args[:2]) or any(
        kw.arg is None for kw in call.keywords
    ):
        return _UNKNOWN
    suite = given.get("suite")
    if isinstance(suite, ast.Constant) and isinstance(suite.value, str):
        return suite.value
    template = catalog.syntax.suite_template
    if suite is None and template is not None:
        parts = {name: given.get(name) for name in template.fields}
        if all(isinstance(p, ast.Constant) and isinstance(p.value, str) for p in parts.values()):
            return template.compose({k: v.value for k, v in parts.items()})  # type: ignore[union-attr]
    return _UNKNOWN


def _text_mentions(text: str, catalog: Catalog, names: set[str]) -> bool:
    """For an unparsable file: does a selected suite (or all its template fields) appear?"""

    def quoted(value: str) -> bool:
        return f'"{value}"' in text or f"'{value}'" in text

    template = catalog.syntax.suite_template
    for name in names:
        if quoted(name):
            return True
        parts = template.decompose(name) if template else None
        if parts and all(quoted(value) for value in parts.values()):
            return True
    return False
