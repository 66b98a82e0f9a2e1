"""The :class:`~ci_runner.impact.identifiers.Identifiers` of a repository's files, cached in one
file read in one go.

An entry is ``[stamp, sha256, identifiers]`` by relative path, reused when the file's content
digest is the one it was read from. The stamp (size, modification and change times in ns,
inode, device) only spares reading a file not written since, and only when it was recorded more
than ``RACY_SECONDS`` after the file's last change
(:func:`ci_runner.collect.parse_cache.stat_key`, git's rule): a file rewritten within the clock's
granularity keeps its stat, so a fresh stat is not trusted and the content is hashed until it
settles. One JSON file per repository and Python version in
:func:`~ci_runner.cache_location.cache_location` (off, with one notice, where there is none). An
unreadable file, or an entry not of the shape this module writes, is read again and rewritten
(one notice); a cache that cannot be written only costs time. Files to read in bulk (a cold
cache) are parsed by forked workers, one per available CPU.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from ci_runner.cache_location import (
    announce_damage,
    announce_no_cache,
    cache_location,
    read_entries,
)
from ci_runner.collect.parse_cache import stat_key
from ci_runner.impact.forked import forked_map
from ci_runner.impact.identifiers import Identifiers, identifiers, tree_identifiers

FORMAT = 2  # bump when Identifiers change shape or meaning
STAMP_FIELDS = 5


class IdentifierCache:
    """Identifiers of the files of one repository, by relative path (None: the file cannot be
    read or does not parse); :meth:`save` writes them back."""

    def __init__(self, root: Path) -> None:
        self.root = root
        identity = json.dumps([FORMAT, sys.version_info[:2], str(root.resolve())])
        location = cache_location()
        announce_no_cache(location)
        self.path: Path | None = None
        if location.directory is not None:
            digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
            self.path = location.directory / f"identifiers-{digest}.json"
        self.damage: list[str] = []
        self.entries: dict[str, object] = self._load()
        self.changed = False
        self.parsed = 0
        self._known: dict[str, Identifiers | None] = {}

    def _load(self) -> dict[str, object]:
        return read_entries(self.path, FORMAT, "identifier cache", self.damage)

    def get(self, relative: str) -> Identifiers | None:
        """The identifiers of the file at ``relative`` (its content read only when it changed)."""
        if relative not in self._known:
            self.prefetch([relative])
        return self._known[relative]

    def prefetch(self, paths: Iterable[str]) -> None:
        """Read the identifiers of ``paths`` at once: many files to parse go to forked workers."""
        pending: list[tuple[str, list | None, str, bytes]] = []
        for relative in dict.fromkeys(paths):
            if relative not in self._known:
                found = self._lookup(relative)
                if found is not None:
                    pending.append(found)
        if not pending:
            return
        sources = [data for _relative, _stamp, _digest, data in pending]
        results = forked_map(_parse_chunk, sources) or _parse_chunk(sources)
        for (relative, stamp, digest, _data), encoded in zip(pending, results, strict=True):
            self.parsed += 1
            self._store(relative, stamp, digest, encoded)

    def _lookup(self, relative: str) -> tuple[str, list | None, str, bytes] | None:
        """Fill in ``relative`` from the cache when its entry still applies; otherwise what
        parsing it needs."""
        path = os.path.join(self.root, relative)
        try:
            stamp = stat_key(_stat(path))
            entry = self._entry(relative)
            if entry is not None and stamp is not None and entry[0] == stamp:
                self._known[relative] = entry[2]
                return None
            data = _read(path)
        except OSError:
            self._known[relative] = None
            return None
        digest = hashlib.sha256(data).hexdigest()
        if entry is not None and entry[1] == digest:
            self._store(relative, stamp, digest, _encode(entry[2]))
            return None
        return relative, stamp, digest, data

    def _entry(self, relative: str) -> tuple[list | None, str, Identifiers | None] | None:
        """The cached entry of ``relative`` when it is whole; a damaged one is noted, None."""
        raw = self.entries.get(relative)
        if raw is None:
            return None
        try:
            return _decode_entry(raw)
        except (ValueError, TypeError) as exc:
            self.damage.append(f"{relative}: {exc}")
            return None

    def _store(self, relative: str, stamp: list | None, digest: str, encoded: list | None) -> None:
        self._known[relative] = _decode(encoded)
        self.entries[relative] = [stamp, digest, encoded]
        self.changed = True

    def save(self) -> None:
        """Write the cache back when anything changed; damage read and a failure to write are
        one notice each."""
        announce_damage("identifier cache", self.path, self.damage)
        self.damage = []
        if not self.changed or self.path is None:
            return
        text = json.dumps({"format": FORMAT, "entries": self.entries}, separators=(",", ":"))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(prefix=".identifiers-", dir=self.path.parent)
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    out.write(text)
                os.replace(temporary, self.path)
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
        except OSError as exc:
            print(
                f"warning: identifier cache not written to {self.path} ({exc.strerror or exc}); "
                "set CI_RUNNER_CACHE_DIR=DIR",
                file=sys.stderr,
            )
        self.changed = False


_stat = os.stat


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _parse_chunk(sources: list[bytes]) -> list[list | None]:
    """The encoded identifiers of each source, the cyclic garbage collector paused (a syntax
    tree holds no cycles)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return [_encode(identifiers(source)) for source in sources]
    finally:
        if paused:
            gc.enable()


def _encoded(tree: ast.Module | None) -> list | None:
    """The encoded identifiers of a parsed file (None: it does not parse)."""
    return None if tree is None else _encode(tree_identifiers(tree))


def _encode(found: Identifiers | None) -> list | None:
    if found is None:
        return None
    return [
        sorted(found.names),
        sorted(found.attrs),
        found.dynamic,
        found.star,
        sorted(found.module_names),
        sorted(found.module_attrs),
    ]


def _decode(encoded: list | None) -> Identifiers | None:
    if encoded is None:
        return None
    names, attrs, dynamic, star, module_names, module_attrs = encoded
    # sorted lists as read: the binding rule only tests them against its sets (isdisjoint)
    return Identifiers(names, attrs, dynamic, star, module_names, module_attrs)


def _strings(value: object, what: str) -> list[str]:
    if type(value) is not list:
        raise ValueError(f"{what} is not a list of strings")
    try:
        "".join(value)  # type: ignore[arg-type]  # one C loop: raises on any non-string
    except TypeError:
        raise ValueError(f"{what} is not a list of strings") from None
    return value


def _decode_entry(raw: object) -> tuple[list | None, str, Identifiers | None]:
    """``(stamp, digest, identifiers)`` of a cached entry; ValueError says what is damaged."""
    if not isinstance(raw, list) or len(raw) != 3:
        raise ValueError("not a [stamp, digest, identifiers] list")
    stamp, digest, encoded = raw
    if stamp is not None and not (
        isinstance(stamp, list)
        and len(stamp) == STAMP_FIELDS
        and all(isinstance(n, int) and not isinstance(n, bool) for n in stamp)
    ):
        raise ValueError(f"the stamp is neither null nor {STAMP_FIELDS} whole numbers")
    if not isinstance(digest, str) or len(digest) != 64:
        raise ValueError("the digest is not a SHA-256")
    if encoded is None:
        return stamp, digest, None
    if not isinstance(encoded, list) or len(encoded) != 6:
        raise ValueError(
            "the identifiers are not [names, attrs, dynamic, star, module names, module attrs]"
        )
    names, attrs, dynamic, star, module_names, module_attrs = encoded
    _strings(names, "names")
    _strings(attrs, "attrs")
    _strings(module_names, "module names")
    _strings(module_attrs, "module attrs")
    if not isinstance(dynamic, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in dynamic.items()
    ):
        raise ValueError("dynamic is not a map of block keys to text")
    if not isinstance(star, bool):
        raise ValueError("star is not true or false")
    return stamp, digest, _decode(encoded)
