"""The ``#include`` closure of a module, kept across processes: a warm load reads no header.

:func:`~jit_kernel.compiler.sources.source_closure` reads, hashes and scans every header a
module includes; a fresh process that only loads a cached module spent most of its
``load_jit`` there. :func:`cached_source_closure` stores each closure in
``<cache root>/.closures/<request digest>.json`` with the stat of everything that decided it, and
a later process uses it while every one of those stats is unchanged:

* every file of the closure (its real path), which covers its bytes, hence its digest and its
  directives;
* every place the include search looked at: a candidate that is a file (the stat follows links,
  so it names the file it reaches), and for one that is not, the directory it would be in (or,
  if that is missing, its nearest existing ancestor): adding, removing or renaming an entry
  there, a file that would now shadow a later candidate included, changes that directory's
  stat;
* the scanner's own source files, so a changed scanner scans again.

A stat is a sound witness only for a file that has not changed within one timestamp tick (git's
"racy" rule, the one :mod:`cpp_includes.closure`'s per-process memo follows): a closure is
stored only when every stat it records was older than ``FRESH_NS`` before the scan started;
otherwise nothing is stored and the next process scans again. The store is an optimisation:
one that cannot be read or written is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import cpp_includes.closure
import cpp_includes.directives
from cpp_includes import include_candidates, include_closure, scan_file
from cpp_includes.closure import FRESH_NS
from jit_kernel.compiler.sources import Root, closure_entries

CLOSURE_DIR = ".closures"
FORMAT = 1

#: Files whose code decides a closure: a change to any of them scans again.
SCANNER_FILES = tuple(
    str(Path(path).resolve())
    for path in (
        cpp_includes.closure.__file__,
        cpp_includes.directives.__file__,
        __file__,
        Path(__file__).with_name("sources.py"),
    )
)

Entries = tuple[list[tuple[str, str]], list[str]]


def _stat_key(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def cached_source_closure(
    sources: Sequence[Path],
    include_dirs: Sequence[Path],
    roots: Sequence[Root],
    store: Path | None,
) -> Entries:
    """``source_closure(sources, include_dirs, roots)``, from ``store`` (a directory) when a
    closure of the same request is there and still holds, else computed (and stored)."""
    if store is None:
        return closure_entries(include_closure(sources, include_dirs), roots)
    request = json.dumps(
        [
            FORMAT,
            [str(path) for path in sources],
            [str(path) for path in include_dirs],
            [[root.name, str(root.path)] for root in roots],
        ]
    )
    digest = hashlib.sha256(request.encode()).hexdigest()[:32]
    path = store / f"{digest}.json"
    found = _read(path, request)
    if found is not None:
        return found
    started_ns = time.time_ns()
    closure = include_closure(sources, include_dirs)
    entries = closure_entries(closure, roots)
    witnesses = _witnesses(closure.files, include_dirs, started_ns - FRESH_NS)
    if witnesses is not None:
        _write(path, {"request": request, "entries": entries, "stats": witnesses})
    return entries


def _read(path: Path, request: str) -> Entries | None:
    """The stored entries at ``path`` when they are for ``request`` and every stat holds."""
    try:
        with open(path, "rb") as handle:
            stored = json.loads(handle.read())
        if stored["request"] != request:
            return None
        for name, key in stored["stats"].items():
            if _stat_key(name) != key:
                return None
        files, unproven = stored["entries"]
        return [(label, sha) for label, sha in files], list(unproven)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _witnesses(
    files: dict[Path, Path | None], include_dirs: Sequence[Path], settled_ns: int
) -> dict[str, list[int]] | None:
    """``{path: stat key}`` of everything that decided the closure of ``files`` (see the module
    docstring); None when one of them changed after ``settled_ns`` (or is in the future)."""
    stats: dict[str, list[int] | None] = {}

    def witness(path: str) -> None:
        if path not in stats:
            stats[path] = _stat_key(path)

    for name in SCANNER_FILES:
        witness(name)
    for file in files:
        witness(str(file))
        if not file.is_file():
            continue
        for include in scan_file(file)[1].includes:
            for candidate in include_candidates(include, file.parent, include_dirs):
                text = str(candidate)
                if "\0" in text:  # no file has this name, ever
                    continue
                if os.path.isfile(text):
                    witness(text)
                    if not include.searches_next:
                        break
                else:
                    witness(_nearest_directory(os.path.dirname(text)))
    for key in stats.values():
        if key is None or max(key[1], key[2]) >= settled_ns:
            return None
    return stats  # type: ignore[return-value]  # no None left


def _nearest_directory(path: str) -> str:
    """``path`` if it is a directory, else its nearest ancestor that is."""
    while not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def _write(path: Path, content: dict[str, object]) -> None:
    """Write ``content`` to ``path`` whole (a rename), or not at all."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        staged = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        staged.write_text(json.dumps(content))
        os.replace(staged, path)
    except OSError:
        pass
