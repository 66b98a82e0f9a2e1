"""Following the files a set of sources names, through include directories.

``#include "x"`` is looked up next to the including file, then in the include directories;
``#include <x>`` only in the include directories (the order of ``-I``); ``#include_next`` and
``__has_include_next`` next to the including file and in every include directory, which can only
add files. A name that
resolves nowhere there is external (the C++ library, CUDA, tvm-ffi) and is not followed. Files
named by ``#embed`` / ``__has_embed`` are dependencies read as bytes: kept, not scanned. What a
file's directives leave unproven stays in the :class:`Closure`, per file.

A file is read once per process for each (size, mtime, ctime, inode), except while it is fresh
(changed in the last two seconds): a rewrite within one timestamp tick keeps all four. A file
whose stat changed but whose content did not (a checkout elsewhere) is read and hashed, not
scanned again. :func:`scan_memo` and :func:`remember_scans` let a caller keep the memo across
processes (the runner's include-scan cache).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cpp_includes.directives import Include, SourceScan, Unproven, scan_source

FRESH_NS = 2_000_000_000  # a file changed this recently may change again unseen by its stat

_scan_memo: dict[Path, tuple[tuple[int, int, int, int], str, SourceScan]] = {}
_scan_lock = threading.Lock()


@dataclass(frozen=True)
class Resolved:
    """One file's directives resolved: the files it includes, the data it embeds, and what is
    unproven about it."""

    files: tuple[Path, ...]
    data: tuple[Path, ...]
    unproven: tuple[Unproven, ...]
    external: tuple[Include, ...] = ()  # the includes that resolve to no file


@dataclass
class Closure:
    """Every file the sources read, transitively (sources, headers, embedded data), each real
    path mapped to the file that first named it (``None`` for a source), and per file what it
    leaves unproven. ``proven``: the files are exactly known (up to ``#if`` branches, which
    only add files)."""

    files: dict[Path, Path | None] = field(default_factory=dict)
    unproven: dict[Path, tuple[Unproven, ...]] = field(default_factory=dict)

    @property
    def proven(self) -> bool:
        return not self.unproven


StatKey = tuple[int, int, int, int]  # size, mtime_ns, ctime_ns, inode


def scan_file(path: Path) -> tuple[str, SourceScan]:
    """(sha256 hex digest, directives) of the file at ``path``, memoized per stat, and per
    content when the stat changed."""
    stat = path.stat()
    key = (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)
    with _scan_lock:
        memo = _scan_memo.get(path)
    if memo is not None and memo[0] == key:
        return memo[1], memo[2]
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    scan = memo[2] if memo is not None and memo[1] == digest else scan_source(data)
    if max(stat.st_mtime_ns, stat.st_ctime_ns) < time.time_ns() - FRESH_NS:
        with _scan_lock:
            _scan_memo[path] = (key, digest, scan)
    return digest, scan


def scan_memo() -> dict[Path, tuple[StatKey, str, SourceScan]]:
    """A copy of this process's scans: each file's stat key (recorded only once the file had
    settled), content digest and directives."""
    with _scan_lock:
        return dict(_scan_memo)


def remember_scans(entries: dict[Path, tuple[StatKey, str, SourceScan]]) -> None:
    """Add scans made by another process (:func:`scan_memo`'s shape); a file already scanned
    here keeps its own. Each is used as this process's own: for the same stat, else for the
    same content."""
    with _scan_lock:
        for path, entry in entries.items():
            _scan_memo.setdefault(path, entry)


def include_candidates(
    include: Include, including_dir: Path, include_dirs: Sequence[Path]
) -> list[Path]:
    """The paths an include is looked up at, in search order (:func:`resolve_include` takes the
    first that is a file, or every one for ``#include_next``)."""
    if include.searches_next:  # where it continues depends on the including file: all of them
        search = [including_dir, *include_dirs]
    else:
        search = [including_dir, *include_dirs] if include.quote == b'"' else list(include_dirs)
    return [directory / include.target for directory in search]


def resolve_include(
    include: Include, including_dir: Path, include_dirs: Sequence[Path]
) -> list[Path]:
    """The files (real paths) an include may name; empty when it is external."""
    candidates = include_candidates(include, including_dir, include_dirs)
    if include.searches_next:
        return list(dict.fromkeys(c.resolve() for c in candidates if _is_file(c)))
    for candidate in candidates:
        if _is_file(candidate):
            return [candidate.resolve()]
    return []


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except ValueError:  # a NUL in the name: no file has it
        return False


def resolve_file(path: Path, include_dirs: Sequence[Path]) -> Resolved:
    """The directives of the file at ``path`` resolved against ``include_dirs``."""
    scan = scan_file(path)[1]
    files: list[Path] = []
    data: list[Path] = []
    external: list[Include] = []
    for include in scan.includes:
        found = resolve_include(include, path.parent, include_dirs)
        (data if include.is_data else files).extend(p for p in found if p != path)
        external += [] if found else [include]
    return Resolved(
        tuple(dict.fromkeys(files)), tuple(dict.fromkeys(data)), scan.unproven, tuple(external)
    )


def include_closure(
    sources: Sequence[Path],
    include_dirs: Sequence[Path],
    memo: dict[Path, Resolved] | None = None,
) -> Closure:
    """Every file ``sources`` read, transitively, with ``sources`` themselves (see
    :class:`Closure`). ``memo`` lets a caller computing many closures over one unchanging tree
    keep each file's resolved directives."""
    closure = Closure()
    scanned: set[Path] = set()
    pending: list[tuple[Path, Path | None, bool]] = [(p.resolve(), None, False) for p in sources]
    while pending:
        path, parent, is_data = pending.pop()
        closure.files.setdefault(path, parent)
        if is_data or path in scanned:
            continue
        scanned.add(path)
        resolved = memo.get(path) if memo is not None else None
        if resolved is None:
            resolved = resolve_file(path, include_dirs)
            if memo is not None:
                memo[path] = resolved
        if resolved.unproven:
            closure.unproven[path] = resolved.unproven
        pending += [(p, path, True) for p in resolved.data if p not in closure.files]
        pending += [(p, path, False) for p in resolved.files if p not in scanned]
    return closure


def include_chain(files: dict[Path, Path | None], file: Path) -> list[Path]:
    """The include path from a source to ``file`` in a closure's ``files``:
    ``[source, ..., file]``."""
    chain = [file]
    while (parent := files.get(chain[-1])) is not None:
        chain.append(parent)
    return chain[::-1]
