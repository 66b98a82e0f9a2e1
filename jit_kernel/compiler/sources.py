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

Directives are read as the preprocessor reads them: backslash-continued lines are joined and
comments removed first (string and character literals kept), so ``#include /* why */ "dep.h"``
and an include split over two lines are followed like any other.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_INCLUDE_RE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.MULTILINE)
_SPLICE_RE = re.compile(rb"\\[ \t]*\r?\n")  # a backslash ending a line joins it to the next
# What the preprocessor treats as one token before it looks for directives: literals (kept as
# they are, so "//" inside one is no comment) and comments (each becomes one space).
_LEXEME_RE = re.compile(
    rb'R"(?P<delim>[^()\\\s"]{0,16})\((?s:.*?)\)(?P=delim)"'  # raw string literal
    rb'|"(?:\\.|[^"\\\n])*"'  # string literal, or a "header-name"
    rb"|'(?:\\.|[^'\\\n])*'"  # character literal
    rb"|/\*(?s:.*?)\*/"  # block comment
    rb"|//[^\n]*"  # line comment
)

_scan_memo: dict[Path, tuple[int, int, str, tuple[tuple[bytes, str], ...]]] = {}
_scan_lock = threading.Lock()


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


def directives_text(data: bytes) -> bytes:
    """``data`` with continued lines joined and comments replaced by a space (the text the
    preprocessor finds its directives in)."""
    spliced = _SPLICE_RE.sub(b"", data)
    return _LEXEME_RE.sub(lambda m: b" " if m.group(0)[:1] == b"/" else m.group(0), spliced)


def includes_of(data: bytes) -> tuple[tuple[bytes, str], ...]:
    """``(quote, target)`` of every ``#include`` directive in a source file's bytes."""
    return tuple(
        (match.group(1), match.group(2).decode("utf-8", "replace").strip())
        for match in _INCLUDE_RE.finditer(directives_text(data))
    )


def _scan(path: Path) -> tuple[str, tuple[tuple[bytes, str], ...]]:
    """(sha256, includes) of a file, memoized per (path, mtime, size) within the process."""
    stat = path.stat()
    with _scan_lock:
        memo = _scan_memo.get(path)
    if memo is not None and memo[0] == stat.st_mtime_ns and memo[1] == stat.st_size:
        return memo[2], memo[3]
    data = path.read_bytes()
    digest, includes = hashlib.sha256(data).hexdigest(), includes_of(data)
    with _scan_lock:
        _scan_memo[path] = (stat.st_mtime_ns, stat.st_size, digest, includes)
    return digest, includes


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes, memoized per (path, mtime, size) within the process."""
    return _scan(path)[0]


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
        seen[path], includes = _scan(path)
        for quote, target in includes:
            resolved = _resolve(quote, target, path.parent, include_dirs)
            if resolved is not None and resolved not in seen:
                pending.append(resolved)
    return sorted((label_for(path, roots), digest) for path, digest in seen.items())
