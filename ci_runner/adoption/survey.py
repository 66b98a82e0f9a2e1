"""First pass of ``init``: which marker names and keyword arguments an existing tree uses.

Nothing here knows a catalog yet. Every ``*.py`` under the registered directory (but
``__init__.py`` and ``conftest.py``; regular files only, by discovery's rules) is parsed; each module-level call of a ``register_<x>_ci``
marker counts, however it is bound (read by :mod:`ci_runner.collect.calls`, as the collector
reads it). The result says which syntax the
catalog must declare so that the strict collector accepts the tree.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ci_runner.catalog import DEFAULT_FILE_PATTERNS, NEVER_COLLECTED
from ci_runner.catalog.extra_dirs import ExtraDir
from ci_runner.catalog.syntax import BUILTIN_KEYWORDS
from ci_runner.collect import Walk, is_registered_file, walk_files
from ci_runner.collect.calls import read_marker_calls
from ci_runner.collect.scan import parse_source
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


def python_files(root: Path, registered_dir: str) -> Walk:
    """Every ``*.py`` under the registered directory but ``__init__.py``/``conftest.py``, read
    by discovery's rules (regular files only; links and hidden directories not followed)."""
    return walk_files(
        root,
        root / registered_dir,
        lambda name: name.endswith(".py") and name not in NEVER_COLLECTED,
        "*.py",
    )


def survey_tree(root: Path, registered_dir: str, extra_dirs: Sequence[ExtraDir] = ()) -> Survey:
    """Parse every candidate file once and count markers and keywords (``extra_dirs``: more
    directories, read with their own file-name globs)."""
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
    core = {*MARKER_PARAMETERS, *BUILTIN_KEYWORDS}
    for rel_path in list(survey.files):
        try:
            data = read_regular(root / rel_path, follow_links=False)
        except OSError as exc:
            survey.problems.append(Problem(rel_path, 1, 1, f"cannot read: {why(exc)}"))
            survey.files.remove(rel_path)
            continue
        if b"register_" not in data:
            continue
        tree, _ = parse_source(data, rel_path)
        if tree is None:
            survey.unparsable.append(rel_path)
            continue
        calls = [call for call in read_marker_calls(tree).calls if call.is_registration]
        for call in calls:
            survey.markers[call.marker] += 1
            survey.keywords.update(
                kw.arg for kw in call.call.keywords if kw.arg and kw.arg not in core
            )
        name = rel_path.rsplit("/", 1)[-1]
        in_extra = any(extra.holds(rel_path) for extra in extra_dirs)
        if calls and not in_extra and not is_registered_file(name, DEFAULT_FILE_PATTERNS):
            survey.outside_default_patterns.append(rel_path)
    return survey
