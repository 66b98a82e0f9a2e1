"""The facts of every Python file, cached by content across runs.

A file's facts are reused when its content digest is the one they were read from. The stat
fields (size, modification and change times in ns, inode, device) only spare reading a file
that was not written since, and only when they were recorded more than ``RACY_SECONDS`` after
the file's last change (:func:`ci_runner.collect.parse_cache.stat_key`, git's rule): a file
rewritten within the clock's granularity of the recording keeps its stat, so its stat is not
trusted and its content is hashed on every run until it settles.

The cache is one JSON file per repository in :func:`~ci_runner.cache_location.cache_location`
(``$CI_RUNNER_CACHE_DIR``, else ``$XDG_CACHE_HOME/ci-runner``, else ``~/.cache/ci-runner``);
where there is no such place it is off (one notice). A missing cache is built; an unreadable or
damaged one (an entry whose facts are not of the shape
:func:`~ci_runner.impact.python_facts.facts_problem` accepts) is read again and rewritten, and a
cache that cannot be written is skipped, each with one notice: it only ever costs time. Files
to parse in bulk (a cold cache) are parsed by a pool of forked workers, one per available CPU
(parsing is nearly all of a cold run's time).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from ci_runner.cache_location import announce_damage, announce_no_cache, cache_location
from ci_runner.collect.parse_cache import stat_key
from ci_runner.impact.config import ImpactConfig, KernelLoader
from ci_runner.impact.forked import ForkedPool
from ci_runner.impact.python_facts import (
    FACTS_FORMAT,
    facts_problem,
    file_facts,
)

STAMP_FIELDS = 5  # size, mtime_ns, ctime_ns, inode, device (stat_key); null while racy


class FactCache:
    """Facts of the files of one repository, by relative path; :meth:`save` writes them back."""

    def __init__(self, config: ImpactConfig) -> None:
        self.root = config.root
        self._root_text = str(config.root)
        self.loaders = config.kernel_loaders
        identity = json.dumps(
            [
                FACTS_FORMAT,
                sys.version_info[:2],
                str(config.root.resolve()),
                [(loader.function, list(loader.arguments)) for loader in config.kernel_loaders],
            ]
        )
        digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
        location = cache_location()
        announce_no_cache(location)
        self.path: Path | None = None
        if location.directory is not None:
            self.path = location.directory / f"import-facts-{digest}.json"
        self.damage: list[str] = []  # what was found damaged, ignored and is rewritten
        self._entries: dict[str, list] | None = None  # read at the first lookup
        self.changed = False
        self.parsed = 0
        self._read: dict[str, dict] = {}  # this run's facts, by path
        self._pool = ForkedPool()

    @property
    def entries(self) -> dict[str, list]:
        """The cached entries by relative path, read from disk when first needed (a selection
        that every record decides may need none)."""
        if self._entries is None:
            self._entries = self._load()
        return self._entries

    def _load(self) -> dict[str, list]:
        if self.path is None:
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except OSError:
            return {}  # absent or unreachable: writing it says why it cannot be written
        except (ValueError, RecursionError) as exc:
            self.damage.append(f"the file ({type(exc).__name__})")
            return {}
        if not isinstance(data, dict):
            self.damage.append("the file (not a JSON object)")
            return {}
        return data

    def _entry(self, relative: str) -> list | None:
        """The cached entry of ``relative`` when it is whole; a damaged one is noted, None."""
        if relative not in self.entries:
            return None
        entry = self.entries[relative]
        problem = _entry_problem(entry)
        if problem is not None:
            self.damage.append(f"{relative}: {problem}")
            return None
        return entry

    def facts(self, relative: str) -> dict:
        """The facts of the file at ``relative`` (its content read only when it changed)."""
        known = self._read.get(relative)
        if known is None:
            self.prefetch([relative])
            known = self._read[relative]
        return known

    def prefetch(self, paths: Iterable[str]) -> None:
        """Read the facts of ``paths`` at once: many files to parse go to forked workers."""
        to_parse: list[tuple[str, list | None, str, bytes]] = []
        for relative in dict.fromkeys(paths):
            if relative in self._read:
                continue
            pending = self._lookup(relative)
            if pending is not None:
                to_parse.append(pending)
        if not to_parse:
            return
        sources = [(relative, data) for relative, _stamp, _digest, data in to_parse]
        results = self._parse_all(sources)
        for (relative, stamp, digest, _data), facts in zip(to_parse, results, strict=True):
            self.parsed += 1
            self._store(relative, stamp, digest, facts)

    def _lookup(self, relative: str) -> tuple[str, list | None, str, bytes] | None:
        """Fill in the facts of ``relative`` from the cache when they still apply; otherwise
        what parsing it needs: ``(relative, stamp, digest, content)``."""
        path = os.path.join(self._root_text, relative)
        try:
            stamp = stat_key(_stat(path))
        except OSError as exc:
            self._read[relative] = {"error": f"cannot read it ({exc.strerror or exc})"}
            return None
        entry = self._entry(relative)
        if entry is not None and stamp is not None and entry[0] == stamp:
            self._read[relative] = entry[2]
            return None
        try:
            data = _read(path)
        except OSError as exc:
            self._read[relative] = {"error": f"cannot read it ({exc.strerror or exc})"}
            return None
        digest = hashlib.sha256(data).hexdigest()
        if entry is not None and entry[1] == digest:
            self._store(relative, stamp, digest, entry[2])
            return None
        return relative, stamp, digest, data

    def _store(self, relative: str, stamp: list | None, digest: str, facts: dict) -> None:
        self._read[relative] = facts
        self.entries[relative] = [stamp, digest, facts]
        self.changed = True

    def _parse_all(self, sources: list[tuple[str, bytes]]) -> list[dict]:
        results = self._pool.map(_parse_chunk, sources, self.loaders)
        return results if results is not None else _parse_chunk(self.loaders, sources)

    def close(self) -> None:
        """Stop the workers, if any were started."""
        self._pool.close()

    def save(self) -> None:
        """Write the cache back when anything changed; damage read and a failure to write are
        one notice each (the run goes on: the cache only saves time)."""
        self.close()
        announce_damage("import-facts cache", self.path, self.damage)
        self.damage = []
        if not self.changed or self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(prefix=".import-facts-", dir=self.path.parent)
        except OSError as exc:
            print(
                f"warning: import-facts cache not written to {self.path.parent} "
                f"({exc.strerror or exc}); set CI_RUNNER_CACHE_DIR=DIR",
                file=sys.stderr,
            )
            return
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:  # dumps: the C encoder
                out.write(json.dumps(self.entries, separators=(",", ":")))
            os.replace(temporary, self.path)
        except OSError as exc:
            print(
                f"warning: import-facts cache not written to {self.path} ({exc.strerror or exc})",
                file=sys.stderr,
            )
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def _parse_chunk(loaders: tuple[KernelLoader, ...], sources: list[tuple[str, bytes]]) -> list:
    """The facts of each source, with the cyclic garbage collector paused: a syntax tree holds
    no cycles, and the collector, triggered by the nodes ``ast.parse`` allocates, would
    otherwise take a large share of the time."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return [
            file_facts(data, loaders, relative.rsplit("/", 1)[-1] == "__init__.py")
            for relative, data in sources
        ]
    finally:
        if paused:
            gc.enable()


_stat = os.stat


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _entry_problem(entry: object) -> str | None:
    """Why a cached ``[stamp, digest, facts]`` entry is damaged, else None."""
    if not isinstance(entry, list) or len(entry) != 3:
        return "not a [stamp, digest, facts] list"
    stamp, digest, facts = entry
    if stamp is not None and not (
        isinstance(stamp, list)
        and len(stamp) == STAMP_FIELDS
        and all(isinstance(n, int) and not isinstance(n, bool) for n in stamp)
    ):
        return f"the stamp is neither null nor {STAMP_FIELDS} whole numbers"
    if not isinstance(digest, str):
        return "the digest is not a string"
    return facts_problem(facts)
