"""First pass of ``init``: which marker names and keyword arguments an existing tree uses.

Nothing here knows a catalog yet. Every ``*.py`` under the registered directory (but
``__init__.py`` and ``conftest.py``; regular files only, by discovery's rules) that mentions
``register_`` is parsed, once: each module-level call of a ``register_<x>_ci`` marker counts,
however it is bound (read by :mod:`ci_runner.collect.calls`, as the collector reads it), and the
file's reduced module is kept for the draft, which scans it instead of parsing again. The result
says which syntax the catalog must declare so that the strict collector accepts the tree.
"""

from __future__ import annotations

import ast
import functools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ci_runner.catalog import DEFAULT_FILE_PATTERNS, NEVER_COLLECTED
from ci_runner.catalog.extra_dirs import ExtraDir
from ci_runner.catalog.syntax import BUILTIN_KEYWORDS, DEFAULT_SYNTAX
from ci_runner.collect import Walk, is_registered_file, walk_files
from ci_runner.collect.calls import read_marker_calls
from ci_runner.collect.discovery import map_files
from ci_runner.collect.file_scan import reduced_module
from ci_runner.collect.parse_cache import digest
from ci_runner.collect.prefix_parse import parse_for_scan
from ci_runner.collect.source_text import may_mention
from ci_runner.file_safety import read_regular, why
from ci_runner.markers import MARKER_PARAMETERS
from ci_runner.model import Problem


@dataclass
class Survey:
    """What the registrations of a tree look like."""

    files: list[str] = field(default_factory=list)  # every candidate *.py, root-relative, sorted
    markers: Counter[str] = field(default_factory=Counter)  # marker name -> calls
    keywords: Counter[str] = field(default_factory=Counter)  # non-built-in keyword -> calls
    unparsable: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # paths not read (FIFOs, links out)
    # files with a marker call whose names the default patterns (test_*.py, bench_*.py) miss
    outside_default_patterns: list[str] = field(default_factory=list)
    read: dict[str, SurveyedFile] = field(default_factory=dict)  # rel_path -> what was read


def python_files(root: Path, registered_dir: str) -> Walk:
    """Every ``*.py`` under the registered directory but ``__init__.py``/``conftest.py``, read
    by discovery's rules (regular files only; links and hidden directories not followed)."""
    return walk_files(
        root,
        root / registered_dir,
        lambda name: name.endswith(".py") and name not in NEVER_COLLECTED,
        "*.py",
    )


@dataclass(frozen=True)
class SurveyedFile:
    """What the survey read in one file: its marker calls, and what the draft's scan needs."""

    rel_path: str
    content_digest: str
    module: ast.Module | None  # the statements any scan reads (None: no marker text, or no parse)
    problem: Problem | None  # why it does not parse, or cannot be read
    markers: tuple[str, ...] = ()  # marker name of each registration call
    keywords: tuple[str, ...] = ()  # non-core keywords of those calls


def survey_tree(
    root: Path,
    registered_dir: str,
    workers: int | None = None,
    extra_dirs: Sequence[ExtraDir] = (),
) -> Survey:
    """Parse every candidate file once and count markers and keywords (``extra_dirs``: more
    directories, read with their own file-name globs).

    Each file's reduced module (:func:`~ci_runner.collect.file_scan.reduced_module`) is kept in
    ``survey.read`` so the draft scans it under the drafted syntax without parsing it again.
    """
    walk = python_files(root, registered_dir)
    for extra in extra_dirs:
        more = walk_files(
            root,
            root / extra.path,
            lambda name, globs=extra.files: is_registered_file(name, globs),
            "/".join(extra.files),
        )
        walk.files += more.files
        walk.problems += more.problems
    survey = Survey(files=sorted(walk.files), problems=list(walk.problems))
    for found in map_files(functools.partial(survey_file, root), walk.files, workers):
        if found.problem is not None and found.module is None and not found.content_digest:
            survey.problems.append(found.problem)
            survey.files.remove(found.rel_path)
            continue
        survey.read[found.rel_path] = found
        if found.problem is not None:
            survey.unparsable.append(found.rel_path)
        survey.markers.update(found.markers)
        survey.keywords.update(found.keywords)
        name = found.rel_path.rsplit("/", 1)[-1]
        in_extra = any(extra.holds(found.rel_path) for extra in extra_dirs)
        if found.markers and not in_extra and not is_registered_file(name, DEFAULT_FILE_PATTERNS):
            survey.outside_default_patterns.append(found.rel_path)
    return survey


def survey_file(root: Path, rel_path: str) -> SurveyedFile:
    """One file: read, parsed once (when it mentions a marker), its registration calls counted."""
    try:
        data = read_regular(root / rel_path, follow_links=False)
    except OSError as exc:
        return SurveyedFile(rel_path, "", None, Problem(rel_path, 1, 1, f"cannot read: {why(exc)}"))
    content_digest = digest(data)
    if not may_mention(data, ("register_",)):
        return SurveyedFile(rel_path, content_digest, None, None)
    tree, problem = parse_for_scan(data, rel_path, DEFAULT_SYNTAX)
    if tree is None:
        return SurveyedFile(rel_path, content_digest, None, problem)
    core = {*MARKER_PARAMETERS, *BUILTIN_KEYWORDS}
    module = reduced_module(tree, data, DEFAULT_SYNTAX)
    calls = [c for c in read_marker_calls(module, DEFAULT_SYNTAX).calls if c.is_registration]
    return SurveyedFile(
        rel_path,
        content_digest,
        module,
        None,
        markers=tuple(call.marker for call in calls),
        keywords=tuple(
            kw.arg for call in calls for kw in call.call.keywords if kw.arg and kw.arg not in core
        ),
    )
