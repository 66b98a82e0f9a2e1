"""Discover registered test files and validate every registration, without importing anything.

:func:`collect` walks the catalog's registered directory for ``test_*.py`` and ``bench_*.py``
(other files are helpers; what is read and what is reported: :mod:`ci_runner.collect.walk`),
parses each once with :mod:`ast`, and returns every registration plus **every** problem in the
tree, so one run reports them all.
"""

from __future__ import annotations

import fnmatch
import functools
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field

from ci_runner.catalog import (
    CATALOG_FILE,
    DEFAULT_FILE_PATTERNS,
    NEVER_COLLECTED,
    Catalog,
    CatalogError,
)
from ci_runner.collect.entry_point import check_entry_point
from ci_runner.collect.scan import parse_source, scan_markers, scan_tree
from ci_runner.collect.suite_checks import check_registration
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

_MARKER_TEXT = b"register_"
MAX_WORKERS = 8
FILES_PER_WORKER = 250  # below this many files per worker, one process is faster


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
    if workers is None:
        workers = min(_available_cpus(), MAX_WORKERS, len(paths) // FILES_PER_WORKER)
    if workers > 1 and "fork" in multiprocessing.get_all_start_methods():
        chunk = -(-len(paths) // (workers * 4))
        chunks = [paths[i : i + chunk] for i in range(0, len(paths), chunk)]
        try:
            with ProcessPoolExecutor(workers, multiprocessing.get_context("fork")) as pool:
                results = pool.map(functools.partial(_collect_chunk, catalog), chunks)
                return [item for chunk_result in results for item in chunk_result]
        except (OSError, BrokenProcessPool):  # no processes here: fall back to one
            pass
    return _collect_chunk(catalog, paths)


def _collect_chunk(
    catalog: Catalog, paths: list[str]
) -> list[tuple[list[Registration], list[Problem]]]:
    return [_collect_file(catalog, path) for path in paths]


def _collect_file(catalog: Catalog, rel_path: str) -> tuple[list[Registration], list[Problem]]:
    try:
        data = read_regular(catalog.root / rel_path, follow_links=False)
    except OSError as exc:
        return [], [Problem(rel_path, 1, 1, f"cannot read: {why(exc)}")]
    if not _mentions_a_marker(data, catalog):
        return [], [_no_registration(rel_path, catalog)]
    tree, problem = parse_source(data, rel_path)
    if tree is None:
        return [], [problem] if problem else []
    registrations, problems = scan_tree(tree, rel_path, data, catalog.syntax)
    if not registrations and all(p.lint for p in problems):
        problems.append(_no_registration(rel_path, catalog))
    for reg in registrations:
        catalog_problem = check_registration(reg, catalog)
        if catalog_problem:
            problems.append(catalog_problem)
    enabled = [r for r in registrations if r.disabled is None]
    if enabled:
        problems.extend(check_entry_point(tree, rel_path, (enabled[0].line, enabled[0].col)))
    return registrations, problems


def _mentions_a_marker(data: bytes, catalog: Catalog) -> bool:
    """Cheap text prefilter: can this file contain a marker call at all?"""
    if _MARKER_TEXT in data:
        return True
    return any(name.encode() in data for name in catalog.syntax.markers)


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
