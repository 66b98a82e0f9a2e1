"""Following ``#include`` directives from a set of sources through include directories.

``#include "x"`` is looked up next to the including file, then in the include directories;
``#include <x>`` only in the include directories (the order of ``-I``). An include that resolves
nowhere there is external (the C++ library, CUDA, tvm-ffi) and is not followed. Files are read
once per process for each (path, mtime, size): the digest and the includes are kept.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path

from cpp_includes.directives import includes_of

_scan_memo: dict[Path, tuple[int, int, str, tuple[tuple[bytes, str], ...]]] = {}
_scan_lock = threading.Lock()


def scan_file(path: Path) -> tuple[str, tuple[tuple[bytes, str], ...]]:
    """(sha256 hex digest, includes) of the file at ``path``, memoized per (path, mtime, size)."""
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


def resolve_include(
    quote: bytes, target: str, including_dir: Path, include_dirs: Sequence[Path]
) -> Path | None:
    """The file an ``#include`` names (resolved to a real path), or None when it is external."""
    search = [including_dir, *include_dirs] if quote == b'"' else list(include_dirs)
    for directory in search:
        candidate = directory / target
        if candidate.is_file():
            return candidate.resolve()
    return None


def include_closure(
    sources: Sequence[Path],
    include_dirs: Sequence[Path],
    memo: dict[Path, tuple[Path, ...]] | None = None,
) -> dict[Path, Path | None]:
    """Every file ``sources`` include, transitively, with ``sources`` themselves: each real path
    mapped to the file that first included it (``None`` for a source). ``memo`` lets a caller
    computing many closures over one unchanging tree keep each file's resolved includes."""
    seen: dict[Path, Path | None] = {}
    pending: list[tuple[Path, Path | None]] = [(path.resolve(), None) for path in sources]
    while pending:
        path, parent = pending.pop()
        if path in seen:
            continue
        seen[path] = parent
        found = memo.get(path) if memo is not None else None
        if found is None:
            found = tuple(
                resolved
                for quote, target in scan_file(path)[1]
                if (resolved := resolve_include(quote, target, path.parent, include_dirs))
            )
            if memo is not None:
                memo[path] = found
        pending += [(include, path) for include in found if include not in seen]
    return seen


def include_chain(closure: dict[Path, Path | None], file: Path) -> list[Path]:
    """The include path from a source to ``file`` in a closure: ``[source, ..., file]``."""
    chain = [file]
    while (parent := closure.get(chain[-1])) is not None:
        chain.append(parent)
    return chain[::-1]
