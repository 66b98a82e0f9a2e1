"""``extra-dirs``: directories collected beside ``registered-dir``, each with its own file names.

Some runners also collect tests that live next to the code they test, e.g. SGLang's
``test/run_suite.py`` at some commits globs ``python/sglang/jit_kernel/tests/**/test_*.py``::

    extra-dirs = [{path = "python/sglang/jit_kernel/tests", files = ["test_*.py"]}]

``path`` is relative to the repository root (reports name files root-relative, so they stay
unambiguous); ``files`` are file-name globs, matched in every subdirectory. A directory may not
overlap ``registered-dir`` or another entry (a file would be collected twice). Discovery checks
that each path is a directory inside the repository.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

KEY = "extra-dirs"
_ENTRY_KEYS = ("path", "files")
_EXAMPLE = f'{KEY} = [{{path = "src/pkg/tests", files = ["test_*.py"]}}]'


class ExtraDirError(ValueError):
    """An ``extra-dirs`` entry is wrong; the message names the entry and the key."""


@dataclass(frozen=True)
class ExtraDir:
    """One more collected directory (root-relative POSIX path) and the file names read there."""

    path: str
    files: tuple[str, ...]

    def holds(self, rel_path: str) -> bool:
        """True for a root-relative path below this directory."""
        return rel_path.startswith(f"{self.path}/")


def valid_name_globs(patterns: object) -> bool:
    """A non-empty list of file-name globs ending in ``.py`` (no ``/``): the form of
    ``file-patterns`` and of each ``extra-dirs`` entry's ``files``."""
    return (
        isinstance(patterns, list)
        and bool(patterns)
        and all(isinstance(p, str) and p.endswith(".py") and "/" not in p for p in patterns)
    )


def _overlap(a: str, b: str) -> bool:
    return a == "." or b == "." or a == b or a.startswith(f"{b}/") or b.startswith(f"{a}/")


def parse_extra_dirs(table: dict, where: str, registered_dir: str) -> tuple[ExtraDir, ...]:
    """The validated ``extra-dirs`` of a ``[tool.ci-runner]`` table (absent: none)."""
    raw = table.get(KEY, [])
    if not isinstance(raw, list):
        raise ExtraDirError(
            f"{where} {KEY}: must be a list of tables, e.g. {_EXAMPLE}, got {raw!r}"
        )
    dirs: list[ExtraDir] = []
    for i, entry in enumerate(raw):
        at = f"{where} {KEY}[{i}]"
        if not isinstance(entry, dict):
            raise ExtraDirError(f"{at}: must be a table, e.g. {_EXAMPLE}, got {entry!r}")
        unknown = sorted(set(entry) - set(_ENTRY_KEYS))
        missing = [key for key in _ENTRY_KEYS if key not in entry]
        if unknown or missing:
            raise ExtraDirError(
                f"{at}: needs exactly the keys {', '.join(_ENTRY_KEYS)}"
                + (f"; unknown: {', '.join(unknown)}" if unknown else "")
                + (f"; missing: {', '.join(missing)}" if missing else "")
            )
        path = entry["path"]
        pure = PurePosixPath(path) if isinstance(path, str) else None
        if (
            pure is None
            or not path.strip()
            or pure.is_absolute()
            or ".." in pure.parts
            or "\0" in path
            or any(c in path for c in "*?[")
        ):
            raise ExtraDirError(
                f"{at}: path must be a directory relative to the repository root (not "
                f"absolute, no '..', no glob characters), got {path!r}"
            )
        if not valid_name_globs(entry["files"]):
            raise ExtraDirError(
                f"{at}: files must be a non-empty list of file-name globs ending in .py, "
                f'without "/" (they match in every subdirectory), e.g. ["test_*.py"], got '
                f"{entry['files']!r}"
            )
        extra = ExtraDir(pure.as_posix(), tuple(entry["files"]))
        clash = next((f"{KEY} path {d.path!r}" for d in dirs if _overlap(d.path, extra.path)), None)
        if _overlap(registered_dir, extra.path):
            clash = f"registered-dir {registered_dir!r}"
        if clash:
            raise ExtraDirError(
                f"{at}: path {extra.path!r} overlaps the {clash}; a file would be collected twice"
            )
        dirs.append(extra)
    return tuple(dirs)
