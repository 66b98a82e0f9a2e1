"""A content-keyed cache of :class:`~ci_runner.collect.file_scan.FileScan` results.

A warm run reads each file and hashes it instead of parsing it. The cache lives in
``$CI_RUNNER_CACHE_DIR``, else ``$XDG_CACHE_HOME/ci-runner``, else ``~/.cache/ci-runner``, never
in the repository; ``CI_RUNNER_PARSE_CACHE=0`` turns it off. One JSON file per (repository root,
registration syntax, runner code): an entry is used only when its file's path and BLAKE2 content
digest match, and the file name holds a digest of the syntax and of the runner's own sources, so
a changed catalog syntax or an upgraded runner never reads an old result.

A file whose ``lstat`` (size, modification and change times in ns, inode, device) equals the
one recorded with its entry is not read again (git's index does the same): its recorded digest
stands. A stat is recorded only when both times are more than ``RACY_SECONDS`` old at the time,
so a file rewritten within the clock's granularity of the recording is always read and hashed.

Safe by construction: a file that does not load, or an entry that does not decode, is a miss
(rewritten at the end of the run), never an error; the file is replaced atomically (write to a
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

from ci_runner.catalog.syntax import RegistrationSyntax
from ci_runner.collect.file_scan import FileScan
from ci_runner.env import get_bool_env
from ci_runner.model import Problem, Registration

CACHE_DIR_VARIABLE = "CI_RUNNER_CACHE_DIR"
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
    """Where the cache lives, or None when ``CI_RUNNER_PARSE_CACHE`` turns it off."""
    env = os.environ if environ is None else environ
    if not get_bool_env(ENABLED_VARIABLE, default=True, environ=env):
        return None
    if env.get(CACHE_DIR_VARIABLE):
        return Path(env[CACHE_DIR_VARIABLE])
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ci-runner"


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
        self._old: dict[str, object] = self._load()
        self._new: dict[str, object] = {}
        self.hits = 0

    @property
    def enabled(self) -> bool:
        return self.path is not None

    def _load(self) -> dict[str, object]:
        if self.path is None:
            return {}
        try:
            data = json.loads(self.path.read_bytes())
        except (OSError, ValueError, RecursionError):
            return {}  # missing or corrupt: every lookup misses, and the file is rewritten
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return {}
        entries = data.get("entries")
        return entries if isinstance(entries, dict) else {}

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
        if not isinstance(entry, dict) or entry.get("digest") != content_digest:
            return None
        try:
            scan = FileScan(
                tuple(_registration(item) for item in entry["registrations"]),
                tuple(_problem(item) for item in entry["problems"]),
                tuple(_problem(item) for item in entry["entry_problems"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None  # a damaged entry: parse again, and the entry is rewritten
        if any(r.path != rel_path for r in scan.registrations):
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


_TYPES: dict[str, tuple[type, ...]] = {
    "path": (str,),
    "backend": (str,),
    "suite": (str,),
    "est_time": (int, float),
    "nightly": (bool,),
    "disabled": (str, type(None)),
    "line": (int,),
    "col": (int,),
    "min_gpus": (int, type(None)),
    "message": (str,),
    "lint": (bool,),
}


def _checked(item: dict) -> dict:
    """``item`` when every field has its type (a damaged entry raises ValueError)."""
    for key, value in item.items():
        kinds = _TYPES.get(key)
        if kinds is not None and (
            not isinstance(value, kinds) or isinstance(value, bool) != (bool in kinds)
        ):
            raise ValueError(f"field {key!r} of a cached entry has the wrong type")
    return item


def _problem(item: dict) -> Problem:
    return Problem(**_checked(item))


def _registration(item: dict) -> Registration:
    fields = _checked(dict(item))
    fields["composed_from"] = tuple(
        (str(key), str(value)) for key, value in fields.get("composed_from", ())
    )
    return Registration(**fields)
