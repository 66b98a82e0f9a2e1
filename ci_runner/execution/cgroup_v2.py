"""A cgroup v2 per attempt, where this process may create cgroups below its own.

The shard gets ``<the runner's cgroup>/ci-runner-<pid>-<random>/`` and each attempt a child
of it. The file's process is born inside its attempt's cgroup: under the spawn lock the runner
moves itself in, forks, and moves back, so there is no moment in which the file runs outside
it. A process cannot leave a cgroup without write access to another cgroup's ``cgroup.procs``,
so membership proves ownership, and ``cgroup.kill`` ends every member, including one forking at
that instant. Needs Linux 5.14 (``cgroup.kill``); :func:`create_shard_cgroup` says why not when it
cannot be used.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import uuid
from pathlib import Path

REQUIRED_FILES = ("cgroup.procs", "cgroup.kill", "cgroup.freeze", "cgroup.events")


def _write(path: Path, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def _unescape(field: str) -> str:
    """Mount points in mountinfo escape space, tab, newline and backslash as ``\\ooo``."""
    for code in ("040", "011", "012", "134"):
        field = field.replace("\\" + code, chr(int(code, 8)))
    return field


def own_cgroup_path() -> str | None:
    """This process's cgroup v2 path (``/user.slice/...``), or None without cgroup v2."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("0::"):
            return line[3:]
    return None


def _own_directory(cgroup_path: str) -> Path | None:
    """Where ``cgroup_path`` is visible in a mounted cgroup2 file system."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        before, _, after = line.partition(" - ")
        fields = before.split()
        if not after.startswith("cgroup2 ") or len(fields) < 5:
            continue
        mount_root, mount_point = _unescape(fields[3]), _unescape(fields[4])
        if cgroup_path == mount_root:
            return Path(mount_point)
        prefix = mount_root.rstrip("/") + "/"
        if cgroup_path.startswith(prefix):
            return Path(mount_point) / cgroup_path[len(prefix) :]
    return None


class AttemptCgroup:
    """The cgroup of one attempt; ``relative`` is its path as ``/proc/PID/cgroup`` shows it."""

    def __init__(self, path: Path, relative: str, home: Path) -> None:
        self.path = path
        self.relative = relative
        self.home = home

    def enter(self) -> None:
        """Move this process into the cgroup, so that what it forks is born inside.

        The caller must hold the spawn lock and call :meth:`leave` right after the fork.
        """
        _write(self.path / "cgroup.procs", "0")

    def leave(self) -> None:
        """Move this process back to its own cgroup."""
        _write(self.home / "cgroup.procs", "0")

    def pids(self) -> set[int]:
        """Every live member of this cgroup and the cgroups below it (a nested runner's)."""
        found: set[int] = set()
        for directory, _, _ in os.walk(self.path):
            with contextlib.suppress(OSError):
                found.update(int(p) for p in Path(directory, "cgroup.procs").read_text().split())
        found.discard(os.getpid())
        return found

    def _event(self, name: str) -> bool:
        try:
            text = (self.path / "cgroup.events").read_text()
        except OSError:  # removed: nothing lives in it
            return False
        return f"{name} 1" in text.splitlines()

    def populated(self) -> bool:
        """Some process of this cgroup (or below) is alive."""
        return self._event("populated")

    def wait_empty(self, timeout: float) -> bool:
        """Poll until no member is alive; False if ``timeout`` passed first."""
        deadline = time.monotonic() + timeout
        delay = 0.002
        while self.populated():
            if time.monotonic() >= deadline:
                return False
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        return True

    def freeze(self, frozen: bool, timeout: float = 1.0) -> bool:
        """Freeze (or thaw) every member; True once the kernel reports it done."""
        try:
            _write(self.path / "cgroup.freeze", "1" if frozen else "0")
        except OSError:
            return False
        if not frozen:
            return True
        deadline = time.monotonic() + timeout
        while not self._event("frozen"):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.002)
        return True

    def kill(self) -> None:
        """SIGKILL every member, atomically with respect to forks (never this process)."""
        own = own_cgroup_path() or ""
        if own == self.relative or own.startswith(self.relative + "/"):
            raise RuntimeError(f"the runner is inside {self.path}; refusing cgroup.kill")
        _write(self.path / "cgroup.kill", "1")

    def remove(self) -> bool:
        """Remove this cgroup and any below it (all must be empty); True when gone."""
        for directory, _, _ in os.walk(self.path, topdown=False):
            with contextlib.suppress(OSError):
                os.rmdir(directory)
        return not self.path.exists()


class ShardCgroup:
    """The shard's cgroup directory, parent of one cgroup per attempt."""

    def __init__(self, path: Path, relative: str, home: Path) -> None:
        self.path = path
        self.relative = relative
        self.home = home

    def attempt(self, name: str) -> AttemptCgroup | None:
        """A new empty cgroup for one attempt, or None if it cannot be created."""
        try:
            (self.path / name).mkdir()
        except OSError:
            return None
        return AttemptCgroup(self.path / name, f"{self.relative}/{name}", self.home)

    def remove(self) -> None:
        """Kill whatever is left in the attempts' cgroups and remove them all."""
        for child in sorted(p for p in self.path.iterdir() if p.is_dir()):
            cgroup = AttemptCgroup(child, f"{self.relative}/{child.name}", self.home)
            with contextlib.suppress(OSError, RuntimeError):
                cgroup.kill()
            cgroup.wait_empty(5.0)
            cgroup.remove()
        with contextlib.suppress(OSError):
            self.path.rmdir()


def create_shard_cgroup() -> tuple[ShardCgroup | None, str]:
    """The shard's cgroup below this process's own, or (None, why it cannot be had)."""
    if not sys.platform.startswith("linux"):
        return None, "cgroups are Linux-only"
    relative_home = own_cgroup_path()
    if relative_home is None:
        return None, "no cgroup v2 hierarchy (/proc/self/cgroup has no 0:: line)"
    home = _own_directory(relative_home)
    if home is None or not home.is_dir():
        return None, f"cgroup {relative_home} is not visible in a mounted cgroup2 file system"
    name = f"ci-runner-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    path = home / name
    try:
        path.mkdir()
    except OSError as exc:
        return None, f"cannot create a cgroup in {home}: {exc.strerror or exc}"
    relative = f"{relative_home.rstrip('/')}/{name}"
    shard = ShardCgroup(path, relative, home)
    missing = [f for f in REQUIRED_FILES if not (path / f).exists()]
    if missing:
        shard.remove()
        return None, f"the kernel's cgroup v2 lacks {', '.join(missing)} (needs Linux 5.14)"
    try:
        _write(path / "cgroup.procs", "0")
        _write(home / "cgroup.procs", "0")
    except OSError as exc:
        shard.remove()
        return None, f"cannot move processes between cgroups in {home}: {exc.strerror or exc}"
    return shard, ""
