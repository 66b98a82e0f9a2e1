"""What a JIT module was built from: every file its compilers read, checked before each load.

Each compile step writes its compiler's dependency file (``-MD -MF``), which ninja reads; after
the build :func:`~jit_kernel.compiler.build.compiler_inputs` lists every file nvcc and ``$CXX``
read, however it was spelled or reached (a macro include, a BOM, a digraph: the compiler's own
answer, as ccache's direct mode records it). They are recorded with their sha256 beside the
library (:mod:`.cache`), and a cached library is loaded only when every *checked* dependency
still hashes the same; otherwise it is rebuilt.

* **Checked** on every load: every file outside the toolchain (our headers and kernels, extra
  include paths, ``/usr/local/include``, anything an ``-I`` flag reached).
* **Recorded only**: files under the CUDA toolkit, tvm-ffi's include directories and the host
  compiler's own include directories (except ``/usr/local``), whose versions the key already
  holds (``nvcc --version``, ``$CXX --version``, ``tvm_ffi.__version__``). Checking them would
  cost a stat per file on every load (about 400 for a CUDA module) for nothing the key lacks.
* **Fast**: a dependency whose size, mtime, ctime and inode are those recorded is not read
  again. The stat is recorded only when both times are older than the build's start (read on
  the filesystem's clock, from a file the build writes first), so a change during the build or
  within one timestamp tick cannot hide behind it; such a file is hashed on every load instead.
  A file that changed between the build's start and the end of the hashing is recorded without
  a digest (the compiler may have read other bytes), unless its content is what the key hashed
  before the build: the next load rebuilds it. A file dated after all that (a clock ahead of
  this one, on a network filesystem) keeps its digest and is hashed on every load.
* **Relocatable**: a file under one of the module's roots (``jit_kernel/include``, ``csrc``,
  extra include paths, source directories) is recorded by its label, so a moved checkout or a
  shared cache still hits; any other by its real path.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import tvm_ffi.libinfo

from cpp_includes.closure import FRESH_NS
from jit_kernel.compiler.sources import Root
from jit_kernel.compiler.toolchain import system_include_dirs

#: Site-installed libraries: never part of the toolchain, even where a compiler searches them.
LOCAL_PREFIX = "/usr/local"
CLOCK_FILE = ".clock"

_digests: dict[str, tuple[list[int], str]] = {}
_digests_lock = threading.Lock()


def stat_key(stat: os.stat_result) -> list[int]:
    """What a stat shortcut compares: size, mtime, ctime, inode."""
    return [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino]


def file_sha256(path: str, stat: os.stat_result) -> str:
    """sha256 of the file at ``path`` (whose stat is ``stat``), memoized per stat unless fresh."""
    key = stat_key(stat)
    with _digests_lock:
        memo = _digests.get(path)
    if memo is not None and memo[0] == key:
        return memo[1]
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    text = digest.hexdigest()
    if max(stat.st_mtime_ns, stat.st_ctime_ns) < time.time_ns() - FRESH_NS:
        with _digests_lock:
            _digests[path] = (key, text)
    return text


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def toolchain_dirs(cuda_root: Path | None, cxx: str) -> list[str]:
    """The directories whose files the key covers by version (real paths)."""
    found = [
        tvm_ffi.libinfo.find_include_path(),
        tvm_ffi.libinfo.find_dlpack_include_path(),
        *([str(cuda_root)] if cuda_root is not None else []),
    ]
    found = [os.path.realpath(directory) for directory in found]
    return found + [d for d in system_include_dirs(cxx) if not _under(d, LOCAL_PREFIX)]


def filesystem_now(staging: Path) -> int:
    """Now on the filesystem's clock: the mtime of a marker written in ``staging``."""
    marker = staging / CLOCK_FILE
    marker.write_bytes(b"")
    return marker.stat().st_mtime_ns


def _label(path: str, roots: Sequence[Root]) -> str | None:
    for root in roots:
        label = root.label_of(Path(path))
        if label is not None:
            return label
    return None


def _hashed(path: str) -> tuple[str, os.stat_result] | None:
    """(sha256, stat) of a file that did not change while it was read; None otherwise."""
    try:
        before = os.stat(path)
        digest = file_sha256(path, before)
        after = os.stat(path)
    except OSError:
        return None
    return (digest, after) if stat_key(before) == stat_key(after) else None


def record_dependencies(
    inputs: Iterable[str],
    staging: Path,
    roots: Sequence[Root],
    toolchain: Sequence[str],
    keyed: dict[str, str],
    started_ns: int,
) -> tuple[list[list[Any]], dict[str, str | None]]:
    """(checked dependencies, toolchain files with their sha256) of a build in ``staging``.

    ``inputs``: the files the compilers reported (relative to ``staging`` or absolute);
    ``keyed``: ``{label: sha256}`` the cache key hashed before the build; ``started_ns``: the
    build's start on the filesystem's clock (:func:`filesystem_now`). Files in ``staging`` (the
    generated translation units, whose text the key holds) are left out. A checked dependency
    is ``[label or real path, sha256 or None, stat key or None]`` (see the module docstring).
    """
    staging_real = os.path.realpath(staging)
    read: list[tuple[str, str, tuple[str, os.stat_result] | None]] = []
    versioned: dict[str, str | None] = {}
    for path in dict.fromkeys(os.path.realpath(staging / name) for name in inputs):
        if _under(path, staging_real):
            continue
        label = _label(path, roots)
        if label is None and any(_under(path, directory) for directory in toolchain):
            hashed = _hashed(path)
            versioned[path] = hashed[0] if hashed is not None else None
        else:
            read.append((label or path, path, _hashed(path)))
    hashed_ns = filesystem_now(staging)
    checked: list[list[Any]] = []
    for name, _, hashed in read:
        if hashed is None:  # gone, or written while it was read: the next load rebuilds
            checked.append([name, None, None])
            continue
        digest, stat = hashed
        newest = max(stat.st_mtime_ns, stat.st_ctime_ns)
        if newest < started_ns:
            checked.append([name, digest, stat_key(stat)])
        elif newest > hashed_ns:  # a clock ahead of this one (a network filesystem): no stat
            checked.append([name, digest, None])
        else:  # changed since the build started: trust the bytes only if the key hashed them
            checked.append([name, digest if digest == keyed.get(name) else None, None])
    return checked, versioned


def _path_of(name: str, roots: dict[str, Path]) -> str | None:
    """The current real path of a recorded dependency (None: its root is not this build's)."""
    if os.path.isabs(name):
        return name
    root, _, rest = name.partition("/")
    return str(roots[root] / rest) if root in roots else None


def dependency_problem(
    dependencies: Any, roots: Sequence[Root], absolute: bool = True
) -> str | None:
    """Why a library built from ``dependencies`` (its record's list) is stale, or None.

    ``absolute=False`` checks only the files under the module's roots (a machine that cannot
    rebuild need not have the build machine's other files).
    """
    by_name = {root.name: root.path for root in roots}
    try:
        for name, digest, stat in dependencies:
            if not absolute and os.path.isabs(name):
                continue
            path = _path_of(name, by_name)
            if path is None:
                return f"it was built from {name}, which no root of this build holds"
            if digest is None:
                return f"{path} changed while the module was being compiled"
            try:
                current = os.stat(path)
            except OSError:
                return f"{path}, which it was built from, is gone"
            if stat is not None and stat_key(current) == stat:
                continue
            if file_sha256(path, current) != digest:
                return f"{path} changed since it was built"
    except (TypeError, ValueError):
        return "its dependency record is damaged"
    return None


def dependency_digests(
    dependencies: Any, toolchain: dict[str, Any], roots: Sequence[Root]
) -> dict[str, str | None]:
    """``{real path: sha256}`` of every recorded dependency (``None``: changed while compiled)."""
    by_name = {root.name: root.path for root in roots}
    found: dict[str, str | None] = {}
    for name, digest, _ in dependencies:
        path = _path_of(name, by_name)
        if path is not None:
            found[path] = digest
    found.update(toolchain)
    return dict(sorted(found.items()))
