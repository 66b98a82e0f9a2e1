"""The machine's processes as the kernel records them, and signals that never hit a reused pid.

On Linux everything is read from ``/proc/PID/stat`` (one read per process: parent, state, process
group, session and the start time in clock ticks since boot, the kernel's own birth record).
Elsewhere psutil supplies the same fields. A process is identified by ``(pid, birth)``: a pid is
reused only after its process is reaped, and never within one clock tick of its release in
practice, so a signal is sent only after the birth read through a pidfd (or just before
``kill`` where pidfds do not exist) still matches the snapshot.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace

import psutil

LINUX = sys.platform.startswith("linux") and os.path.isdir("/proc/self")
TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK") if LINUX else 100
STOPPED_STATES = frozenset("Tt")
DEAD_STATES = frozenset("ZX")


@dataclass(frozen=True)
class ProcEntry:
    """One process at the time of a snapshot."""

    pid: int
    ppid: int
    state: str  # one letter, as in /proc/PID/stat: R S D T t Z X I ...
    pgid: int
    sid: int
    birth: int  # start time, clock ticks since boot (Linux) or since the epoch (elsewhere)
    threads: int = 1

    @property
    def dead(self) -> bool:
        """Exited (a zombie waiting for its parent): it can neither fork nor be signalled.

        A main thread that exited alone shows as a zombie too, but while another thread of it
        lives the process can still fork.
        """
        return self.state in DEAD_STATES and self.threads <= 1

    @property
    def key(self) -> tuple[int, int]:
        return self.pid, self.birth


def now_ticks(round_up: bool = False) -> int:
    """The current time on the clock of :attr:`ProcEntry.birth`.

    Rounded down (the default) it is at or before the birth of any process started later;
    rounded up it is at or after the birth of any process started earlier.
    """
    seconds = time.clock_gettime(time.CLOCK_BOOTTIME) if LINUX else time.time()
    ticks = seconds * TICKS_PER_SECOND
    return math.ceil(ticks) if round_up else math.floor(ticks)


def read_entry(pid: int) -> ProcEntry | None:
    """The process ``pid`` now, or None when there is none."""
    if not LINUX:
        return _psutil_entry(pid)
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            data = stat.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2 :].split()
    return ProcEntry(
        pid, int(fields[1]), fields[0].decode(), int(fields[2]), int(fields[3]), int(fields[19]),
        int(fields[17]),
    )  # fmt: skip


def snapshot() -> dict[int, ProcEntry]:
    """Every process on the machine (that this user may see), by pid."""
    if not LINUX:
        return {e.pid: e for e in map(_psutil_entry, psutil.pids()) if e is not None}
    table: dict[int, ProcEntry] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            entry = read_entry(int(name))
            if entry is not None:
                table[entry.pid] = entry
    return table


def _children_files_exist() -> bool:
    return LINUX and os.path.exists(f"/proc/self/task/{os.getpid()}/children")


CHILDREN_FILES = _children_files_exist()  # CONFIG_PROC_CHILDREN: /proc/PID/task/TID/children


def _thread_files(pid: int, name: str) -> Iterator[bytes]:
    """The contents of ``/proc/PID/task/TID/<name>`` for every thread still there."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return
    for tid in threads:
        try:
            with open(f"/proc/{pid}/task/{tid}/{name}", "rb") as per_thread:
                yield per_thread.read()
        except OSError:
            continue  # the thread has exited


def children_of(pid: int) -> dict[int, ProcEntry]:
    """The children of ``pid`` (from its threads' children files, else from every process)."""
    if not CHILDREN_FILES:
        return {e.pid: e for e in snapshot().values() if e.ppid == pid}
    found: dict[int, ProcEntry] = {}
    for listing in _thread_files(pid, "children"):
        for child in map(int, listing.split()):
            entry = read_entry(child)
            if entry is not None:
                found[child] = entry
    return found


def descendants(pid: int) -> dict[int, ProcEntry] | None:
    """``pid``'s descendants, walked through each thread's children file; None without them.

    A child whose parent is gone by the time it is read counts as ``pid``'s own child (it is
    being re-parented to the subreaper). A list read while its owner reaps one of its children
    can skip a sibling: callers that need completeness must rule that out.
    """
    if not CHILDREN_FILES:
        return None
    found: dict[int, ProcEntry] = {}
    stack = [pid]
    while stack:
        for child, entry in children_of(stack.pop()).items():
            if child not in found:
                found[child] = entry
                stack.append(child)
    for child, entry in found.items():
        if entry.ppid != pid and entry.ppid not in found:
            found[child] = replace(entry, ppid=pid)
    return found


_PSUTIL_STATES = {psutil.STATUS_ZOMBIE: "Z", psutil.STATUS_STOPPED: "T", psutil.STATUS_DEAD: "X"}


def _psutil_entry(pid: int) -> ProcEntry | None:
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            ppid, status, created = proc.ppid(), proc.status(), proc.create_time()
            threads = proc.num_threads()
        pgid = os.getpgid(pid)
        sid = os.getsid(pid)
    except (psutil.Error, OSError):
        return None
    state = _PSUTIL_STATES.get(status, "S")
    return ProcEntry(pid, ppid, state, pgid, sid, math.floor(created * TICKS_PER_SECOND), threads)


def send(entry: ProcEntry, signum: int) -> bool:
    """Send ``signum`` to the process ``entry`` describes if it still exists; True if sent."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if LINUX and pidfd_open is not None:
        try:
            fd = pidfd_open(entry.pid)
        except OSError:
            return False
        try:
            current = read_entry(entry.pid)  # the pidfd now pins the process it was opened on
            if current is None or current.birth != entry.birth:
                return False
            signal.pidfd_send_signal(fd, signum)
            return True
        except OSError:
            return False
        finally:
            os.close(fd)
    current = read_entry(entry.pid)
    if current is None or current.birth != entry.birth:
        return False
    try:
        os.kill(entry.pid, signum)
    except OSError:
        return False
    return True


def exists(entry: ProcEntry) -> bool:
    """The process still exists (a zombie included): its pid has not been released."""
    current = read_entry(entry.pid)
    return current is not None and current.birth == entry.birth


def is_gone(entry: ProcEntry) -> bool:
    """The process has exited (or is a zombie)."""
    current = read_entry(entry.pid)
    return current is None or current.birth != entry.birth or current.dead


def is_frozen(entry: ProcEntry) -> bool:
    """Every thread of the process is stopped, or it has exited: it can create nothing more."""
    current = read_entry(entry.pid)
    if current is None or current.birth != entry.birth or current.dead:
        return True
    if not LINUX:
        return current.state in STOPPED_STATES
    for data in _thread_files(entry.pid, "stat"):
        end = data.rindex(b")")
        if data[end + 2 : end + 3].decode() not in STOPPED_STATES | DEAD_STATES:
            return False
    return True


def wait_until(
    entries: Iterable[ProcEntry], timeout: float, done: Callable[[ProcEntry], bool] = is_gone
) -> list[ProcEntry]:
    """Poll until ``done(entry)`` holds for every entry or ``timeout`` passes; the others."""
    check = done
    deadline = time.monotonic() + timeout
    pending = [e for e in entries if not check(e)]
    delay = 0.002
    while pending and time.monotonic() < deadline:
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
        pending = [e for e in pending if not check(e)]
    return pending


def read_variable(entry: ProcEntry, name: str) -> str | None:
    """The value of environment variable ``name`` the process started with.

    ``""`` when it has none (a cleared or rewritten environment), None when unreadable.
    """
    if not LINUX:
        try:
            return psutil.Process(entry.pid).environ().get(name, "")
        except (psutil.Error, OSError):
            return None
    try:
        with open(f"/proc/{entry.pid}/environ", "rb") as environ:
            data = environ.read()
    except OSError:
        return None
    current = read_entry(entry.pid)
    if current is None or current.birth != entry.birth:
        return None
    prefix = name.encode() + b"="
    for item in data.split(b"\0"):
        if item.startswith(prefix):
            return item[len(prefix) :].decode(errors="replace")
    return ""


def reap(pids: Iterable[int]) -> None:
    """Collect exited children of this process (pids already known to be zombies)."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def has_waitable_child() -> tuple[bool, int | None]:
    """(some child of this process has exited and waits to be reaped, the pid of one of them).

    Nothing is reaped. Where the peek is unavailable the answer is (True, None): look.
    """
    waitid = getattr(os, "waitid", None)
    if waitid is None or not hasattr(os, "WNOWAIT"):
        return True, None
    try:
        result = waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False, None
    except OSError:
        return True, None
    if result is None:
        return False, None
    return True, result.si_pid
