"""Where a repository keeps its catalog, and how messages name it.

Two places, both at the repository root:

* ``pyproject.toml``, table ``[tool.ci-runner]`` (and its sub-tables ``[tool.ci-runner.policy]``,
  ...), where a Python project keeps its tools' settings;
* ``ci-runner.toml``, a file of its own whose top level is the catalog (``[policy]``, ...), for
  a repository without a root ``pyproject.toml`` (SGLang keeps its packaging in
  ``python/pyproject.toml``: a root one would change how pip and IDEs see the repository).

A root with both is an error naming both: one of them would be silently ignored.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from ci_runner.file_safety import NotRegularFileError, read_regular_text, why

PYPROJECT = "pyproject.toml"
OWN_FILE = "ci-runner.toml"
TABLE = "tool.ci-runner"


class CatalogFileError(Exception):
    """The catalog file cannot be read; the message names the file and why."""


@dataclass(frozen=True)
class CatalogLocation:
    """One catalog file: its path, and whether the catalog is its top level (``ci-runner.toml``)
    or its ``[tool.ci-runner]`` table."""

    path: Path
    own_file: bool

    @staticmethod
    def for_file(path: Path) -> CatalogLocation:
        """``ci-runner.toml`` (by name) holds the catalog at its top level; any other file in
        ``[tool.ci-runner]``."""
        return CatalogLocation(path, path.name == OWN_FILE)

    @property
    def keys(self) -> tuple[str, ...]:
        """The keys leading from the file's top level to the catalog table."""
        return () if self.own_file else ("tool", "ci-runner")

    def header(self, table: str = "", array: bool = False) -> str:
        """``[tool.ci-runner.policy]`` / ``[policy]``; ``[[...suites]]`` with ``array``."""
        name = ".".join(part for part in (("" if self.own_file else TABLE), table) if part)
        return f"[[{name}]]" if array else f"[{name}]"

    def where(self, table: str = "") -> str:
        """How messages name the catalog (or one of its tables): ``pyproject.toml
        [tool.ci-runner]``, ``ci-runner.toml [policy]``."""
        if self.own_file:
            return f"{self.path.name} {self.header(table)}" if table else self.path.name
        return f"{self.path.name} {self.header(table)}"

    def table_of(self, data: dict) -> dict | None:
        """The catalog table of a parsed file, or None when it has none."""
        for key in self.keys:
            data = data.get(key) if isinstance(data, dict) else None
        return data if isinstance(data, dict) else None


def read_toml(path: Path) -> dict:
    """A TOML file as data; :class:`CatalogFileError` naming the file and the reason."""
    try:
        return tomllib.loads(read_regular_text(path))
    except NotRegularFileError as exc:
        raise CatalogFileError(f"{exc}; the suite catalog must be a regular file") from None
    except FileNotFoundError:
        raise CatalogFileError(f"{path}: not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise CatalogFileError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:
        raise CatalogFileError(f"{path}: invalid TOML: nested too deeply to read") from None
    except UnicodeDecodeError as exc:
        raise CatalogFileError(f"{path}: not UTF-8 text: {exc.reason}") from None
    except OSError as exc:
        raise CatalogFileError(f"{path}: cannot read: {why(exc)}") from None


def find_catalog(root: Path) -> tuple[CatalogLocation, dict] | None:
    """The catalog of ``root`` and its table, or None when there is none; an unreadable file, or
    a catalog in both places, raises :class:`CatalogFileError`."""
    found: list[tuple[CatalogLocation, dict]] = []
    own = root / OWN_FILE
    if own.exists() or own.is_symlink():
        location = CatalogLocation(own, True)
        found.append((location, read_toml(own)))
    pyproject = root / PYPROJECT
    if pyproject.exists() or pyproject.is_symlink():
        location = CatalogLocation(pyproject, False)
        table = location.table_of(read_toml(pyproject))
        if table is not None:
            found.append((location, table))
    if len(found) > 1:
        raise CatalogFileError(
            f"{root}: both {OWN_FILE} and {PYPROJECT} [{TABLE}] hold a suite catalog; keep one "
            "(the runner would silently ignore the other)"
        )
    return found[0] if found else None


def has_catalog(directory: Path) -> bool:
    """True when ``directory`` holds a readable catalog (for walking up to the root)."""
    try:
        return find_catalog(directory) is not None
    except CatalogFileError:
        return False
