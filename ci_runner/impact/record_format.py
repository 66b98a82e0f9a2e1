"""The dependency record of ``--record-deps DIR``: what each test file ran, opened and built.

The record is one directory, an artifact of a recording run:

``DIR/record.json``
    ``{"format": 2, "commit": "<sha>" | null}``: the format version and the commit the files
    ran at (null when the tree was not a clean git checkout). Every shard of one run writes the
    same file, so shards merge by copying their directories into one.
``DIR/tests/<name>.json``
    one :class:`FileRecord` per test file (the name is a digest of the path; the path is inside).

Format 2 attributes the code to the test cases: :attr:`FileRecord.file_code` is what ran
outside every case (collection, imports, fixtures wider than a function), and
:attr:`FileRecord.cases` what each case ran, with its duration, so a change that only some
cases ran keeps only those cases (:mod:`ci_runner.impact.case_scope`). The files opened are
attributed the same way (``file_opened`` and each case's ``opened``), and the directories
listed (``file_listed``, each case's ``listed``); a record without them (written before they
existed) counts every file it opened and directory it listed as the file's.

Paths are POSIX, relative to the repository root. A test record is valid only when its file
passed at the first attempt and nothing in its run escaped the recording
(:attr:`FileRecord.problems` empty); :mod:`ci_runner.impact.recorded` decides with valid
records and falls back to the static closure for the others.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ci_runner.file_safety import read_regular_text, why

FORMAT = 2  # 2: per-case code (file_code, cases, seconds)
META_FILE = "record.json"
TESTS_DIR = "tests"


class RecordError(Exception):
    """A record directory that cannot be read at all; the message names the path."""


@dataclass(frozen=True)
class KernelUse:
    """A JIT module the test loaded: its sources and the files its compiler read, hashed."""

    module: str
    sources: tuple[str, ...]
    dependencies: dict[str, str]  # repository file -> sha256


@dataclass(frozen=True)
class CaseRecord:
    """What one test case ran: its duration in the recording run and its blocks."""

    seconds: float
    code: dict[str, tuple[str, ...]] = field(default_factory=dict)  # file -> block keys
    opened: tuple[str, ...] = ()  # files of FileRecord.opened that this case opened
    listed: tuple[str, ...] = ()  # directories of FileRecord.listed that this case listed


@dataclass(frozen=True)
class FileRecord:
    """What one test file did in the recording run (every process of its tree)."""

    test: str
    commit: str | None
    status: str  # the file's status in the recording run
    code: dict[str, dict[str, str]] = field(default_factory=dict)  # file -> {block: digest}
    sources: dict[str, str] = field(default_factory=dict)  # file of ``code`` -> its sha256
    opened: dict[str, str | None] = field(default_factory=dict)  # file -> sha256, None: absent
    listed: tuple[str, ...] = ()  # directories the test listed ("" is the root)
    imported: tuple[str, ...] = ()  # module names whose import the test attempted
    kernels: tuple[KernelUse, ...] = ()
    unbounded: tuple[str, ...] = ()  # what the test ran whose reads were not recorded
    problems: tuple[str, ...] = ()  # why the record cannot vouch for the test
    # The code by test case (empty: none recorded, the file is one unit): the blocks run outside
    # every case, and each case's; ``seconds`` is the file's wall time in the recording run.
    file_code: dict[str, tuple[str, ...]] = field(default_factory=dict)
    cases: dict[str, CaseRecord] = field(default_factory=dict)
    seconds: float = 0.0
    # The files of ``opened`` opened outside every case; None: the record does not say which
    # (every file it opened is the file's)
    file_opened: tuple[str, ...] | None = None
    file_listed: tuple[str, ...] | None = None  # the same, for the directories listed

    def to_json(self) -> dict[str, object]:
        return {
            "format": FORMAT,
            "test": self.test,
            "commit": self.commit,
            "status": self.status,
            "code": {p: dict(sorted(b.items())) for p, b in sorted(self.code.items())},
            "sources": dict(sorted(self.sources.items())),
            "opened": dict(sorted(self.opened.items())),
            "listed": sorted(self.listed),
            "imported": sorted(self.imported),
            "kernels": [
                {
                    "module": k.module,
                    "sources": list(k.sources),
                    "dependencies": dict(sorted(k.dependencies.items())),
                }
                for k in self.kernels
            ],
            "unbounded": list(self.unbounded),
            "problems": list(self.problems),
            "file_code": _keys_json(self.file_code),
            "cases": {
                case: {
                    "seconds": c.seconds,
                    "code": _keys_json(c.code),
                    "opened": sorted(c.opened),
                    "listed": sorted(c.listed),
                }
                for case, c in sorted(self.cases.items())
            },
            "seconds": self.seconds,
            "file_opened": None if self.file_opened is None else sorted(self.file_opened),
            "file_listed": None if self.file_listed is None else sorted(self.file_listed),
        }


def _keys_json(code: dict[str, tuple[str, ...]]) -> dict[str, list[str]]:
    return {path: sorted(keys) for path, keys in sorted(code.items())}


def file_digest(path: Path) -> str | None:
    """SHA-256 of a file's bytes; None when it is absent or unreadable."""
    try:
        with open(path, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None


def record_name(test: str) -> str:
    digest = hashlib.sha256(test.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(test).stem)[:60]
    return f"{stem}-{digest}.json"


def write_meta(directory: Path, commit: str | None) -> None:
    """Create ``DIR`` and its ``record.json``; raises OSError."""
    (directory / TESTS_DIR).mkdir(parents=True, exist_ok=True)
    _write_json(directory / META_FILE, {"format": FORMAT, "commit": commit})


def write_test_record(directory: Path, record: FileRecord) -> None:
    """Write (replace) the record of one test file; raises OSError."""
    _write_json(directory / TESTS_DIR / record_name(record.test), record.to_json())


def _write_json(path: Path, data: object) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(temporary, path)


@dataclass(frozen=True)
class RecordSet:
    """A record directory as read: its commit, the records, and the files that were unusable."""

    source: Path
    commit: str | None
    format: int
    tests: dict[str, FileRecord]
    damaged: tuple[str, ...] = ()  # "<file>: why", one per unreadable test record

    @property
    def readable(self) -> bool:
        """False when the format is not this runner's: no record is used."""
        return self.format == FORMAT

    def read_paths(self) -> frozenset[str]:
        """Every repository file some valid record opened, ran code of, or built a JIT module
        from (ignore rules do not hide these)."""
        found: set[str] = set()
        for record in self.tests.values():
            if not record.problems:
                found |= record.opened.keys() | record.code.keys()
                for use in record.kernels:
                    found |= set(use.dependencies) | set(use.sources)
        return frozenset(found)


def read_records(directory: Path, flag: str = "--deps-from") -> RecordSet:
    """Read ``DIR``; a missing directory or ``record.json`` is a :class:`RecordError`, a damaged
    test record is listed in ``damaged`` (that test has no valid record)."""
    meta_path = directory / META_FILE
    if not directory.is_dir():
        raise RecordError(f"{flag} {directory}: not a directory (expected a --record-deps DIR)")
    try:
        meta = json.loads(read_regular_text(meta_path))
    except FileNotFoundError:
        raise RecordError(
            f"{flag} {directory}: no {META_FILE} (not a --record-deps directory)"
        ) from None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise RecordError(f"{flag} {meta_path}: cannot read: {why(exc)}") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("format"), int):
        raise RecordError(f'{flag} {meta_path}: expected {{"format": int, "commit": ...}}')
    commit = meta.get("commit")
    if commit is not None and not isinstance(commit, str):
        raise RecordError(f"{flag} {meta_path}: 'commit' must be a string or null")
    if meta["format"] != FORMAT:
        return RecordSet(directory, commit, meta["format"], {})
    tests: dict[str, FileRecord] = {}
    damaged: list[str] = []
    tests_dir = directory / TESTS_DIR
    names = sorted(os.listdir(tests_dir)) if tests_dir.is_dir() else []
    for name in names:
        if not name.endswith(".json") or name.startswith("."):
            continue
        path = tests_dir / name
        try:
            record = _parse_test(json.loads(read_regular_text(path)))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            damaged.append(f"{path}: {why(exc) if isinstance(exc, OSError) else exc}")
            continue
        if record.commit != commit:
            record = _with_problem(record, f"recorded at {record.commit}, the record at {commit}")
        tests[record.test] = record
    return RecordSet(directory, commit, FORMAT, tests, tuple(damaged))


def _with_problem(record: FileRecord, problem: str) -> FileRecord:
    return dataclasses.replace(record, problems=(*record.problems, problem))


_STR = {str}  # the types JSON gives a string and null; checked by set(map(type, ...)), in C
_STR_OR_NULL = {str, type(None)}


def _strings(value: object, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not set(map(type, value)) <= _STR:
        raise ValueError(f"{key!r} must be a list of strings")
    return tuple(value)


def _digests(value: object, key: str, nullable: bool = False) -> dict[str, str]:
    allowed = _STR_OR_NULL if nullable else _STR
    if (
        not isinstance(value, dict)
        or not set(map(type, value)) <= _STR
        or not set(map(type, value.values())) <= allowed
    ):
        raise ValueError(f"{key!r} must map strings to digests")
    return dict(value)


def _keys(value: object, key: str) -> dict[str, tuple[str, ...]]:
    if not isinstance(value, dict):
        raise ValueError(f"{key!r} must map files to block keys")
    return {str(p): _strings(k, f"{key}.{p}") for p, k in value.items()}


def _seconds(value: object, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{key!r} must be a number of seconds >= 0")
    return float(value)


def _cases(value: object) -> dict[str, CaseRecord]:
    if not isinstance(value, dict):
        raise ValueError("'cases' must map case ids to {seconds, code}")
    cases = {}
    for case, entry in value.items():
        if not isinstance(entry, dict):
            raise ValueError(f"'cases.{case}' must be {{seconds, code}}")
        cases[str(case)] = CaseRecord(
            _seconds(entry.get("seconds"), f"cases.{case}.seconds"),
            _keys(entry.get("code"), f"cases.{case}.code"),
            _strings(entry.get("opened", []), f"cases.{case}.opened"),
            _strings(entry.get("listed", []), f"cases.{case}.listed"),
        )
    return cases


def _parse_test(data: object) -> FileRecord:
    """One test record, every key checked; ValueError names the key."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"not a format-{FORMAT} test record")
    test, status, commit = data.get("test"), data.get("status"), data.get("commit")
    if not isinstance(test, str) or not test or not isinstance(status, str):
        raise ValueError("'test' and 'status' must be strings")
    if commit is not None and not isinstance(commit, str):
        raise ValueError("'commit' must be a string or null")
    code = data.get("code")
    if not isinstance(code, dict):
        raise ValueError("'code' must map files to blocks")
    kernels = []
    raw_kernels = data.get("kernels")
    if not isinstance(raw_kernels, list):
        raise ValueError("'kernels' must be a list")
    for entry in raw_kernels:
        if not isinstance(entry, dict) or not isinstance(entry.get("module"), str):
            raise ValueError("each of 'kernels' must have a 'module'")
        kernels.append(
            KernelUse(
                entry["module"],
                _strings(entry.get("sources"), "kernels.sources"),
                _digests(entry.get("dependencies"), "kernels.dependencies"),
            )
        )
    return FileRecord(
        test=test,
        commit=commit,
        status=status,
        code={str(p): _digests(b, f"code.{p}") for p, b in code.items()},
        sources=_digests(data.get("sources", {}), "sources"),
        opened=_digests(data.get("opened"), "opened", nullable=True),
        listed=_strings(data.get("listed"), "listed"),
        imported=_strings(data.get("imported"), "imported"),
        kernels=tuple(kernels),
        unbounded=_strings(data.get("unbounded"), "unbounded"),
        problems=_strings(data.get("problems"), "problems"),
        file_code=_keys(data.get("file_code"), "file_code"),
        cases=_cases(data.get("cases")),
        seconds=_seconds(data.get("seconds"), "seconds"),
        file_opened=(
            None
            if data.get("file_opened") is None
            else _strings(data.get("file_opened"), "file_opened")
        ),
        file_listed=(
            None
            if data.get("file_listed") is None
            else _strings(data.get("file_listed"), "file_listed")
        ),
    )
