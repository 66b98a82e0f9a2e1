"""Starting a file in its own session and making sure nothing it started outlives it.

Why three ways of finding a file's processes (all through psutil):

* ``children(recursive=True)`` of the file's process, snapshotted *before* anything is killed,
  finds descendants while the parent chain is intact (killing first would orphan them).
* The runner makes itself a *child subreaper* (Linux ``PR_SET_CHILD_SUBREAPER``): a descendant
  whose parent died is re-parented to the runner instead of init, so double-forked daemons and
  processes that called ``setsid()`` to leave the file's session are still the runner's
  descendants and can be found after the file's own process has exited.
* Each file's processes inherit a unique token in their environment (``CI_RUNNER_RUN_TOKEN``);
  among the runner's descendants, the token (or, for a process that cleared its environment,
  the file's session id) says which file a process belongs to when several files run at once.

After a file exits by itself, its remaining processes get :data:`SETTLE_SECONDS` to end on their
own (helpers that quit when their parent does); killing is then SIGTERM to every process still
found, a short grace, SIGKILL to the survivors, and a reap, so the next file never starts next to
a leftover of the previous one.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO

import psutil

TOKEN_VARIABLE = "CI_RUNNER_RUN_TOKEN"
SETTLE_SECONDS = 1.0  # a file's processes may outlive it by this much without being leftovers
_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37


_subreaper_active = False


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def set_child_subreaper(enabled: bool) -> bool:
    """Make this process adopt orphaned descendants (Linux only); return the previous setting.

    Where it is unavailable, :func:`find_file_processes` falls back to scanning every process.
    """
    global _subreaper_active
    libc = _libc()
    previous = ctypes.c_int(0)
    if libc is None:
        _subreaper_active = False
        return False
    libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(previous), 0, 0, 0)
    ok = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1 if enabled else 0, 0, 0, 0) == 0
    _subreaper_active = enabled and ok
    return bool(previous.value)


def spawn_in_new_session(
    argv: list[str], cwd: Path, env: Mapping[str, str], output: IO[bytes]
) -> subprocess.Popen[bytes]:
    """Start ``argv`` as a session leader with stdout+stderr going to ``output``."""
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=output,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


_ACTIVE_ROOTS: set[int] = set()  # pids of running files' own processes; their Popen reaps them
_ACTIVE_LOCK = threading.Lock()
_SPAWN_LOCK = threading.Lock()


@contextlib.contextmanager
def spawn_guard() -> Iterator[None]:
    """Hold while starting a file and registering its pid (:func:`register_root`).

    Between fork and exec a new file's process still has the runner's environment (no token of
    its own) and the runner as parent, so a concurrent leftover sweep for another file would
    take it for that file's orphan. The sweeps hold this lock too, so they never see a process
    in that window.
    """
    with _SPAWN_LOCK:
        yield


def register_root(pid: int) -> None:
    """Mark ``pid`` as a file's own process, reaped by its ``Popen`` and never here."""
    with _ACTIVE_LOCK:
        _ACTIVE_ROOTS.add(pid)


def unregister_root(pid: int) -> None:
    """Call once the file's ``Popen`` has reaped ``pid``."""
    with _ACTIVE_LOCK:
        _ACTIVE_ROOTS.discard(pid)


def _belongs_to(proc: psutil.Process, token: str, session_id: int, started_at: float) -> bool:
    try:
        env = proc.environ()
    except (psutil.Error, OSError):
        env = None
    if env is not None and env.get(TOKEN_VARIABLE) == token:
        return True
    try:
        if os.getsid(proc.pid) == session_id:
            return True
        # An orphan adopted by this (subreaper) runner that wiped its environment: it can only
        # come from a file started no later than it was.
        return (
            _subreaper_active
            and env is not None
            and TOKEN_VARIABLE not in env
            and proc.ppid() == os.getpid()
            and proc.create_time() >= started_at - 1.0
        )
    except (OSError, psutil.Error):
        return False


def _is_running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def find_file_processes(root: psutil.Process, token: str) -> list[psutil.Process]:
    """Every live process that belongs to the file whose own process is ``root``."""
    try:
        started_at = root.create_time()
    except psutil.Error:
        started_at = 0.0
    found: dict[int, psutil.Process] = {}
    if _is_running(root):
        found[root.pid] = root
        try:
            for child in root.children(recursive=True):
                found[child.pid] = child
        except psutil.Error:
            pass
    with _SPAWN_LOCK:  # no sibling file is between fork and registration meanwhile
        try:
            mine = (
                psutil.Process().children(recursive=True)
                if _subreaper_active
                else list(psutil.process_iter())
            )
        except psutil.Error:
            mine = []
        with _ACTIVE_LOCK:
            others = _ACTIVE_ROOTS - {root.pid}
        for proc in mine:
            if proc.pid in found or proc.pid in others or proc.pid == root.pid:
                continue
            if _belongs_to(proc, token, root.pid, started_at):
                found[proc.pid] = proc
    return [p for p in found.values() if _is_running(p)]


def _signal_all(procs: list[psutil.Process], signum: int) -> None:
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(signum)


def _wait_dead(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Poll until every process is gone or a zombie (never reaps: the owners do)."""
    deadline = time.monotonic() + timeout
    alive = [p for p in procs if _is_running(p)]
    delay = 0.005
    while alive and time.monotonic() < deadline:
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
        alive = [p for p in alive if _is_running(p)]
    return alive


def kill_file_processes(
    root: psutil.Process, token: str, grace_seconds: float, settle_seconds: float = 0.0
) -> int:
    """Terminate everything the file started; return how many processes had to be killed.

    First up to ``settle_seconds`` for processes that end by themselves once the file's own
    process has exited (multiprocessing's resource tracker, a worker pool shutting down): they
    are not leftovers. Then SIGTERM, up to ``grace_seconds`` for them to exit, SIGKILL for the
    survivors, then one more sweep for anything forked meanwhile. The file's own process is
    signalled but left to its ``Popen`` to reap; orphans adopted by the runner are reaped here.
    """
    alive = find_file_processes(root, token)
    if alive and settle_seconds > 0:
        _wait_dead(alive, settle_seconds)
        alive = find_file_processes(root, token)
    killed = len(alive)
    if alive:
        _signal_all(alive, signal.SIGTERM)
        survivors = _wait_dead(alive, grace_seconds)
        if survivors:
            _signal_all(survivors, signal.SIGKILL)
            _wait_dead(survivors, 5.0)
        late = find_file_processes(root, token)
        killed += len([p for p in late if p.pid not in {q.pid for q in alive}])
        if late:
            _signal_all(late, signal.SIGKILL)
            _wait_dead(late, 5.0)
    reap_adopted_zombies()
    return killed


def reap_adopted_zombies() -> None:
    """Collect exited orphans the subreaper runner inherited (never a file's own process)."""
    try:
        children = psutil.Process().children()
    except psutil.Error:
        return
    with _ACTIVE_LOCK:
        active = set(_ACTIVE_ROOTS)
    for child in children:
        if child.pid in active:
            continue
        try:
            if child.status() == psutil.STATUS_ZOMBIE:
                os.waitpid(child.pid, os.WNOHANG)
        except (psutil.Error, ChildProcessError, OSError):
            pass
