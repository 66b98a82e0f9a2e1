"""``--scoped-validation``: which registration problems concern the suites a job selected.

A problem blocks the job when its file might belong to a selected suite: some marker call in it
(anywhere, as :mod:`ci_runner.collect.calls` reads them) names one of the suites (or an old name
of one, or a name the catalog does not know that is a near-miss spelling of one), or names a
suite that cannot be read statically (``suite=NAME``, a missing suite, a marker used without a
call). A file that cannot be parsed is judged by its text: it blocks when a selected suite's
name, or all the template fields that compose it, appear in it as string literals. Every other
problem is only a warning for this job; the strict default, and the registration lint, still
report it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from ci_runner.catalog import Catalog, Suite
from ci_runner.collect.calls import read_marker_calls
from ci_runner.collect.scan import parse_source
from ci_runner.file_safety import read_regular
from ci_runner.model import Problem


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
        data = read_regular(catalog.root / rel_path, follow_links=False)
    except OSError:  # not a regular file (a FIFO, a link out, a hidden directory): it blocks
        return True
    tree, _ = parse_source(data, rel_path)
    if tree is None:
        return _text_mentions(data.decode("utf-8", errors="replace"), catalog, names)
    uses = read_marker_calls(tree, catalog.syntax)
    if uses.references:
        return True  # a wrapper or an indirect call: its suite cannot be told
    return any(call.suite is None or _matches(call.suite, names, catalog) for call in uses.calls)


def _matches(suite: str, names: set[str], catalog: Catalog) -> bool:
    """The suite is selected, or it is no catalog suite but a typo of a selected one."""
    if suite in names:
        return True
    if catalog.get(suite) is not None or catalog.renamed(suite) is not None:
        return False  # another suite of the catalog, not a misspelling
    if catalog.rules is not None and catalog.rules.knows_anywhere(suite):
        return False  # another suite of the runner's tables (suites-from)
    return bool(difflib.get_close_matches(suite, names, n=1, cutoff=0.8))


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
