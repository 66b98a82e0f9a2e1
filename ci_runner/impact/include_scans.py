"""The ``#include`` scans of kernel files, kept across runs as the import facts are.

:mod:`cpp_includes` scans each kernel file once per process (memoized by stat, never while the
file is fresh, and by content when only the stat changed). This cache carries that memo from one
run to the next: :meth:`IncludeScans.load` hands the stored scans to ``cpp_includes`` before the
graph is built, :meth:`IncludeScans.save` writes back what it holds after, when it grew. One
JSON file per repository in :func:`~ci_runner.cache_location.cache_location`; an entry that is
not of the shape written here is ignored (one notice) and the file scanned again; a cache that
cannot be written only costs time. Regular expressions over every kernel file were a fifth of
a warm static selection on SGLang's tree.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from ci_runner.cache_location import (
    announce_damage,
    announce_no_cache,
    cache_location,
    read_entries,
)
from ci_runner.file_safety import write_atomic
from cpp_includes import Include, SourceScan, Unproven, remember_scans, scan_memo

FORMAT = 1  # bump when the shape of an entry or the scanner's rules change
CACHE_NAME = "include-scan cache"


def _encode(entry: tuple[tuple[int, int, int, int], str, SourceScan]) -> list:
    stat, digest, scan = entry
    return [
        list(stat),
        digest,
        [[i.kind, i.quote.decode("latin-1"), i.target, i.line] for i in scan.includes],
        [[u.line, u.text] for u in scan.unproven],
    ]


def _whole(value: object, length: int) -> bool:
    return isinstance(value, list) and len(value) == length


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _decode(raw: object) -> tuple[tuple[int, int, int, int], str, SourceScan]:
    """An entry as ``cpp_includes`` keeps it; ValueError says what is damaged."""
    if not _whole(raw, 4):
        raise ValueError("not a [stat, digest, includes, unproven] list")
    stat, digest, includes, unproven = raw  # type: ignore[misc]
    if not (_whole(stat, 4) and all(_int(n) for n in stat)):
        raise ValueError("the stat is not four whole numbers")
    if not (isinstance(digest, str) and len(digest) == 64):
        raise ValueError("the digest is not a SHA-256")
    if not isinstance(includes, list) or not all(
        _whole(i, 4)
        and isinstance(i[0], str)
        and i[1] in ('"', "<")
        and isinstance(i[2], str)
        and _int(i[3])
        for i in includes
    ):
        raise ValueError("an include is not [kind, quote, target, line]")
    if not isinstance(unproven, list) or not all(
        _whole(u, 2) and _int(u[0]) and isinstance(u[1], str) for u in unproven
    ):
        raise ValueError("an unproven site is not [line, text]")
    scan = SourceScan(
        tuple(Include(k, q.encode("latin-1"), t, n) for k, q, t, n in includes),
        tuple(Unproven(n, t) for n, t in unproven),
    )
    return (stat[0], stat[1], stat[2], stat[3]), digest, scan


class IncludeScans:
    """The stored scans of the kernel files of the repository at ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        location = cache_location()
        announce_no_cache(location)
        identity = json.dumps([FORMAT, sys.version_info[:2], str(self.root)])
        digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
        self.path = (
            None if location.directory is None else location.directory / f"includes-{digest}.json"
        )
        self.damage: list[str] = []
        self.loaded: dict[str, list] = {}

    def load(self) -> None:
        """Hand the stored scans of files under the root to ``cpp_includes``."""
        self.loaded = read_entries(self.path, FORMAT, CACHE_NAME, self.damage)
        known = {}
        for name, raw in self.loaded.items():
            try:
                known[self.root / name] = _decode(raw)
            except ValueError as exc:
                self.damage.append(f"{name}: {exc}")
        remember_scans(known)

    def save(self) -> None:
        """Write back the scans of files under the root when they differ from those loaded."""
        announce_damage(CACHE_NAME, self.path, self.damage)
        self.damage = []
        entries = {}
        for path, entry in scan_memo().items():
            if path.is_relative_to(self.root) and path.is_file():  # a deleted file is dropped
                entries[path.relative_to(self.root).as_posix()] = _encode(entry)
        if self.path is None or entries == self.loaded:
            return
        text = json.dumps({"format": FORMAT, "entries": entries}, separators=(",", ":"))
        try:
            write_atomic(self.path, text.encode())
        except OSError as exc:
            print(
                f"warning: {CACHE_NAME} not written to {self.path} ({exc.strerror or exc}); "
                "set CI_RUNNER_CACHE_DIR=DIR",
                file=sys.stderr,
            )
        self.loaded = entries
