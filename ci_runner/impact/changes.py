"""The changed files a selection starts from: ``--changed-since REF`` or ``--changed-files PATH``.

``--changed-since REF`` is ``git diff --raw REF...HEAD``: what HEAD changed since it left REF
(the merge base), committed changes only, with each path's mode, so a submodule bump (a gitlink)
and a changed symbolic link are known as such. ``--changed-files PATH`` (``-`` for stdin) lists
one path a line, relative to the root (or absolute, inside it); a listed path that does not
exist is a deletion, a listed submodule directory a submodule change. Every input is checked
here: an unknown REF, a missing list, a path outside the repository are a
:class:`ChangeInputError` naming the flag.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ci_runner.file_safety import read_regular_text, why

MODIFIED = "modified"
ADDED = "added"
DELETED = "deleted"
RENAMED = "renamed"
UNKNOWN = "unknown"  # a git status this analysis does not attribute (unmerged, broken pair)
OUTSIDE = "outside the root"  # a file of the git repository outside the catalog's root
SUBMODULE = "submodule"  # a gitlink: the commit of a submodule moved
SYMLINK = "symbolic link"  # a link whose target changed (what reads through it is not known)
_GITLINK_MODE = "160000"
_SYMLINK_MODE = "120000"
_GIT_STATUS = {"M": MODIFIED, "T": MODIFIED, "A": ADDED, "C": ADDED, "D": DELETED, "R": RENAMED}
GIT_TIMEOUT = 120


class ChangeInputError(Exception):
    """A bad ``--changed-since`` or ``--changed-files``; the message names the flag."""


@dataclass(frozen=True)
class Change:
    """One changed path (POSIX, relative to the root); ``old_path`` for a rename."""

    path: str
    status: str = MODIFIED
    old_path: str | None = None


@dataclass(frozen=True)
class ChangeSet:
    """The changed files and where they came from (``--changed-since main``)."""

    source: str
    changes: tuple[Change, ...]
    base: str | None = None  # the commit the old sides are read from (None: not known)


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except FileNotFoundError:
        raise ChangeInputError("--changed-since: git is not installed (not on PATH)") from None
    except subprocess.TimeoutExpired:
        raise ChangeInputError(
            f"--changed-since: git did not answer within {GIT_TIMEOUT}s"
        ) from None


def _git_message(result: subprocess.CompletedProcess[bytes]) -> str:
    lines = result.stderr.decode("utf-8", "replace").strip().splitlines()
    return lines[0] if lines else f"exit code {result.returncode}"


def changes_since(root: Path, ref: str) -> ChangeSet:
    """``git diff --name-status REF...HEAD`` in the repository at ``root``."""
    if not ref.strip() or ref.startswith("-"):
        raise ChangeInputError(f"--changed-since {ref!r}: expected a commit, branch or tag")
    top = _git(root, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise ChangeInputError(
            f"--changed-since {ref}: {root} is not inside a git repository ({_git_message(top)})"
        )
    for name in (ref, "HEAD"):
        known = _git(root, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}")
        if known.returncode != 0:
            raise ChangeInputError(
                f"--changed-since {ref}: {name!r} is not a commit of this repository "
                "(fetch it first, e.g. git fetch origin main, with enough history for the "
                "merge base)"
            )
    diff = _git(
        root, "diff", "--raw", "-z", "-M", "--no-abbrev", "--no-ext-diff", f"{ref}...HEAD", "--"
    )
    if diff.returncode != 0:
        raise ChangeInputError(f"--changed-since {ref}: git diff failed: {_git_message(diff)}")
    git_top = Path(os.fsdecode(top.stdout.strip())).resolve()
    prefix = _prefix_within(git_top, root.resolve())
    merge_base = _git(root, "merge-base", ref, "HEAD")
    base = merge_base.stdout.decode().strip() if merge_base.returncode == 0 else None
    return ChangeSet(
        f"--changed-since {ref}", tuple(parse_raw_diff(diff.stdout, prefix)), base or None
    )


def file_at(root: Path, commit: str, path: str) -> bytes | None:
    """``path`` (relative to ``root``) at ``commit`` (``git show``), or None."""
    try:
        result = subprocess.run(
            ["git", "-C", str(root), "show", f"{commit}:./{path}"],
            capture_output=True, timeout=GIT_TIMEOUT, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout if result.returncode == 0 else None


def _prefix_within(top: Path, root: Path) -> str:
    """``root`` relative to the git top level, as a POSIX prefix (``""`` when they are equal)."""
    try:
        relative = root.relative_to(top).as_posix()
    except ValueError:
        return ""
    return "" if relative == "." else relative + "/"


def _strip(path: str, prefix: str) -> str | None:
    """A git path made relative to the root; None when it lies outside it."""
    if not prefix:
        return path
    return path[len(prefix) :] if path.startswith(prefix) else None


def parse_raw_diff(output: bytes, prefix: str = "") -> list[Change]:
    """``git diff --raw -z`` (or ``diff-tree``): ``:MODE MODE SHA SHA STATUS\0path\0``, with
    ``\0old\0new\0`` for a rename or copy; ``prefix``: the root within the git top level."""
    fields = [os.fsdecode(field) for field in output.split(b"\0")]
    changes: list[Change] = []
    index = 0
    while index < len(fields) and fields[index].startswith(":"):
        meta = fields[index][1:].split()
        modes, code = meta[:2], meta[-1][:1] if meta else ""
        status = _GIT_STATUS.get(code, UNKNOWN)
        if code in ("R", "C"):
            old, new = fields[index + 1], fields[index + 2]
            index += 3
        else:
            old, new = None, fields[index + 1]
            index += 2
        path = _strip(new, prefix)
        old_path = _strip(old, prefix) if old is not None else None
        if path is None or (old is not None and old_path is None):
            changes.append(Change(new, OUTSIDE, old))  # git's path: it has none under the root
        elif _GITLINK_MODE in modes:
            changes.append(Change(path, SUBMODULE))
        elif _SYMLINK_MODE in modes:
            changes.append(Change(path, SYMLINK))
        elif status == RENAMED:
            changes.append(Change(path, RENAMED, old_path))
        else:
            changes.append(Change(path, status))
    return changes


def changes_from_list(root: Path, source: str) -> ChangeSet:
    """``--changed-files PATH`` (``-``: stdin): one path a line, blank lines ignored."""
    flag = "--changed-files"
    if source == "-":
        text = sys.stdin.read()
        where = f"{flag} -"
    else:
        try:
            text = read_regular_text(Path(source))
        except FileNotFoundError:
            raise ChangeInputError(f"{flag} {source}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ChangeInputError(f"{flag} {source}: cannot read: {why(exc)}") from None
        where = f"{flag} {source}"
    real_root = root.resolve()
    submodules = submodule_paths(real_root)
    changes: dict[str, Change] = {}
    for number, line in enumerate(text.split("\n"), start=1):  # not splitlines: U+2028 is a name
        entry = line.strip()
        if not entry:
            continue
        path = _inside(real_root, entry)
        if path is None:
            raise ChangeInputError(
                f"{where} line {number}: {entry!r} is outside the repository {real_root}"
            )
        full = real_root / path
        if full.is_dir() and not full.is_symlink():
            if path not in submodules and not (full / ".git").exists():
                raise ChangeInputError(
                    f"{where} line {number}: {entry!r} is a directory (not a submodule of "
                    ".gitmodules); list the changed files"
                )
            status = SUBMODULE
        elif full.is_symlink():
            status = SYMLINK
        else:
            status = MODIFIED if full.exists() else DELETED
        changes.setdefault(path, Change(path, status))
    return ChangeSet(where, tuple(changes.values()))


def _inside(root: Path, entry: str) -> str | None:
    """``entry`` (relative to the root, or absolute) as a POSIX path relative to ``root``, without
    following the last component (a deleted file has none); None when it leads outside."""
    raw = Path(entry)
    candidate = raw if raw.is_absolute() else root / raw
    if candidate.name in ("", ".", ".."):
        return None
    parent = candidate.parent
    parent = parent.resolve() if parent.exists() else Path(os.path.normpath(parent))
    full = parent / candidate.name
    try:
        relative = PurePosixPath(full.relative_to(root).as_posix())
    except ValueError:
        return None
    return None if ".." in relative.parts else relative.as_posix()


_SUBMODULE_PATH = re.compile(r"^\s*path\s*=\s*(.+?)\s*$", re.MULTILINE)


def submodule_paths(root: Path) -> set[str]:
    """The ``path =`` entries of ``.gitmodules`` at the root (POSIX, root-relative)."""
    try:
        text = read_regular_text(root / ".gitmodules")
    except (OSError, UnicodeDecodeError):
        return set()
    return {PurePosixPath(match).as_posix() for match in _SUBMODULE_PATH.findall(text)}
