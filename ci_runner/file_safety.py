"""Files named by input (a flag, a catalog key, a directory walk): read only regular files, write
reports only where a regular file (or nothing) is.

* Reading never opens a FIFO, a socket or a device: the kind is checked first (a FIFO would block
  forever), and again on the open descriptor.
* A report is written by atomic replacement (a temporary file, then ``os.replace``), so a reader
  never sees half a file. A destination that is a symbolic link or not a regular file is refused
  up front (:func:`destination_problem`): replacing it would turn a link, or ``/dev/null``, into
  a regular file.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

NEW_FILE_MODE = 0o644  # what a new report gets (an existing one keeps its mode)
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class NotRegularFileError(OSError):
    """A path that had to be a regular file is something else; the message names it."""

    def __init__(self, path: Path | str, kind: str) -> None:
        self.reason = f"is {kind}, not a regular file"
        super().__init__(f"{path}: {self.reason}")


def why(exc: OSError | ValueError) -> str:
    """What went wrong, without the path: ``Permission denied``, ``is a FIFO (named pipe), not
    a regular file``, ``invalid start byte`` (a UnicodeDecodeError)."""
    return getattr(exc, "reason", None) or getattr(exc, "strerror", None) or str(exc)


def kind_of(mode: int) -> str:
    """``"a FIFO (named pipe)"``, ``"a directory"``, ...: what a ``st_mode`` is, in words."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "a special file"


def open_regular(path: Path | str, follow_links: bool = True) -> BinaryIO:
    """``path`` opened for reading in binary mode; it must be a regular file (with
    ``follow_links=False``, not a link either). Raises :class:`NotRegularFileError` before
    opening anything else, and if the path was swapped for something else meanwhile."""
    return os.fdopen(_open_regular_fd(path, follow_links)[0], "rb")


def _open_regular_fd(path: Path | str, follow_links: bool) -> tuple[int, int]:
    """:func:`open_regular`'s checks; the open descriptor and the file's size."""
    mode = (os.stat if follow_links else os.lstat)(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegularFileError(path, kind_of(mode))
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode):
        os.close(fd)
        raise NotRegularFileError(path, kind_of(status.st_mode))
    return fd, status.st_size


def read_regular(path: Path | str, follow_links: bool = True, limit: int | None = None) -> bytes:
    """The bytes of ``path`` (the first ``limit`` only, when given): see :func:`open_regular`.
    Read with ``os.read`` (no buffered file object: discovery reads thousands of files)."""
    fd, size = _open_regular_fd(path, follow_links)
    try:
        chunks: list[bytes] = []
        left = -1 if limit is None else limit
        while left != 0:
            chunk = os.read(fd, max(size + 1, 1 << 16) if left < 0 else min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left = left - len(chunk) if left > 0 else left
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_regular_text(path: Path | str, follow_links: bool = True) -> str:
    """:func:`read_regular` decoded as UTF-8 (raises ``UnicodeDecodeError``)."""
    return read_regular(path, follow_links).decode("utf-8")


def destination_problem(path: Path | str) -> str | None:
    """Why a report must not be written at ``path`` (``None``: absent or a regular file)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return f"cannot be created: {Path(path).parent} is not a directory"
    except OSError as exc:
        return f"cannot be inspected: {why(exc)}"
    if stat.S_ISLNK(mode):
        return (
            "is a symbolic link; the file is written by replacing it, which would replace the "
            f"link: pass the real path ({os.path.realpath(path)}) instead"
        )
    if not stat.S_ISREG(mode):
        return f"is {kind_of(mode)}, not a regular file; only a regular file is written there"
    return None


def content_problem(path: Path | str, start: bytes, kind: str) -> str | None:
    """Why the existing file at ``path`` must not be replaced by a new ``kind`` file: it does not
    start like one (``start``, after whitespace), so a typo never replaces ``pyproject.toml``
    or a test file. ``None``: absent, empty, or it looks like one."""
    try:
        head = read_regular(path, limit=4096).lstrip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot read it: {why(exc)}"
    if head and not head.startswith(start):
        return (
            f"exists and is not {kind} (it starts with {head[:20]!r}); it would be replaced: "
            "pass another path, or delete the file"
        )
    return None


def same_file_groups(paths: Iterable[tuple[str, Path | str]]) -> list[list[str]]:
    """Labels of the given ``(label, path)`` pairs that name one file: the same device and inode
    when it exists (a hard link too), else the same real path."""
    by_file: dict[object, list[str]] = {}
    for label, path in paths:
        try:
            info = os.stat(path)
            key: object = (info.st_dev, info.st_ino)
        except OSError:
            key = os.path.realpath(path)
        by_file.setdefault(key, []).append(label)
    return [labels for labels in by_file.values() if len(labels) > 1]


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (temporary file in the same directory, then
    ``os.replace``); a new file gets mode 0644, an existing one keeps its mode. A path that is
    not a regular file (a link, a FIFO) is never replaced: :class:`NotRegularFileError`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        mode = NEW_FILE_MODE
    else:
        if not stat.S_ISREG(info.st_mode):  # became a link or a FIFO since it was checked
            raise NotRegularFileError(path, kind_of(info.st_mode))
        mode = stat.S_IMODE(info.st_mode)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            with contextlib.suppress(OSError):
                os.fchmod(handle.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def append_regular(path: Path | str, text: str) -> None:
    """Append ``text`` (UTF-8) to ``path``, created if absent; it must not be a link, a FIFO or
    another non-regular file (raises :class:`NotRegularFileError`)."""
    mode = os.lstat(path).st_mode if os.path.lexists(path) else stat.S_IFREG
    if not stat.S_ISREG(mode):
        raise NotRegularFileError(path, kind_of(mode))
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), NEW_FILE_MODE)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(path, kind_of(mode))
        data = text.encode("utf-8")
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)
