"""Where built modules live: ``$JIT_KERNEL_CACHE_DIR``, default ``~/.cache/jit_kernel``.

``<root>/<module>_<key16>/<module>.so`` holds a build, and ``<module>.so.sha256`` its size and
digest: a library is loaded only when it matches (:func:`library_problem`), so a truncated or
foreign file is rebuilt, never mapped. ``<root>/by-source/<module>_<source key>`` records the
last build of the same sources whatever the compilers, so a machine without a toolchain can load
a module that ``python -m jit_kernel precompile`` built elsewhere. Builders of one module take
``<root>/.locks/<module>_<key16>.lock`` (:func:`build_lock`), so they wait for one build.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import socket
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from jit_kernel.compiler.toolchain import JitToolchainError, shell_safe

if TYPE_CHECKING:
    from jit_kernel.compiler.plan import ModulePlan

logger = logging.getLogger("jit_kernel")

CACHE_DIR_ENV = "JIT_KERNEL_CACHE_DIR"


def cache_root() -> Path:
    """The cache root; ``$XDG_CACHE_HOME/jit_kernel`` when only ``XDG_CACHE_HOME`` is set."""
    value = os.environ.get(CACHE_DIR_ENV)
    if value:
        return Path(value).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "jit_kernel"


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
    """The indexed build of these sources, or the toolchain error (with what was looked for)."""
    error = plan.toolchain_error
    assert error is not None
    index = index_path(root, plan)
    try:
        target = root / index.read_text().strip() / f"{plan.name}.so"
    except OSError:
        target = None
    if target is not None and target.is_file():
        problem = library_problem(target)
        if problem is not None:
            raise JitToolchainError(
                f"{error}\nThe prebuilt {target} is damaged ({problem}) and cannot be rebuilt "
                "here; rebuild it where the toolchain is (python -m jit_kernel precompile)."
            ) from None
        logger.info("no toolchain; loading %s, built elsewhere from the same sources", target)
        return target
    raise JitToolchainError(
        f"{error}\nNo prebuilt {plan.name!r} for these sources, flags and arch was found in "
        f"{root} either (looked for {index})."
    ) from None


# ---------------------------------------------------------------------------- verified libraries


def digest_path(library: Path) -> Path:
    """The ``<module>.so.sha256`` record next to a library."""
    return library.with_name(library.name + ".sha256")


def _digest_of(library: Path) -> dict[str, object]:
    data = library.read_bytes()
    return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def record_digest(library: Path) -> Path:
    """Write the size and sha256 of a freshly built library next to it; returns the record."""
    record = digest_path(library)
    record.write_text(json.dumps(_digest_of(library)))
    return record


def library_problem(library: Path) -> str | None:
    """Why ``library`` must not be loaded (``None``: it is what was built). Checked before every
    load: ``dlopen`` of a truncated library maps pages past its end and dies with SIGBUS."""
    try:
        expected = json.loads(digest_path(library).read_text())
    except (OSError, ValueError):
        return f"no readable {digest_path(library).name} records what was built"
    try:
        size = library.stat().st_size
        if size != expected.get("size"):
            return f"{size} bytes, {expected.get('size')} were built"
        if _digest_of(library) != expected:
            return "its sha256 differs from the one recorded when it was built"
    except OSError as exc:
        return f"cannot read it: {exc.strerror or exc}"
    return None


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
