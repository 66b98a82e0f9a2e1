"""Discover registered test files and validate every registration, without importing anything.

:func:`collect` walks the catalog's registered directory for ``test_*.py`` and ``bench_*.py``
(other files are helpers; what is read and what is reported: :mod:`ci_runner.collect.walk`),
parses each once with :mod:`ast`, and returns every registration plus **every** problem in the
tree, so one run reports them all.
"""

from __future__ import annotations

import fnmatch
import functools
import gc
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from ci_runner.catalog import (
    CATALOG_FILE,
    DEFAULT_FILE_PATTERNS,
    NEVER_COLLECTED,
    Catalog,
    CatalogError,
)
from ci_runner.catalog.execution_settings import LAUNCHER_PYTEST
from ci_runner.collect.file_scan import FileScan, scan_file
from ci_runner.collect.parse_cache import ParseCache, cache_directory, digest
from ci_runner.collect.scan import scan_markers
from ci_runner.collect.source_text import may_mention
from ci_runner.collect.suite_checks import check_registration, quarantine_problems
from ci_runner.collect.walk import Walk, walk_files
from ci_runner.file_safety import read_regular, why
from ci_runner.model import Problem, Registration

__all__ = [
    "Collection",
    "collect",
    "discover_files",
    "is_registered_file",
    "scan_markers",
    "walk_registered",
]

_MARKER_TEXT = "register_"
MAX_WORKERS = 8
FILES_PER_WORKER = 250  # below this many files per worker, one process is faster
Result = TypeVar("Result")


@dataclass
class Collection:
    """Everything discovery found: files, valid registrations, and all problems."""

    files: list[str] = field(default_factory=list)  # POSIX paths relative to the root, sorted
    registrations: list[Registration] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # sorted by (path, line, col)

    @property
    def ok(self) -> bool:
        return not self.problems


def is_registered_file(name: str, patterns: tuple[str, ...] = DEFAULT_FILE_PATTERNS) -> bool:
    """True for the file names the runner collects (``patterns``: the catalog's file-patterns)."""
    return name not in NEVER_COLLECTED and any(fnmatch.fnmatchcase(name, p) for p in patterns)


def walk_registered(catalog: Catalog) -> Walk:
    """The registered files to read (under registered-dir and each ``extra-dirs`` entry), and
    every path there that is not read but might hold one (rules: :mod:`ci_runner.collect.walk`)."""
    _check_inside(catalog, catalog.registered_dir, f"registered-dir {catalog.registered_dir!r}")
    walk = _walk(catalog, catalog.registered_dir, catalog.file_patterns)
    if catalog.exclude_files:  # the catalog's exclude-files, relative to registered-dir
        prefix = f"{catalog.registered_dir}/" if catalog.registered_dir != "." else ""
        walk.files = [
            f
            for f in walk.files
            if not any(
                fnmatch.fnmatchcase(f.removeprefix(prefix), g) for g in catalog.exclude_files
            )
        ]
    for i, extra in enumerate(catalog.extra_dirs):
        _check_inside(catalog, extra.path, f"{CATALOG_FILE} extra-dirs[{i}] path {extra.path!r}")
        more = _walk(catalog, extra.path, extra.files)
        walk.files += more.files
        walk.problems += more.problems
    walk.files.sort()
    walk.problems.sort(key=lambda p: (p.path, p.message))
    return walk


def _walk(catalog: Catalog, rel_dir: str, patterns: tuple[str, ...]) -> Walk:
    return walk_files(
        catalog.root,
        catalog.root / rel_dir,
        lambda name: is_registered_file(name, patterns),
        "/".join(patterns),
    )


def _check_inside(catalog: Catalog, rel_dir: str, what: str) -> None:
    """``rel_dir`` must be a directory that really lies inside the repository."""
    base = catalog.root / rel_dir
    if not base.is_dir():
        raise CatalogError(f"{what} from [tool.ci-runner] is not a directory under {catalog.root}")
    real_root, real_base = os.path.realpath(catalog.root), os.path.realpath(base)
    if real_base != real_root and not real_base.startswith(real_root + os.sep):
        raise CatalogError(
            f"{what} from [tool.ci-runner] leads to {real_base}, outside the repository "
            f"{real_root}; name a directory inside it"
        )


def discover_files(catalog: Catalog) -> list[str]:
    """All test/bench files under the registered directory, as sorted POSIX root-relative paths
    (the paths that are not read are in :func:`walk_registered`'s problems)."""
    return walk_registered(catalog).files


def collect(catalog: Catalog, workers: int | None = None) -> Collection:
    """Discover, parse and validate every registered file of the repository.

    Large trees are parsed by a pool of forked worker processes (``workers``: default one per
    available CPU, at most ``MAX_WORKERS``; 1 = in this process). The result does not depend on
    the worker count.
    """
    walk = walk_registered(catalog)
    collection = Collection(files=walk.files, problems=list(walk.problems))
    for registrations, problems in _collect_files(catalog, collection.files, workers):
        collection.registrations.extend(registrations)
        collection.problems.extend(problems)
    collection.problems.extend(quarantine_problems(catalog, collection.files))
    collection.problems.sort(key=lambda p: (p.path, p.line, p.col, p.message))
    return collection


def _available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _collect_files(
    catalog: Catalog, paths: list[str], workers: int | None
) -> list[tuple[list[Registration], list[Problem]]]:
    """Each file's registrations and problems, in ``paths`` order; cached scans are reused."""
    cache = ParseCache(cache_directory(), catalog.root, catalog.syntax)
    scans: dict[str, FileScan] = {}
    stats: dict[str, os.stat_result] = {}
    if cache.enabled:
        for rel_path in paths:
            try:
                st = os.lstat(catalog.root / rel_path)
            except OSError:
                continue  # scanned below, which reports it
            if not stat.S_ISREG(st.st_mode):
                continue
            stats[rel_path] = st
            content_digest = cache.digest_by_stat(rel_path, st)
            if content_digest is None:
                try:
                    content_digest = digest(
                        read_regular(catalog.root / rel_path, follow_links=False)
                    )
                except OSError:
                    continue
            cached = cache.get(rel_path, content_digest, st)
            if cached is not None:
                scans[rel_path] = cached
    missing = [path for path in paths if path not in scans]
    for rel_path, content_digest, scan in _scan_files(catalog, missing, workers, cache.enabled):
        scans[rel_path] = scan
        if content_digest is not None:
            cache.put(rel_path, content_digest, scan, stats.get(rel_path))
    cache.save()
    return [_with_catalog_checks(catalog, path, scans[path]) for path in paths]


ScanResult = tuple[str, str | None, FileScan]  # (path, content digest to cache under, scan)


def _scan_files(
    catalog: Catalog, paths: list[str], workers: int | None, hashed: bool
) -> list[ScanResult]:
    return map_files(functools.partial(_scan_path, catalog, hashed=hashed), paths, workers)


def map_files(
    function: Callable[[str], Result], paths: list[str], workers: int | None = None
) -> list[Result]:
    """``[function(path) for path in paths]``, by a pool of forked workers on large trees
    (``workers``: default one per available CPU, at most ``MAX_WORKERS``; 1 = in this process)."""
    if workers is None:
        workers = min(_available_cpus(), MAX_WORKERS, len(paths) // FILES_PER_WORKER)
    if workers > 1 and len(paths) > 1:
        return _map_forked(function, paths, workers)
    return _map_chunk(function, paths)


def _map_forked(function: Callable[[str], Result], paths: list[str], workers: int) -> list[Result]:
    """:func:`map_files` over forked workers (imported here: a warm run parses nothing, so it
    never pays for loading the process pool)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    if "fork" in multiprocessing.get_all_start_methods():
        chunk = -(-len(paths) // (workers * 4))
        chunks = [paths[i : i + chunk] for i in range(0, len(paths), chunk)]
        try:
            with ProcessPoolExecutor(workers, multiprocessing.get_context("fork")) as pool:
                results = pool.map(functools.partial(_map_chunk, function), chunks)
                return [item for chunk_result in results for item in chunk_result]
        except (OSError, BrokenProcessPool):  # no processes here: fall back to one
            pass
    return _map_chunk(function, paths)


def _map_chunk(function: Callable[[str], Result], paths: list[str]) -> list[Result]:
    """Each path in turn, with the cyclic garbage collector paused: a syntax tree holds no
    cycles (reference counting frees it), and the collector, triggered by the millions of
    nodes ``ast.parse`` allocates, would otherwise take about half of the parse time."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return [function(path) for path in paths]
    finally:
        if paused:
            gc.enable()


def _scan_path(catalog: Catalog, rel_path: str, *, hashed: bool) -> ScanResult:
    """One file's catalog-independent scan (read errors are not cached: digest None)."""
    try:
        data = read_regular(catalog.root / rel_path, follow_links=False)
    except OSError as exc:
        return rel_path, None, FileScan((), (Problem(rel_path, 1, 1, f"cannot read: {why(exc)}"),))
    content_digest = digest(data) if hashed else None
    if not _mentions_a_marker(data, catalog):
        return rel_path, content_digest, FileScan((), ())
    return rel_path, content_digest, scan_file(data, rel_path, catalog.syntax)


def _with_catalog_checks(
    catalog: Catalog, rel_path: str, scan: FileScan
) -> tuple[list[Registration], list[Problem]]:
    """The scan plus what depends on the catalog: suite checks, a file registering nothing, and
    the ``__main__`` block, which a file needs unless every suite it runs in (each enabled
    registration's) starts its files with ``python -m pytest`` (``launcher = "pytest"``)."""
    entry = [] if _pytest_launched(catalog, scan.registrations) else list(scan.entry_problems)
    problems = [*scan.problems, *entry]
    if not scan.registrations and all(p.lint for p in problems):
        problems.append(_no_registration(rel_path, catalog))
    for reg in scan.registrations:
        catalog_problem = check_registration(reg, catalog)
        if catalog_problem:
            problems.append(catalog_problem)
    return list(scan.registrations), problems


def _pytest_launched(catalog: Catalog, registrations: tuple[Registration, ...]) -> bool:
    enabled = [reg for reg in registrations if reg.disabled is None]
    suites = [catalog.get(reg.suite, reg.backend) for reg in enabled]
    return bool(suites) and all(
        suite is not None and catalog.launcher_of(suite) == LAUNCHER_PYTEST for suite in suites
    )


def _mentions_a_marker(data: bytes, catalog: Catalog) -> bool:
    """Cheap text prefilter: can this file contain a marker call at all (as Python reads its
    identifiers: ``ｒegister_cuda_ci`` is ``register_cuda_ci``)?"""
    return may_mention(data, (_MARKER_TEXT, *catalog.syntax.markers))


def _no_registration(rel_path: str, catalog: Catalog) -> Problem:
    extra = catalog.extra_dir_of(rel_path)
    own = extra.files if extra else catalog.file_patterns
    patterns = "/".join(own)
    if own == DEFAULT_FILE_PATTERNS:
        fix = "rename helper modules so they do not start with test_ or bench_"
    else:
        key = f"extra-dirs files of {extra.path}" if extra else "file-patterns"
        fix = f"rename helper modules so they do not match the catalog's {key} {patterns}"
    where = f"{extra.path}/ (extra-dirs)" if extra else "the registered directory"
    return Problem(
        rel_path,
        1,
        1,
        f"no register_<backend>_ci(...) call: every {patterns} file under {where} must "
        f"register ({fix})",
    )
