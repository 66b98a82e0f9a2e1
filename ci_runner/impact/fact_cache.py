"""The facts of every Python file, cached by content across runs.

A file's facts are reused when its content digest is the one they were read from; the stat
fields (mtime, ctime, size, inode) only spare reading a file that was not written since (ctime
changes on every write, even one that restores the mtime). The cache is one JSON file per
repository under ``$CI_RUNNER_CACHE_DIR`` (default ``$XDG_CACHE_HOME/ci_runner``, else
``~/.cache/ci_runner``); a missing, unreadable or damaged cache is rebuilt, and a cache that cannot
be written is skipped: it only ever costs time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

from ci_runner.impact.config import ImpactConfig
from ci_runner.impact.python_facts import FACTS_FORMAT, file_facts

CACHE_DIR_ENV = "CI_RUNNER_CACHE_DIR"


def cache_dir() -> Path:
    """Where the caches of the change analysis live."""
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ci_runner"


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
        self.path = cache_dir() / f"import-facts-{digest}.json"
        self.entries: dict[str, list] = self._load()
        self.changed = False
        self.parsed = 0

    def _load(self) -> dict[str, list]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return {}
        return data if isinstance(data, dict) else {}

    def facts(self, relative: str) -> dict:
        """The facts of the file at ``relative`` (its content read only when it changed)."""
        path = self.root / relative
        try:
            stat = path.stat()
        except OSError as exc:
            return {"error": f"cannot read it ({exc.strerror or exc})"}
        stamp = [stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size, stat.st_ino]
        entry = self.entries.get(relative)
        if _valid(entry) and entry[0] == stamp:
            return entry[2]
        try:
            data = path.read_bytes()
        except OSError as exc:
            return {"error": f"cannot read it ({exc.strerror or exc})"}
        digest = hashlib.sha256(data).hexdigest()
        if _valid(entry) and entry[1] == digest:
            facts = entry[2]
        else:
            facts = file_facts(data, self.loaders, path.name == "__init__.py")
            self.parsed += 1
        self.entries[relative] = [stamp, digest, facts]
        self.changed = True
        return facts

    def save(self) -> None:
        """Write the cache back when anything changed; failures are ignored."""
        if not self.changed:
            return
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(prefix=".import-facts-", dir=self.path.parent)
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    json.dump(self.entries, out, separators=(",", ":"))
                os.replace(temporary, self.path)
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)


def _valid(entry: object) -> bool:
    return (
        isinstance(entry, list)
        and len(entry) == 3
        and isinstance(entry[2], dict)
        and "error" in entry[2]
    )
