"""The facts of every Python file, cached by content across runs.

A file's facts are reused when its content digest is the one they were read from; the stat
fields (mtime, ctime, size, inode) only spare reading a file that was not written since (ctime
changes on every write, even one that restores the mtime). The cache is one JSON file per
repository in :func:`~ci_runner.cache_location.cache_location` (``$CI_RUNNER_CACHE_DIR``, else
``$XDG_CACHE_HOME/ci-runner``, else ``~/.cache/ci-runner``); where there is no such place it is
off (one notice). A missing cache is built; an unreadable or damaged one (an entry whose facts
are not of the shape :func:`~ci_runner.impact.python_facts.facts_problem` accepts) is read again
and rewritten, and a cache that cannot be written is skipped, each with one notice: it only
ever costs time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

from ci_runner.cache_location import announce_damage, announce_no_cache, cache_location
from ci_runner.impact.config import ImpactConfig
from ci_runner.impact.python_facts import FACTS_FORMAT, facts_problem, file_facts

STAMP_FIELDS = 4  # mtime_ns, ctime_ns, size, inode


class FactCache:
    """Facts of the files of one repository, by relative path; :meth:`save` writes them back."""

    def __init__(self, config: ImpactConfig) -> None:
        self.root = config.root
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
        self.entries: dict[str, list] = self._load()
        self.changed = False
        self.parsed = 0

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
        path = self.root / relative
        try:
            stat = path.stat()
        except OSError as exc:
            return {"error": f"cannot read it ({exc.strerror or exc})"}
        stamp = [stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size, stat.st_ino]
        entry = self._entry(relative)
        if entry is not None and entry[0] == stamp:
            return entry[2]
        try:
            data = path.read_bytes()
        except OSError as exc:
            return {"error": f"cannot read it ({exc.strerror or exc})"}
        digest = hashlib.sha256(data).hexdigest()
        if entry is not None and entry[1] == digest:
            facts = entry[2]
        else:
            facts = file_facts(data, self.loaders, path.name == "__init__.py")
            self.parsed += 1
        self.entries[relative] = [stamp, digest, facts]
        self.changed = True
        return facts

    def save(self) -> None:
        """Write the cache back when anything changed; damage read and a failure to write are
        one notice each (the run goes on: the cache only saves time)."""
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
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(self.entries, out, separators=(",", ":"))
            os.replace(temporary, self.path)
        except OSError as exc:
            print(
                f"warning: import-facts cache not written to {self.path} ({exc.strerror or exc})",
                file=sys.stderr,
            )
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def _entry_problem(entry: object) -> str | None:
    """Why a cached ``[stamp, digest, facts]`` entry is damaged, else None."""
    if not isinstance(entry, list) or len(entry) != 3:
        return "not a [stamp, digest, facts] list"
    stamp, digest, facts = entry
    if not (
        isinstance(stamp, list)
        and len(stamp) == STAMP_FIELDS
        and all(isinstance(n, int) and not isinstance(n, bool) for n in stamp)
    ):
        return "the stamp is not four whole numbers"
    if not isinstance(digest, str):
        return "the digest is not a string"
    return facts_problem(facts)
