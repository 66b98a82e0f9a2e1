"""Keep only the selected files a change can affect, each with one reason, or fail open.

A change the analysis cannot attribute selects the whole suite, with the reason: a deleted or
renamed file, a file outside the repository root, packaging and pytest configuration
(``pyproject.toml``, ``setup.py``, ``setup.cfg``, ``conftest.py``, ``pytest.ini``, ``tox.ini``),
CI configuration (``.github/``), the catalog's ``run-everything`` globs (the runner and the
toolchain themselves), and any file that is neither a Python file nor under a kernel directory,
unless the graph shows a kernel loader building it or a kernel source including it (a test's own
kernel file next to it: ``Path(__file__).parent / "kernels" / "k.cuh"``).

Otherwise a test is kept when the change reaches it in the dependency graph (:mod:`.graph`): a
changed test file selects itself, a changed module or kernel file selects every test whose
closure holds it. A test whose closure holds a site the graph cannot follow is kept for every
change (for a kernel loader given a computed file: for every change to a kernel file).
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections import deque
from dataclasses import dataclass, field
from functools import cache

from ci_runner.catalog import Catalog
from ci_runner.impact.changes import ADDED, MODIFIED, Change, ChangeSet
from ci_runner.impact.config import ImpactConfig, load_impact_config
from ci_runner.impact.fact_cache import FactCache
from ci_runner.impact.graph import INCLUDE, KERNEL_SITE, DependencyGraph, Site
from ci_runner.impact.index import RepoIndex
from ci_runner.select import Selection

CHANGED = "changed"
SITE = "cannot be followed"
BUILTIN_RUN_EVERYTHING: tuple[tuple[str, str], ...] = (
    ("**/pyproject.toml", "packaging or the catalog"),
    ("**/setup.py", "packaging"),
    ("**/setup.cfg", "packaging"),
    ("**/MANIFEST.in", "packaging"),
    ("**/conftest.py", "pytest configuration"),
    ("**/pytest.ini", "pytest configuration"),
    ("**/tox.ini", "pytest configuration"),
    (".github/**", "CI configuration"),
)


@dataclass(frozen=True)
class Link:
    """One file of a reason chain, and how it depends on the file before it."""

    path: str
    how: str  # CHANGED for the changed file itself


@dataclass(frozen=True)
class Reason:
    """Why a file is kept: the chain from a changed file (or a site) to it."""

    chain: tuple[Link, ...]
    note: str = ""  # why a test is kept for any change (a site it reaches)

    def text(self) -> str:
        parts = [self.chain[0].path]
        parts += [f"{link.path} [{link.how}]" for link in self.chain[1:]]
        return " -> ".join(parts) + (f" ({self.note})" if self.note else "")


@dataclass(frozen=True)
class ChangeImpact:
    """What ``--changed-since`` / ``--changed-files`` did to the selection."""

    source: str
    changes: tuple[Change, ...]
    full: Selection  # before
    selection: Selection  # after
    run_everything: tuple[str, ...] = ()  # why the whole suite runs; empty when narrowed
    reasons: dict[str, Reason] = field(default_factory=dict)  # kept file -> one reason
    unreached: tuple[str, ...] = ()  # changed files no selected test depends on
    seconds: float = 0.0  # time the analysis took
    parsed: int = 0  # Python files parsed (the others came from the cache)
    record_lines: tuple[str, ...] = ()  # --deps-from: how the records were used (recorded.py)

    @property
    def saved(self) -> float:
        return self.full.est_total - self.selection.est_total


@cache
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A root-relative glob: ``**`` spans directories, ``*`` and ``?`` stay within one."""
    out = ""
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out += "(?:.*/)?"
            index += 3
        elif pattern.startswith("**", index):
            out += ".*"
            index += 2
        elif pattern[index] == "*":
            out += "[^/]*"
            index += 1
        elif pattern[index] == "?":
            out += "[^/]"
            index += 1
        else:
            out += re.escape(pattern[index])
            index += 1
    return re.compile(out + r"\Z")


def matches_glob(pattern: str, path: str) -> bool:
    return bool(_glob_regex(pattern).match(path))


def _is_under(path: str, directories: tuple[str, ...]) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in directories)


def _not_traced(path: str) -> str:
    return (
        f"{path} changed: neither a Python file nor under a kernel directory, so what reads it "
        "cannot be traced"
    )


def unattributable(change: Change, config: ImpactConfig) -> str | None:
    """Why ``change`` selects the whole suite, or None when the graph can attribute it (a file
    outside the kernel directories that a loader builds: see :func:`select_changed`)."""
    if change.status == MODIFIED or change.status == ADDED:
        for pattern, what in BUILTIN_RUN_EVERYTHING:
            if matches_glob(pattern, change.path):
                return f"{change.path} changed ({what})"
        for pattern in config.run_everything:
            if matches_glob(pattern, change.path):
                return f"{change.path} changed (run-everything {pattern!r} in the catalog)"
        if change.path.endswith(".py") or _is_under(change.path, config.kernel_dirs):
            return None
        return _not_traced(change.path)
    if change.old_path:
        return f"{change.old_path} was {change.status} to {change.path}: what used the old path cannot be traced"
    return f"{change.path} was {change.status}: what used it cannot be traced"


def select_changed(selection: Selection, catalog: Catalog, change_set: ChangeSet) -> ChangeImpact:
    """The part of ``selection`` that ``change_set`` can affect (see the module docstring)."""
    started = time.perf_counter()
    config = load_impact_config(catalog)
    changes = change_set.changes
    why = [(c.path, reason) for c in changes if (reason := unattributable(c, config)) is not None]
    # Other files stay attributable if the graph shows a loader of the suite's tests building
    # them (or a kernel including them); the graph is built only when nothing else fails open.
    others = {path for path, reason in why if reason == _not_traced(path)}
    if any(reason != _not_traced(path) for path, reason in why):
        return _whole_suite(change_set, selection, tuple(reason for _, reason in why), started)
    tests = {f.path for f in selection.files}
    cache_ = FactCache(config)
    graph = DependencyGraph(config, RepoIndex(config.root), cache_, tests)
    cache_.save()
    why_all = tuple(_not_traced(path) for path in sorted(others) if not graph.is_kernel_file(path))
    if why_all:
        return _whole_suite(change_set, selection, why_all, started)
    reasons: dict[str, Reason] = {}
    unreached: list[str] = []
    for change in sorted(changes, key=lambda c: c.path):
        found = _reached(graph, change.path, tests)
        if not found:
            unreached.append(change.path)
        for test, chain in found.items():
            reasons.setdefault(test, Reason(chain))
    if changes:
        kernel_change = any(_is_under(c.path, config.kernel_dirs) for c in changes) or bool(others)
        for site in sorted(graph.sites, key=lambda s: (s.path, s.line)):
            if site.kind == KERNEL_SITE and not kernel_change:
                continue
            note = _site_note(site, kernel_change)
            for test, chain in _reached(graph, site.path, tests).items():
                start = (Link(site.path, SITE),)
                reasons.setdefault(test, Reason(start + chain[1:], note))
    kept = tuple(f for f in selection.files if f.path in reasons)
    narrowed = dataclasses.replace(selection, files=kept)
    return ChangeImpact(
        change_set.source,
        changes,
        selection,
        narrowed,
        reasons={path: reasons[path] for path in sorted(reasons) if path in tests},
        unreached=tuple(unreached),
        seconds=time.perf_counter() - started,
        parsed=cache_.parsed,
    )


def _whole_suite(
    change_set: ChangeSet, selection: Selection, why_all: tuple[str, ...], started: float
) -> ChangeImpact:
    return ChangeImpact(
        change_set.source,
        change_set.changes,
        selection,
        selection,
        run_everything=why_all,
        seconds=time.perf_counter() - started,
    )


def _site_note(site: Site, kernel_change: bool) -> str:
    if site.kind == KERNEL_SITE:
        return f"{site}: may build any kernel source, so every kernel change selects it"
    return f"{site}: its dependencies cannot be bounded, so every change selects it"


def _reached(graph: DependencyGraph, start: str, tests: set[str]) -> dict[str, tuple[Link, ...]]:
    """Every test that depends on ``start``, with the shortest chain ``start -> ... -> test``."""
    if start not in graph.edges and start not in graph.reverse:
        return {start: (Link(start, CHANGED),)} if start in tests else {}
    parent: dict[str, tuple[str, str] | None] = {start: None}
    queue = deque([start])
    found: dict[str, tuple[Link, ...]] = {}
    while queue:
        node = queue.popleft()
        if node in tests:
            found[node] = _chain(graph, parent, node)
        for importer, how in sorted(graph.reverse.get(node, ())):
            if importer not in parent:
                parent[importer] = (node, how)
                queue.append(importer)
    return found


def _chain(
    graph: DependencyGraph, parent: dict[str, tuple[str, str] | None], node: str
) -> tuple[Link, ...]:
    """The chain from the BFS start to ``node``, each ``#include`` step shown header by header."""
    links: list[Link] = []
    current: str | None = node
    while current is not None:
        step = parent[current]
        if step is None:
            links.append(Link(current, CHANGED))
            break
        previous, how = step
        if how == INCLUDE:
            path = graph.include_path(current, previous)  # [source, ..., header]
            links += [Link(p, INCLUDE) for p in path[:-1]] or [Link(current, how)]
        else:
            links.append(Link(current, how))
        current = previous
    return tuple(reversed(links))
