"""Keep only the selected files a change can affect, each with one reason, or fail open.

In order:

1. **Ignore rules.** A changed path the catalog's ``ignore`` patterns match affects no test and
   leaves the change set, unless a test is known to read it: a recorded test opened, ran or
   built it (:meth:`RecordedDependencies.read_paths`) or the dependency graph reaches it (a test
   imports, builds or names it). Such a path is kept, and the output says why.
2. **The whole suite (fail open)** for a change the analysis cannot attribute, with the reason:
   a deleted or renamed file (with records: every test without a valid record, the others as
   their record says, since it names what they ran, opened, listed and imported), a file
   outside the repository root, a submodule bump, a changed
   symbolic link, packaging and pytest configuration (``pyproject.toml``, ``setup.py``,
   ``setup.cfg``, ``conftest.py``, ``pytest.ini``, ``tox.ini``), CI configuration
   (``.github/``), the catalog's ``run-everything`` patterns. A ``pyproject.toml`` or
   ``ci-runner.toml`` changed only in tables no test run reads (:mod:`.toml_tables`: the
   catalog, linters' tables) is instead an untraced file, as in step 3.
3. **Each test.** A test with a valid record (:class:`RecordedDependencies`, when a recorded
   layer is given) is decided by its record alone, and the static dependency graph
   (:mod:`.graph`) is built from the other tests only. Each of those is kept when a change reaches it (a changed test file selects itself), or when
   its closure holds a site the graph cannot follow (for a kernel loader given a computed file,
   only for a change to a kernel file; for a module that is not in the tree, only for a change
   outside the kernel directories), or when a change is a file that is neither Python nor a
   kernel file any loader builds, so what reads it cannot be traced. Without any recorded test,
   such an untraced file runs the whole suite, as in step 2.
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ci_runner.catalog import Catalog
from ci_runner.impact.changes import (
    ADDED,
    DELETED,
    MODIFIED,
    RENAMED,
    SUBMODULE,
    SYMLINK,
    Change,
    ChangeSet,
    file_at,
)
from ci_runner.impact.config import ImpactConfig, load_impact_config
from ci_runner.impact.fact_cache import FactCache
from ci_runner.impact.graph import BUILT_SITE, INCLUDE, KERNEL_SITE, DependencyGraph, Site
from ci_runner.impact.include_scans import IncludeScans
from ci_runner.impact.index import RepoIndex
from ci_runner.impact.path_rules import matching_pattern
from ci_runner.impact.toml_tables import OWN_FILE, changed_tables, describe
from ci_runner.select import Selection

CHANGED = "changed"
SITE = "cannot be followed"
UNTRACED = "cannot be traced"
BUILTIN_RUN_EVERYTHING: tuple[tuple[str, str], ...] = (
    ("**/pyproject.toml", "packaging or the catalog"),
    ("**/ci-runner.toml", "the catalog"),
    ("**/setup.py", "packaging"),
    ("**/setup.cfg", "packaging"),
    ("**/MANIFEST.in", "packaging"),
    ("**/conftest.py", "pytest configuration"),
    ("**/pytest.ini", "pytest configuration"),
    ("**/.pytest.ini", "pytest configuration"),
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
class KeptCases:
    """The cases of a kept file that run, from its per-case record (``--deps-from``)."""

    cases: dict[str, str]  # case id -> why; empty: every case runs, for ``whole``
    total: int  # cases in the record
    whole: str = ""


class RecordedDependencies(Protocol):
    """What recording runs learnt about the tests (``--deps-from``), as the selection asks it.
    A test it :meth:`decides` is kept or dropped by :meth:`reason` alone; every other test is
    decided by the static graph."""

    def read_paths(self) -> Collection[str]:
        """Repository paths some recorded test opened, ran or built a kernel from: such a path
        is never ignored, nor called unused by the suite."""
        ...

    def decides(self, test: str) -> bool:
        """Whether ``test`` has a valid record."""
        ...

    def reason(self, test: str, changes: tuple[Change, ...]) -> Reason | None:
        """Why the record keeps ``test`` for ``changes``, or None when nothing it ran changed."""
        ...


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
    ignored: tuple[tuple[str, str], ...] = ()  # (changed path, the ignore pattern matching it)
    not_ignored: tuple[str, ...] = ()  # why a path an ignore pattern matches still counts
    seconds: float = 0.0  # time the analysis took
    parsed: int = 0  # Python files parsed (the others came from the cache)
    record_lines: tuple[str, ...] = ()  # --deps-from: how the records were used (recorded.py)
    cases: dict[str, KeptCases] = field(default_factory=dict)  # kept file -> its cases that run

    @property
    def saved(self) -> float:
        return self.full.est_total - self.selection.est_total

    @property
    def unbounded(self) -> int:
        """Kept files whose reason is a site or an untraced file (kept because the analysis
        cannot bound them), not a chain from a change."""
        return sum(1 for reason in self.reasons.values() if reason.note)


def _is_under(path: str, directories: tuple[str, ...]) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in directories)


def _not_traced(path: str, confined: dict[str, str]) -> str:
    if path in confined:
        return (
            f"{path} changed only in {confined[path]}, which no test run reads through the test "
            "tooling; without a record nothing proves that no test reads the file itself"
        )
    return (
        f"{path} changed: neither a Python file nor under a kernel directory, so what reads it "
        "cannot be traced"
    )


TOML_RULES = ("**/pyproject.toml", "**/ci-runner.toml")


def toml_tables_reason(
    change: Change, what: str, root: Path, base: str | None
) -> tuple[str | None, str]:
    """Why a changed ``pyproject.toml`` / ``ci-runner.toml`` runs everything (first), or None
    with the changed tables when every one is a table no test run reads (:mod:`.toml_tables`)."""
    head = f"{change.path} changed"
    if change.status != MODIFIED:
        return f"{head} ({what})", ""
    if base is None:
        return f"{head} ({what}; no base commit to compare its tables with)", ""
    old = file_at(root, base, change.path)
    try:
        new = (root / change.path).read_bytes()
    except OSError as exc:
        return f"{head} ({what}; cannot read it: {exc.strerror})", ""
    if old is None:
        return f"{head} ({what}; not readable at the base commit {base[:12]})", ""
    diff = changed_tables(old, new, change.path)
    if diff.unreadable:
        return f"{head} ({what}; {diff.unreadable})", ""
    own_file = change.path.rsplit("/", 1)[-1] == OWN_FILE
    if read := diff.run_everything():
        return f"{head} ({describe(diff, read, own_file)}): {what}", ""
    return None, describe(diff, diff.tables, own_file) or "comments or formatting"


def whole_suite_reason(
    change: Change,
    config: ImpactConfig,
    base: str | None = None,
    confined: dict[str, str] | None = None,
) -> str | None:
    """Why ``change`` selects the whole suite whatever the tests depend on, or None.
    ``base``: the commit a changed TOML file's tables are compared with; ``confined`` gets each
    TOML file whose change is confined to tables no test run reads, with those tables."""
    if change.status == SUBMODULE:
        return (
            f"{change.path} is a git submodule whose commit changed: the files it changes are "
            "not listed"
        )
    if change.status == SYMLINK:
        return (
            f"{change.path} is a symbolic link that changed: what reads through it cannot be traced"
        )
    if change.status in (MODIFIED, ADDED):
        for pattern, what in BUILTIN_RUN_EVERYTHING:
            if matching_pattern((pattern,), change.path):
                if pattern not in TOML_RULES:
                    return f"{change.path} changed ({what})"
                reason, tables = toml_tables_reason(change, what, config.root, base)
                if reason is not None or confined is None:
                    return reason or f"{change.path} changed ({what})"
                confined[change.path] = tables
                break
        if pattern := matching_pattern(config.run_everything, change.path):
            return f"{change.path} changed (run-everything {pattern!r} in the catalog)"
        return None
    if change.old_path:
        return f"{change.old_path} was {change.status} to {change.path}: what used the old path cannot be traced"
    return f"{change.path} was {change.status}: what used it cannot be traced"


def _may_be_untraced(change: Change, config: ImpactConfig) -> bool:
    """A file that is neither Python nor under a kernel directory (the graph may still show a
    loader building it, a kernel file next to its test)."""
    return not change.path.endswith(".py") and not _is_under(change.path, config.kernel_dirs)


def select_changed(
    selection: Selection,
    catalog: Catalog,
    change_set: ChangeSet,
    recorded: RecordedDependencies | None = None,
    facts: FactCache | None = None,
) -> ChangeImpact:
    """The part of ``selection`` that ``change_set`` can affect (see the module docstring);
    ``facts``: the import-facts cache, when the caller has already read from it."""
    started = time.perf_counter()
    config = load_impact_config(catalog)
    read = set(recorded.read_paths()) if recorded is not None else set()
    candidates: dict[str, str] = {}  # ignored path -> its pattern
    not_ignored: list[str] = []
    changes: list[Change] = []
    for change in change_set.changes:
        pattern = _ignore_pattern(change, config)
        if pattern is not None and not read & {change.path, change.old_path}:
            candidates[change.path] = pattern
        else:
            if pattern is not None:
                not_ignored.append(
                    f"{change.path} matches ignore {pattern!r}, but a recorded test read it: "
                    "not ignored"
                )
            changes.append(change)
    result = _Result(change_set, selection, started, not_ignored)
    # A deleted or renamed file: a record says whether its test used the old path; the
    # whole suite runs only when no test has a record, else every test without one.
    deferred = _used_paths_gone(changes, config) if recorded is not None else {}
    confined: dict[str, str] = {}  # a TOML file changed only in tables no test run reads
    whole = [
        reason
        for c in changes
        if c.path not in deferred
        and (reason := whole_suite_reason(c, config, change_set.base, confined)) is not None
    ]
    if confined and recorded is None:  # no record can say who reads it: no graph needed
        whole = [_not_traced(path, confined) for path in sorted(confined)]
    if whole:
        return result.whole_suite(tuple(whole), tuple(candidates.items()))
    tests = {f.path for f in selection.files}
    index = RepoIndex(config.root)
    if index.unlisted:  # an unseen file may be what a test imports
        unseen = tuple(f"directory {where}" for where in index.unlisted)
        return result.whole_suite(unseen, tuple(candidates.items()))
    # A test its record decides needs no graph: the record alone keeps or drops it.
    decided = {t for t in tests if recorded is not None and recorded.decides(t)}
    cache = facts if facts is not None else FactCache(config)
    scans = IncludeScans(config.root)
    scans.load()
    try:
        graph = DependencyGraph(config, index, cache, tests - decided, suite=tests)
    finally:
        cache.save()
        scans.save()
    result.parsed = cache.parsed
    for path, pattern in list(candidates.items()):  # a test is known to read it: not ignored
        found = _reached(graph, [path], tests - decided)
        if found:
            test, chain = min(found.items())
            not_ignored.append(
                f"{path} matches ignore {pattern!r}, but {test} reaches it "
                f"({Reason(chain).text()}): not ignored"
            )
            del candidates[path]
            changes.append(next(c for c in change_set.changes if c.path == path))
    result.ignored = tuple(sorted(candidates.items()))
    untraced = [
        c.path
        for c in changes
        if _may_be_untraced(c, config)
        and not graph.is_kernel_file(c.path)
        and c.path not in deferred
    ]
    if (untraced or deferred) and not decided:
        why = [*(_not_traced(p, confined) for p in sorted(untraced)), *deferred.values()]
        return result.whole_suite(tuple(why), result.ignored)
    static_changes = tuple(c for c in changes if c.path not in deferred)
    reasons, unreached = _static_reasons(
        graph, config, static_changes, untraced, tests - decided, confined
    )
    unreached = tuple(p for p in unreached if p not in read)
    for path, why in sorted(deferred.items()):
        for test in tests:
            reasons.setdefault(test, Reason((Link(path, UNTRACED), Link(test, UNTRACED)), why))
    for test in decided:
        reason = recorded.reason(test, tuple(changes)) if recorded is not None else None
        if reason is None:
            reasons.pop(test, None)
        else:
            reasons[test] = reason
    return result.narrowed(
        {path: reasons[path] for path in sorted(reasons) if path in tests}, unreached
    )


def _used_paths_gone(changes: list[Change], config: ImpactConfig) -> dict[str, str]:
    """Deleted and renamed files that no rule runs everything for, each with why a test without
    a record must run (``whole_suite_reason``)."""
    gone = {}
    for change in changes:
        if change.status not in (DELETED, RENAMED):
            continue
        paths = [p for p in (change.path, change.old_path) if p]
        rules = [pattern for pattern, _ in BUILTIN_RUN_EVERYTHING] + list(config.run_everything)
        if not any(matching_pattern(tuple(rules), path) for path in paths):
            gone[change.path] = whole_suite_reason(change, config) or change.path
    return gone


def _ignore_pattern(change: Change, config: ImpactConfig) -> str | None:
    """The ignore pattern matching a change (a rename: both its paths), or None."""
    pattern = matching_pattern(config.ignore, change.path)
    if pattern is not None and change.old_path is not None:
        return pattern if matching_pattern(config.ignore, change.old_path) else None
    return pattern


def _static_reasons(
    graph: DependencyGraph,
    config: ImpactConfig,
    changes: tuple[Change, ...],
    untraced: list[str],
    tests: set[str],
    confined: dict[str, str],
) -> tuple[dict[str, Reason], tuple[str, ...]]:
    """What the static graph keeps, each test with one reason, and the changes no test reaches."""
    traced = sorted(c.path for c in changes if c.path not in untraced)
    reasons = {test: Reason(chain) for test, chain in _reached(graph, traced, tests).items()}
    unreached = tuple(p for p in traced if p not in graph.edges and p not in tests)
    if not changes:
        return reasons, unreached
    kernel_change = any(
        _is_under(c.path, config.kernel_dirs) or graph.is_kernel_file(c.path) for c in changes
    )
    other_change = any(not _is_under(c.path, config.kernel_dirs) for c in changes)
    notes: dict[str, str] = {}  # site path -> the note of its first applicable site
    for site in sorted(graph.sites, key=lambda s: (s.path, s.line)):
        if (site.kind == KERNEL_SITE and not kernel_change) or (
            site.kind == BUILT_SITE and not other_change
        ):
            continue
        notes.setdefault(site.path, _site_note(site))
    for test, chain in _reached(graph, sorted(notes), tests).items():
        start = chain[0].path
        reasons.setdefault(test, Reason((Link(start, SITE), *chain[1:]), notes[start]))
    for path in untraced:
        note = (
            f"{path} changed only in {confined[path]}; what reads the file cannot be traced"
            if path in confined
            else f"{path} changed and is neither Python nor a kernel file: what reads it cannot be traced"
        )
        for test in tests:
            reasons.setdefault(test, Reason((Link(path, UNTRACED), Link(test, UNTRACED)), note))
    return reasons, unreached


@dataclass
class _Result:
    """Builds the :class:`ChangeImpact` of one analysis."""

    change_set: ChangeSet
    selection: Selection
    started: float
    not_ignored: list[str]
    ignored: tuple[tuple[str, str], ...] = ()
    parsed: int = 0

    def whole_suite(
        self, why: tuple[str, ...], ignored: tuple[tuple[str, str], ...]
    ) -> ChangeImpact:
        return ChangeImpact(
            self.change_set.source,
            self.change_set.changes,
            self.selection,
            self.selection,
            run_everything=why,
            ignored=tuple(sorted(ignored)),
            not_ignored=tuple(self.not_ignored),
            seconds=time.perf_counter() - self.started,
            parsed=self.parsed,
        )

    def narrowed(self, reasons: dict[str, Reason], unreached: tuple[str, ...]) -> ChangeImpact:
        kept = tuple(f for f in self.selection.files if f.path in reasons)
        return ChangeImpact(
            self.change_set.source,
            self.change_set.changes,
            self.selection,
            dataclasses.replace(self.selection, files=kept),
            reasons=reasons,
            unreached=unreached,
            ignored=self.ignored,
            not_ignored=tuple(self.not_ignored),
            seconds=time.perf_counter() - self.started,
            parsed=self.parsed,
        )


def _site_note(site: Site) -> str:
    if site.kind == KERNEL_SITE:
        return f"{site}: may build any kernel source, so every kernel change selects it"
    if site.kind == BUILT_SITE:
        return f"{site}: what builds it is not known, so every change outside the kernel directories selects it"
    return f"{site}: its dependencies cannot be bounded, so every change selects it"


def _reached(
    graph: DependencyGraph, starts: list[str], tests: set[str]
) -> dict[str, tuple[Link, ...]]:
    """Every test that depends on one of ``starts``, with the shortest chain ``start -> ... ->
    test`` (breadth first from all starts at once, in their order)."""
    parent: dict[str, tuple[str, str] | None] = {}
    queue: deque[str] = deque()
    for start in starts:
        if start not in parent and (
            start in graph.edges or start in graph.reverse or start in tests
        ):
            parent[start] = None
            queue.append(start)
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
