"""A content-keyed cache of :class:`~ci_runner.collect.file_scan.FileScan` results.

A warm run reads each file and hashes it instead of parsing it. The cache lives in
:func:`~ci_runner.cache_location.cache_location` (``$CI_RUNNER_CACHE_DIR``, else
``$XDG_CACHE_HOME/ci-runner``, else ``~/.cache/ci-runner``), never in the repository, and is off
(one notice) where there is no such place; ``CI_RUNNER_PARSE_CACHE=0`` turns it off. One JSON file per (repository root,
registration syntax, runner code): an entry is used only when its file's path and BLAKE2 content
digest match, and the file name holds a digest of the syntax and of the runner's own sources, so
a changed catalog syntax or an upgraded runner never reads an old result.

A file whose ``lstat`` (size, modification and change times in ns, inode, device) equals the
one recorded with its entry is not read again (git's index does the same): its recorded digest
stands. A stat is recorded only when both times are more than ``RACY_SECONDS`` old at the time,
so a file rewritten within the clock's granularity of the recording is always read and hashed.

Safe by construction: a file that does not load, or an entry that does not decode or holds a
value no scan produces (an ``est_time`` of ``Infinity``, a negative line), is a miss (rewritten at
the end of the run, with one notice naming the first damage), never an error; the file is replaced atomically (write to a
temporary file, then rename), so concurrent runs each leave a whole file and the last one wins.
Only the entries of the files this run saw are written, so a file does not grow, and only the
``KEPT_FILES`` most recently written files are kept.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from ci_runner.cache_location import (
    CACHE_DIR_VARIABLE,
    announce_damage,
    announce_no_cache,
    cache_location,
    read_entries,
)
from ci_runner.catalog.limits import number_text
from ci_runner.catalog.syntax import RegistrationSyntax
from ci_runner.collect.arguments import registration_value_problem
from ci_runner.collect.file_scan import FileScan
from ci_runner.env import get_bool_env
from ci_runner.model import Problem, Registration

ENABLED_VARIABLE = "CI_RUNNER_PARSE_CACHE"
FORMAT = 3  # bump when the JSON layout changes
RACY_SECONDS = 2  # a file changed this recently has its content hashed, whatever its stat
KEPT_FILES = 32  # cache files kept in the directory, the most recently written


def stat_key(st: os.stat_result) -> list[int] | None:
    """What must not change for a file's recorded digest to stand; None while it is too recent
    to trust (changed within ``RACY_SECONDS``, or dated in the future)."""
    settled = time.time_ns() - RACY_SECONDS * 1_000_000_000
    if st.st_mtime_ns >= settled or st.st_ctime_ns >= settled:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def digest(data: bytes) -> str:
    """The content key of one file."""
    return hashlib.blake2b(data, digest_size=20).hexdigest()


def cache_directory(environ: Mapping[str, str] | None = None) -> Path | None:
    """Where the cache lives, or None when ``CI_RUNNER_PARSE_CACHE`` turns it off or no cache
    directory can be found (then one notice says why)."""
    env = os.environ if environ is None else environ
    if not get_bool_env(ENABLED_VARIABLE, default=True, environ=env):
        return None
    location = cache_location(env)
    announce_no_cache(location)
    return location.directory


@functools.cache
def runner_code_digest() -> str:
    """A digest of the runner's own ``*.py`` sources: any change of the code is a new cache."""
    package = Path(__file__).resolve().parents[1]
    hasher = hashlib.blake2b(digest_size=20)
    for path in sorted(package.rglob("*.py")):
        hasher.update(path.relative_to(package).as_posix().encode())
        hasher.update(path.read_bytes())
    return hasher.hexdigest()


def _syntax_key(syntax: RegistrationSyntax) -> str:
    template = syntax.suite_template.text if syntax.suite_template else None
    return json.dumps(
        [sorted(syntax.markers.items()), template, list(syntax.ignored_arguments)],
        separators=(",", ":"),
    )


class ParseCache:
    """The cached scans of one repository under one registration syntax."""

    def __init__(self, directory: Path | None, root: Path, syntax: RegistrationSyntax) -> None:
        self.path: Path | None = None
        if directory is not None:
            try:
                code = runner_code_digest()
            except OSError:  # the runner's own sources cannot be read: no safe key, no cache
                code = None
            if code is not None:
                key = hashlib.blake2b(digest_size=16)
                for part in (str(FORMAT), code, str(root.resolve()), _syntax_key(syntax)):
                    key.update(part.encode("utf-8", "surrogateescape") + b"\0")
                self.path = directory / f"scans-{key.hexdigest()}.json"
        self.backends = frozenset(syntax.markers.values())
        self.damage: list[str] = []  # what was found damaged, ignored and is rewritten
        self._old: dict[str, object] = self._load()
        self._new: dict[str, object] = {}
        self.hits = 0

    @property
    def enabled(self) -> bool:
        return self.path is not None

    def _load(self) -> dict[str, object]:
        return read_entries(self.path, FORMAT, "parse cache", self.damage)

    def digest_by_stat(self, rel_path: str, st: os.stat_result) -> str | None:
        """The recorded digest of this path when its stat is the recorded one, else None."""
        entry = self._old.get(rel_path)
        if not isinstance(entry, dict) or entry.get("stat") is None:
            return None
        if entry["stat"] != stat_key(st):
            return None
        recorded = entry.get("digest")
        return recorded if isinstance(recorded, str) else None

    def get(
        self, rel_path: str, content_digest: str, st: os.stat_result | None = None
    ) -> FileScan | None:
        """The cached scan of this path with this content, or None. ``st``: the file's stat,
        recorded with the entry (see :func:`stat_key`)."""
        entry = self._old.get(rel_path)
        if rel_path in self._old and not isinstance(entry, dict):
            self.damage.append(f"{rel_path}: the entry is not an object")
            return None
        if entry is None or entry.get("digest") != content_digest:
            return None
        try:
            scan = _scan(entry, rel_path, self.backends)
        except DamagedEntry as exc:  # parse again, and the entry is rewritten
            self.damage.append(f"{rel_path}: {exc}")
            return None
        self._new[rel_path] = {**entry, "stat": None if st is None else stat_key(st)}
        self.hits += 1
        return scan

    def put(
        self,
        rel_path: str,
        content_digest: str,
        scan: FileScan,
        st: os.stat_result | None = None,
    ) -> None:
        self._new[rel_path] = {
            "digest": content_digest,
            "stat": None if st is None else stat_key(st),
            "registrations": [_registration_data(r) for r in scan.registrations],
            "problems": [vars(p) for p in scan.problems],
            "entry_problems": [vars(p) for p in scan.entry_problems],
        }

    def save(self) -> None:
        """Write this run's entries, atomically; a cache that cannot be written is a warning."""
        announce_damage("parse cache", self.path, self.damage)
        self.damage = []
        if self.path is None or self._new == self._old:
            return
        text = json.dumps({"format": FORMAT, "entries": self._new}, separators=(",", ":"))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".scans-")
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    out.write(text)
                os.replace(temporary, self.path)
            except BaseException:
                os.unlink(temporary)
                raise
            _drop_oldest(self.path.parent)
        except OSError as exc:
            print(
                f"warning: parse cache not written to {self.path.parent} ({exc.strerror or exc}); "
                f"set {CACHE_DIR_VARIABLE}=DIR, or {ENABLED_VARIABLE}=0 to turn it off",
                file=sys.stderr,
            )


def _drop_oldest(directory: Path) -> None:
    """Keep the ``KEPT_FILES`` most recently written cache files (each runner version and
    catalog syntax has its own); a file another run removes first is no error."""
    files = []
    for path in directory.glob("scans-*.json"):
        try:
            files.append((path.stat().st_mtime, path))
        except OSError:
            continue
    for _, path in sorted(files, reverse=True)[KEPT_FILES:]:
        with contextlib.suppress(OSError):
            path.unlink()


def _registration_data(reg: Registration) -> dict[str, object]:
    data = dict(vars(reg))
    data["composed_from"] = [list(pair) for pair in reg.composed_from]
    return data


MAX_POSITION = 2**31  # a line or column number beyond this is no parse's


class DamagedEntry(ValueError):
    """A cached entry holds something no scan produces; the message says what."""


def _position(item: dict, key: str) -> int:
    value = item.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < MAX_POSITION:
        raise DamagedEntry(f"{key} {number_text(value)} is not a line or column number")
    return value


def _text(item: dict, key: str) -> str:
    value = item.get(key)
    if not isinstance(value, str):
        raise DamagedEntry(f"{key} {number_text(value)} is not a string")
    return value


def _fields(item: object, known: set[str]) -> dict:
    if not isinstance(item, dict):
        raise DamagedEntry(f"{number_text(item)} is not an object")
    unknown = sorted(str(key) for key in item if key not in known)
    if unknown:
        raise DamagedEntry(f"unknown field {unknown[0]!r}")
    return item


def _problem(item: object, rel_path: str) -> Problem:
    fields = _fields(item, {"path", "line", "col", "message", "lint", "rule"})
    if _text(fields, "path") != rel_path:
        raise DamagedEntry(f"a problem of {fields['path']!r} cached for {rel_path!r}")
    lint = fields.get("lint", False)
    if not isinstance(lint, bool):
        raise DamagedEntry(f"lint {number_text(lint)} is not true or false")
    line, col = _position(fields, "line"), _position(fields, "col")
    rule = fields.get("rule", "")
    if not isinstance(rule, str):
        raise DamagedEntry(f"rule {number_text(rule)} is not a string")
    return Problem(rel_path, line, col, _text(fields, "message"), lint, rule)


_REGISTRATION_FIELDS = {
    "path", "backend", "suite", "est_time", "nightly", "disabled", "line", "col", "min_gpus",
    "composed_from", "quarantined",
}  # fmt: skip


def _registration(item: object, rel_path: str, backends: frozenset[str]) -> Registration:
    """The registration of a cached item, checked as a marker call's arguments are checked."""
    fields = _fields(item, _REGISTRATION_FIELDS)
    if _text(fields, "path") != rel_path:
        raise DamagedEntry(f"a registration of {fields['path']!r} cached for {rel_path!r}")
    if _text(fields, "backend") not in backends:
        raise DamagedEntry(f"backend {fields['backend']!r} is no marker's of this catalog")
    for name in ("est_time", "suite", "nightly", "disabled", "min_gpus", "quarantined"):
        value = fields.get(name)
        if name not in fields and name not in ("est_time", "suite"):
            continue  # an optional field at its default
        if name in ("min_gpus", "quarantined") and value is None:
            continue
        problem = registration_value_problem(name, value)
        if problem:
            raise DamagedEntry(f"{name} {problem}")
    pairs = fields.get("composed_from", [])
    if not isinstance(pairs, list) or not all(
        isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)
        for pair in pairs
    ):
        raise DamagedEntry("composed_from is not a list of [field, value] string pairs")
    return Registration(
        path=rel_path,
        backend=fields["backend"],
        suite=fields["suite"],
        est_time=float(fields["est_time"]),
        nightly=fields.get("nightly", False),
        disabled=fields.get("disabled"),
        line=_position(fields, "line"),
        col=_position(fields, "col"),
        min_gpus=fields.get("min_gpus"),
        composed_from=tuple((key, value) for key, value in pairs),
        quarantined=fields.get("quarantined"),
    )


def _scan(entry: dict, rel_path: str, backends: frozenset[str]) -> FileScan:
    """The scan a cached entry holds (:class:`DamagedEntry` when it holds anything else)."""
    lists = {}
    for key in ("registrations", "problems", "entry_problems"):
        value = entry.get(key)
        if not isinstance(value, list):
            raise DamagedEntry(f"{key} {number_text(value)} is not a list")
        lists[key] = value
    return FileScan(
        tuple(_registration(item, rel_path, backends) for item in lists["registrations"]),
        tuple(_problem(item, rel_path) for item in lists["problems"]),
        tuple(_problem(item, rel_path) for item in lists["entry_problems"]),
    )
