"""Which files under a directory are read, and a problem for every path that is not read but
might hold a registered file, so none is dropped silently.

The rules (documented in docs/registering-and-suites.md, "What discovery reads"):

* Only **regular files** are read. A name matching the patterns that is a FIFO, a socket, a
  device or a directory is a problem, and it is never opened (a FIFO would block discovery).
* **Hidden directories** (``.name``) and ``__pycache__`` are not entered. One that holds a
  matching file is a problem naming it.
* **Symbolic links are never followed.** A link whose target lies inside the walked directory is
  skipped: the target is read under its own path. A link out of it is a problem when its name
  matches, or when it leads to a directory holding a matching file.
* A directory that cannot be listed, and a matching file whose path is not valid UTF-8 (it
  could not be named in a report), are problems.

The runner's discovery, the registration lints and ``init``'s survey all walk with
:func:`walk_files`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ci_runner.file_safety import kind_of, why
from ci_runner.model import Problem
from ci_runner.safe_text import printable

SKIPPED_DIRECTORY = "__pycache__"


@dataclass
class Walk:
    """The files to read (root-relative POSIX paths, sorted) and the paths that are not read."""

    files: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def is_hidden_directory(name: str) -> bool:
    return name.startswith(".") or name == SKIPPED_DIRECTORY


def walk_files(root: Path, base: Path, matches: Callable[[str], bool], patterns: str) -> Walk:
    """Every regular file under ``base`` whose name ``matches``, by the rules above.

    ``patterns`` names the matching files in messages (``test_*.py/bench_*.py``).
    """
    walker = _Walker(root, base, matches, patterns)
    walker.run()
    walker.walk.files.sort()
    walker.walk.problems.sort(key=lambda p: (p.path, p.message))
    return walker.walk


class _Walker:
    def __init__(
        self, root: Path, base: Path, matches: Callable[[str], bool], patterns: str
    ) -> None:
        self.root = str(root)
        self.root_prefix = os.path.join(self.root, "")
        self.base = str(base)
        self.real_base = os.path.realpath(base)
        self.matches = matches
        self.patterns = patterns
        self.walk = Walk()

    def _relative(self, path: str) -> str:
        if path.startswith(self.root_prefix):  # the usual case, without relpath's normalizing
            return path[len(self.root_prefix) :].replace(os.sep, "/")
        return Path(os.path.relpath(path, self.root)).as_posix()

    def _problem(self, path: str, message: str) -> None:
        self.walk.problems.append(Problem(printable(self._relative(path)), 1, 1, message))

    def run(self) -> None:
        stack = [self.base]
        while stack:
            directory = stack.pop()
            try:
                with os.scandir(directory) as entries:
                    listed = sorted(entries, key=lambda entry: entry.name)
            except OSError as exc:
                self._problem(
                    directory,
                    f"cannot list this directory ({why(exc)}): the files in it are not collected",
                )
                continue
            subdirectories: list[str] = []
            for entry in listed:
                try:
                    self._entry(entry, subdirectories)
                except OSError as exc:
                    self._problem(entry.path, f"cannot inspect it ({why(exc)})")
            stack.extend(reversed(subdirectories))

    def _entry(self, entry: os.DirEntry[str], subdirectories: list[str]) -> None:
        name = entry.name
        if entry.is_symlink():
            self._link(entry)
        elif entry.is_dir(follow_symlinks=False):
            if not is_hidden_directory(name):
                subdirectories.append(entry.path)
            elif example := self._first_match(entry.path):
                self._problem(
                    entry.path,
                    f"hidden directory holding files matching {self.patterns} (first: "
                    f"{printable(example)}): discovery does not enter hidden directories or "
                    f"{SKIPPED_DIRECTORY}; move the files out, or rename the directory",
                )
        elif not self.matches(name):
            return
        elif not entry.is_file(follow_symlinks=False):
            kind = kind_of(entry.stat(follow_symlinks=False).st_mode)
            self._problem(
                entry.path,
                f"is {kind}, not a regular file: discovery reads only regular files (and never "
                f"opens this one); remove it, or rename it so that it does not match "
                f"{self.patterns}",
            )
        elif not _is_utf8(entry.path):
            self._problem(
                entry.path,
                "the path is not valid UTF-8, so no report could name the file; rename it",
            )
        else:
            self.walk.files.append(self._relative(entry.path))

    def _link(self, entry: os.DirEntry[str]) -> None:
        target = os.path.realpath(entry.path)
        inside = target == self.real_base or target.startswith(self.real_base + os.sep)
        if inside and os.path.exists(target):
            return  # the target is walked (or skipped) where it lives
        if os.path.isdir(target):
            example = self._first_match(target)
            if example:
                self._problem(
                    entry.path,
                    f"symbolic link to the directory {printable(target)}, which holds files "
                    f"matching {self.patterns} (first: {printable(example)}): discovery does not "
                    "follow links out of the registered directory; move the files here",
                )
        elif self.matches(entry.name):
            if not os.path.exists(target):
                message = "is a dangling symbolic link (its target does not exist); remove it"
            else:
                message = (
                    f"is a symbolic link to {printable(target)}, outside the registered "
                    "directory: discovery does not follow links out of it; move the file here"
                )
            self._problem(entry.path, message)

    def _first_match(self, directory: str) -> str | None:
        """A path (relative to ``directory``) of a matching name below it; links not followed."""
        for dirpath, dirnames, filenames in os.walk(directory):
            dirnames.sort()
            for name in sorted(filenames):
                if self.matches(name):
                    return os.path.relpath(os.path.join(dirpath, name), directory)
        return None


def _is_utf8(path: str) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
