"""Where built modules live: ``$JIT_KERNEL_CACHE_DIR``, default ``~/.cache/jit_kernel``.

``<root>/<module>_<key16>/<module>.so`` holds a build, and ``<module>.so.json`` its size, digest
and checked dependencies: a library is loaded only when it matches (:func:`library_problem`), so
a truncated or foreign file is rebuilt, never mapped. ``<root>/by-source/<module>_<source key>``
records the last build of the same sources whatever the compilers, so a machine without a
toolchain can load a module that ``python -m jit_kernel precompile`` built elsewhere. Builders of
one module take ``<root>/.locks/<module>_<key16>.lock`` (:func:`build_lock`), so they wait for
one build. With no cache directory at all (no home), the root is a private directory of the
process (:func:`private_root`).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cpp_includes.closure import FRESH_NS
from jit_kernel.compiler.toolchain import JitToolchainError, shell_safe

if TYPE_CHECKING:
    from jit_kernel.compiler.plan import ModulePlan

logger = logging.getLogger("jit_kernel")

CACHE_DIR_ENV = "JIT_KERNEL_CACHE_DIR"


def cache_root() -> Path:
    """The cache root: ``$JIT_KERNEL_CACHE_DIR``, else ``$XDG_CACHE_HOME/jit_kernel`` (an
    absolute path, as the XDG spec requires), else ``~/.cache/jit_kernel``. When none can be
    named (the variables unset and no home directory, as for a uid without a passwd entry, or a
    relative ``HOME``), a private directory of this process (:func:`private_root`)."""
    value = os.environ.get(CACHE_DIR_ENV)
    xdg = os.environ.get("XDG_CACHE_HOME")
    try:
        if value:
            return Path(value).expanduser()
        if xdg and Path(xdg).expanduser().is_absolute():
            return Path(xdg).expanduser() / "jit_kernel"
        home = Path.home()  # HOME="" reads as "/": no home either
        if not home.is_absolute() or os.environ.get("HOME") == "":
            raise RuntimeError(f"HOME={os.environ.get('HOME')!r} is not an absolute path")
        return home / ".cache" / "jit_kernel"
    except RuntimeError as error:  # "~" cannot be expanded: no HOME and no passwd entry
        if value or (xdg and xdg.startswith("~")):
            named = f"{CACHE_DIR_ENV}={value}" if value else f"XDG_CACHE_HOME={xdg}"
            why = f"{named} starts with ~ and the home directory is unknown"
        elif xdg:
            why = f"{CACHE_DIR_ENV} is unset, XDG_CACHE_HOME={xdg} is not absolute and the home "
            why += "directory is unknown"
        else:
            why = f"{CACHE_DIR_ENV} and XDG_CACHE_HOME are unset and the home directory is unknown"
        return private_root(why, error)


_private_roots: dict[int, Path] = {}
_private_lock = threading.Lock()


def private_root(why: str, error: BaseException) -> Path:
    """A build directory of this process alone, deleted when it exits: no cache. Said once."""
    pid = os.getpid()
    with _private_lock:
        root = _private_roots.get(pid)
        if root is not None:
            return root
        try:
            root = Path(tempfile.mkdtemp(prefix="jit_kernel-nocache-"))
        except OSError as failure:
            raise RuntimeError(
                f"no JIT cache directory ({why}: {error}) and no writable temporary directory "
                f"for a private one ({failure}); set {CACHE_DIR_ENV} to a writable directory"
            ) from None
        _private_roots[pid] = root
        atexit.register(_remove_private_root, root, pid)
    logger.warning(
        "no JIT cache directory (%s: %s); JIT modules are built in %s for this process only and "
        "deleted when it exits. Set %s (or XDG_CACHE_HOME, or HOME) to keep them.",
        why,
        error,
        root,
        CACHE_DIR_ENV,
    )
    return root


def unwritable(root: Path) -> OSError | None:
    """Why nothing can be built under ``root`` (None: its lock directory can be written)."""
    locks = root / ".locks"
    try:
        locks.mkdir(parents=True, exist_ok=True)
        probe = locks / f".probe.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        return error
    return None


def is_private_root(root: Path) -> bool:
    """Whether ``root`` is a private directory of this process (deleted when it exits)."""
    with _private_lock:
        return root in _private_roots.values()


def _remove_private_root(root: Path, pid: int) -> None:
    if os.getpid() == pid:  # a forked child inherits the handler, not the directory
        shutil.rmtree(root, ignore_errors=True)


def index_path(root: Path, plan: ModulePlan) -> Path:
    """Where the last published build of these sources is recorded.

    The index is keyed by everything except the compilers' identities (nvcc and ``$CXX``
    versions), so a machine without a toolchain (a driver-only image) can still load a module
    that ``python -m jit_kernel precompile`` built elsewhere into a shared cache.
    """
    return root / "by-source" / f"{plan.name}_{plan.source_key}"


def record_in_index(root: Path, plan: ModulePlan, target: Path) -> None:
    index = index_path(root, plan)
    index.parent.mkdir(parents=True, exist_ok=True)
    staged = index.with_name(f"{index.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    staged.write_text(target.parent.name)
    os.replace(staged, index)


def prebuilt_without_toolchain(root: Path, plan: ModulePlan) -> Path:
    """The indexed build of these sources, or the toolchain error (with what was looked for);
    the caller checks it before loading it."""
    error = plan.toolchain_error
    assert error is not None
    index = index_path(root, plan)
    try:
        target = root / index.read_text().strip() / f"{plan.name}.so"
    except OSError:
        target = None
    if target is not None and target.is_file():
        logger.info("no toolchain; loading %s, built elsewhere from the same sources", target)
        return target
    raise JitToolchainError(
        f"{error}\nNo prebuilt {plan.name!r} for these sources, flags and arch was found in "
        f"{root} either (looked for {index})."
    ) from None


# ---------------------------------------------------------------------------- verified libraries


def record_path(library: Path) -> Path:
    """The ``<module>.so.json`` record next to a library: its size, sha256 and the dependencies
    its compilers reported that are checked before a load (:mod:`.deps`)."""
    return library.with_name(library.name + ".json")


def toolchain_record_path(library: Path) -> Path:
    """The ``<module>.so.toolchain.json`` record: the toolchain's files the compilers read, with
    their sha256 (read only for the load log: the key holds the toolchain's versions)."""
    return library.with_name(library.name + ".toolchain.json")


def _digest_of(library: Path) -> dict[str, object]:
    data = library.read_bytes()
    return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def write_record(library: Path, dependencies: list[Any], toolchain: dict[str, Any]) -> None:
    """Write the records of a freshly built library next to it."""
    record = {**_digest_of(library), "dependencies": dependencies}
    record_path(library).write_text(json.dumps(record))
    toolchain_record_path(library).write_text(json.dumps(toolchain, sort_keys=True))


def read_record(library: Path) -> dict[str, Any] | None:
    """The record of ``library``; None when it is missing or not a JSON object."""
    try:
        record = json.loads(record_path(library).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def read_toolchain_record(library: Path) -> dict[str, Any]:
    """The toolchain files of ``library``'s record (empty when missing or damaged)."""
    try:
        record = json.loads(toolchain_record_path(library).read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def verified_path(library: Path) -> Path:
    """The ``<module>.so.verified`` stamp: the library's stat when its sha256 last matched."""
    return library.with_name(library.name + ".verified")


def _stamp(stat: os.stat_result, sha256: object) -> list[Any]:
    return [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, stat.st_dev, sha256]


def library_problem(library: Path, record: dict[str, Any] | None) -> str | None:
    """Why ``library`` must not be loaded (``None``: it is what was built, per ``record``).
    Checked before every load: ``dlopen`` of a truncated library maps pages past its end and
    dies with SIGBUS.

    The sha256 is computed again unless the ``.verified`` stamp holds the library's current
    stat: a stamp is written after a match, and only for a file unchanged for ``FRESH_NS``
    (the racy rule of the dependency record), so any write or replacement since is seen."""
    if record is None:
        return f"no readable {record_path(library).name} records what was built"
    try:
        stat = library.stat()
        if stat.st_size != record.get("size"):
            return f"{stat.st_size} bytes, {record.get('size')} were built"
        stamp = _stamp(stat, record.get("sha256"))
        if _read_json(verified_path(library)) == stamp:
            return None
        digest = _digest_of(library)
        if digest["sha256"] != record.get("sha256"):
            return "its sha256 differs from the one recorded when it was built"
        settled = max(stat.st_mtime_ns, stat.st_ctime_ns) < time.time_ns() - FRESH_NS
        if settled and _stamp(library.stat(), record.get("sha256")) == stamp:
            _write_quietly(verified_path(library), json.dumps(stamp))
    except OSError as exc:
        return f"cannot read it: {exc.strerror or exc}"
    return None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def _write_quietly(path: Path, text: str) -> None:
    """Write ``path`` whole (a rename) or not at all: a stamp only saves work."""
    staged = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        staged.write_text(text)
        os.replace(staged, path)
    except OSError:
        staged.unlink(missing_ok=True)


def install(staged: Path, target: Path) -> None:
    """Place ``staged`` at ``target`` atomically (a copy first when they are on two
    filesystems), replacing what was there."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        os.link(staged, temporary)
    except OSError:  # another filesystem, or no hard links here
        shutil.copyfile(staged, temporary)
    try:
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


# ---------------------------------------------------------------------------- builds


@contextlib.contextmanager
def build_lock(root: Path, plan: ModulePlan) -> Iterator[None]:
    """Hold the build lock of one module: concurrent builders wait, then find it built."""
    try:
        import fcntl
    except ImportError:  # no flock here: builders race, and the last install wins
        yield
        return
    path = root / ".locks" / f"{plan.name}_{plan.key}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            logger.info("waiting for another process building %s", plan.name)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def staging_dir(root: Path, plan: ModulePlan) -> Path:
    """A new private directory to build ``plan`` in.

    nvcc runs its sub-steps through a shell with its working directory and temporary paths
    unquoted, so the directory's real path must hold only shell-safe characters: it is
    ``<root>/.staging/<module>_<key16>.<host>.<pid>.<rand>`` when the cache root's path is, else a
    fresh directory under the system temporary directory (or ``/tmp``).
    """
    host = re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname())
    name = f"{plan.name}_{plan.key}.{host}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    staging = root / ".staging"
    staging.mkdir(parents=True, exist_ok=True)
    if shell_safe(os.path.realpath(staging)):
        path = staging / name
        path.mkdir()
        return path
    for base in (tempfile.gettempdir(), "/tmp", "/var/tmp"):
        if os.path.isdir(base) and shell_safe(os.path.realpath(base)):
            return Path(tempfile.mkdtemp(prefix=f"{plan.name}.", dir=os.path.realpath(base)))
    raise JitToolchainError(
        f"cannot build {plan.name}: the cache root {root} and the temporary directories all "
        "have characters nvcc would pass to a shell (anything but letters, digits and "
        "_ . / + @ % , : = -); set JIT_KERNEL_CACHE_DIR or TMPDIR to a plain path"
    )
