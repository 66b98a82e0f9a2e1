"""Which of our source files a JIT module reads, identified by content rather than location.

A module's cache key must change when any header it includes changes, and must not change when
the checkout moves. :func:`source_closure` follows ``#include "..."`` (next to the including file,
then the include directories) and ``#include <...>`` (the include directories) through every
file it can resolve inside our trees (``jit_kernel/include``, ``jit_kernel/csrc``, the
``extra_include_paths`` and the directories of absolute source paths). Each file is recorded as a
*label* (a root name plus the path relative to it) and the sha256 of its bytes. Includes that
resolve nowhere in our trees (the C++ library, CUDA, tvm-ffi, dlpack) are external: their
versions enter the key through the compiler and tvm-ffi versions instead. Includes inside
``#if`` blocks are followed too, which can only add files to the key, never miss one.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_INCLUDE_RE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.MULTILINE)

_digest_memo: dict[Path, tuple[int, int, str]] = {}
_digest_lock = threading.Lock()


@dataclass(frozen=True)
class Root:
    """A directory whose files are identified as ``<name>/<relative path>``."""

    name: str
    path: Path

    def label_of(self, file: Path) -> str | None:
        """``file``'s label if it lies under this root, else ``None``."""
        try:
            return f"{self.name}/{file.relative_to(self.path).as_posix()}"
        except ValueError:
            return None


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes, memoized per (path, mtime, size) within the process."""
    stat = path.stat()
    with _digest_lock:
        memo = _digest_memo.get(path)
    if memo is not None and memo[0] == stat.st_mtime_ns and memo[1] == stat.st_size:
        return memo[2]
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with _digest_lock:
        _digest_memo[path] = (stat.st_mtime_ns, stat.st_size, digest)
    return digest


def label_for(file: Path, roots: Sequence[Root]) -> str:
    """The location-independent name of ``file``: relative to the first root holding it."""
    for root in roots:
        label = root.label_of(file)
        if label is not None:
            return label
    return f"other/{file.name}"


def _resolve(
    quote: bytes, target: str, including_dir: Path, include_dirs: Sequence[Path]
) -> Path | None:
    search = [including_dir, *include_dirs] if quote == b'"' else list(include_dirs)
    for directory in search:
        candidate = directory / target
        if candidate.is_file():
            return candidate.resolve()
    return None


def source_closure(
    sources: Sequence[Path], include_dirs: Sequence[Path], roots: Sequence[Root]
) -> list[tuple[str, str]]:
    """Sorted ``(label, sha256)`` of ``sources`` and every file they include from our trees."""
    seen: dict[Path, str] = {}
    pending = [path.resolve() for path in sources]
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen[path] = file_digest(path)
        for match in _INCLUDE_RE.finditer(path.read_bytes()):
            target = match.group(2).decode("utf-8", "replace").strip()
            resolved = _resolve(match.group(1), target, path.parent, include_dirs)
            if resolved is not None and resolved not in seen:
                pending.append(resolved)
    return sorted((label_for(path, roots), digest) for path, digest in seen.items())
