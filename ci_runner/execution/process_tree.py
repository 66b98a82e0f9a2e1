"""Starting a file in its own session, and ending every process it started when it ends.

The rule: when an attempt ends (exit, timeout, retry, a signal to the runner) every process it
started, however it forked, is ended; no attempt's cleanup touches a process that another
running attempt may own; what cannot be attributed is ended as soon as no running attempt can
own it, and at the end of the shard in any case, and reported.

Two mechanisms, chosen per shard (:func:`begin_shard`):

* **A cgroup v2 per attempt** where the runner may create cgroups below its own (root on a VM,
  a privileged container, a delegated systemd scope): the kernel records membership, a process
  cannot leave without write access to another cgroup, and ``cgroup.kill`` ends every member
  atomically, a process forking at that instant included. Attribution is exact whatever the
  process does to its environment, session or parentage (:mod:`.cgroup_v2`).
* **Otherwise (GitHub-hosted runners, ordinary containers: the cgroup file system is not
  writable) a child subreaper plus proofs of ownership**: the runner is a child subreaper
  (``PR_SET_CHILD_SUBREAPER``), so every orphan of every file is re-parented to it, never to
  init, and every process a file started stays below the runner until it is reaped. Each one
  is attributed only by facts (:mod:`.process_owners`); a set of several candidates is never
  resolved by a guess. Ending is a freeze-then-kill fixpoint: SIGSTOP every process that may be
  killed, confirm every thread stopped, look again, until a look finds nothing new and no
  process of the set that died by itself (its children could be unseen); then SIGKILL. A
  process that hops (forks, its parent exits) cannot slip through: the runner reaps a zombie
  only after a look has seen it, so a dead hop forces another look, and stopping the process
  group of a dead or stopped member stops the whole chain at once.

Both keep the runner a subreaper, so the end of the shard can sweep everything still below it
(processes that left their cgroup, sets of candidates that never narrowed), and a thread reaps
the orphans it adopts while files run (a hopping chain leaves one zombie per hop).

Before killing, a file that exited by itself gets :data:`SETTLE_SECONDS` for helpers that end
with it (multiprocessing's resource tracker); then SIGTERM, ``--kill-grace-seconds``, and the
SIGKILL above. Only then does the next file start in the slot.
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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import psutil

from ci_runner.env import CGROUPS as CGROUPS_VARIABLE
from ci_runner.env import get_bool_env
from ci_runner.execution import proc_table
from ci_runner.execution.cgroup_v2 import AttemptCgroup, ShardCgroup, create_shard_cgroup
from ci_runner.execution.proc_table import STOPPED_STATES, ProcEntry, now_ticks
from ci_runner.execution.process_owners import Attempt, Candidates, candidates, killable_by

TOKEN_VARIABLE = "CI_RUNNER_RUN_TOKEN"
SETTLE_SECONDS = 1.0  # a file's processes may outlive it by this much without being leftovers
FREEZE_LIMIT_SECONDS = 60.0  # a fixpoint still finding new processes after this gives up
STOP_WAIT_SECONDS = 2.0  # how long one round waits for SIGSTOP to take every thread
REAP_INTERVAL_SECONDS = 0.1  # a hopping chain leaves a zombie per hop: collect them this often
_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def set_child_subreaper(enabled: bool) -> bool:
    """Make this process adopt orphaned descendants (Linux only); return the previous setting."""
    libc = _libc()
    previous = ctypes.c_int(0)
    if libc is None:
        return False
    libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(previous), 0, 0, 0)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1 if enabled else 0, 0, 0, 0)
    return bool(previous.value)


@dataclass
class _Shard:
    """The bookkeeping of the running shard (module state: the executor runs one at a time)."""

    attempts: dict[str, Attempt] = field(default_factory=dict)  # by token
    live_roots: dict[int, Attempt] = field(default_factory=dict)  # own processes not yet reaped
    cgroups: ShardCgroup | None = None
    start: int | None = None  # clock ticks at begin_shard
    subreaper_before: bool = False
    unproven: dict[tuple[str, ...], int] = field(default_factory=dict)  # candidates -> killed
    notes: list[str] = field(default_factory=list)  # reported at the end of the shard
    reaper: _Reaper | None = None
    active: bool = False  # between begin_shard and end_shard


class _Reaper(threading.Thread):
    """Collects the zombies the subreaper runner adopts while files run.

    Without it a chain that hops leaves one zombie per hop until the next sweep: thousands a
    minute, slowing every look and using up pids. It never reaps during a fixpoint.
    """

    def __init__(self) -> None:
        super().__init__(name="ci-runner-reaper", daemon=True)
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(REAP_INTERVAL_SECONDS):
            if _SWEEP_LOCK.acquire(blocking=False):
                try:
                    _reap_waiting()
                finally:
                    _SWEEP_LOCK.release()


_SHARD = _Shard()
_LOCK = threading.Lock()  # guards _SHARD
_SPAWN_LOCK = threading.RLock()  # forks, cgroup moves, cgroup.kill and reaping
_SWEEP_LOCK = threading.Lock()  # one fixpoint at a time; zombies are reaped only inside it


def begin_shard(environ: Mapping[str, str]) -> str:
    """Become a subreaper and set up the cgroups if possible; describe the mechanism used.

    ``environ[CI_RUNNER_CGROUPS]`` false turns the cgroups off (it must already be checked).
    """
    global _SHARD
    shard = _Shard(subreaper_before=set_child_subreaper(True), start=now_ticks(), active=True)
    if get_bool_env(CGROUPS_VARIABLE, True, environ):
        shard.cgroups, why = create_shard_cgroup()
    else:
        why = f"{CGROUPS_VARIABLE}=0"
    with _LOCK:
        _SHARD = shard
    shard.reaper = _Reaper()
    shard.reaper.start()
    if shard.cgroups is not None:
        return "processes: a cgroup per file"
    return f"processes: subreaper and ownership proofs, no cgroup ({why})"


def end_shard() -> list[str]:
    """End everything the shard's files left, undo :func:`begin_shard`; lines to report.

    A second call (or one without :func:`begin_shard`) does nothing.
    """
    global _SHARD
    with _LOCK:
        shard = _SHARD
        if not shard.active:
            return []
        shard.active = False
    if shard.reaper is not None:
        shard.reaper.stopped.set()
        shard.reaper.join()
    lines: list[str] = []
    for attempt in list(shard.attempts.values()):  # attempts whose final sweep never ran
        if attempt.cgroup is not None and attempt.cgroup.path.exists():
            with attempt.lock:
                _end_in_cgroup(attempt, 0.0, 0.0, final=True)
    if shard.start is not None:
        start = shard.start
        with _SWEEP_LOCK:
            killed, table, _ = _freeze_and_kill(lambda e, _owners: e.birth >= start)
            _reap(table)
        if killed:
            lines.append(
                f"[ci_runner] killed {len(killed)} process(es) still running at the end of the "
                "shard, left by its files (they had left their file's cgroup, or no one file "
                "could be proven their owner)"
            )
    for labels, count in sorted(shard.unproven.items()):
        lines.append(
            f"[ci_runner] killed {count} leftover process(es) of one of {', '.join(labels)}: "
            "these files ran side by side, and which one started them cannot be proven"
            if len(labels) > 1
            else f"[ci_runner] killed {count} leftover process(es) of {labels[0]} after it ended"
        )
    lines.extend(shard.notes)
    if shard.cgroups is not None:
        shard.cgroups.remove()
    set_child_subreaper(shard.subreaper_before)
    with _LOCK:
        _SHARD = _Shard()
    return lines


def spawn_in_new_session(
    argv: list[str], cwd: Path, env: Mapping[str, str], output: IO[bytes]
) -> subprocess.Popen[bytes]:
    """Start ``argv`` as a session leader with stdout+stderr going to ``output``.

    ``env[CI_RUNNER_RUN_TOKEN]`` names the attempt; it is recorded before the fork, and the
    process is born inside the attempt's cgroup when the shard has cgroups.
    """
    token = env.get(TOKEN_VARIABLE)
    if not token:
        raise ValueError(f"spawn_in_new_session: env has no {TOKEN_VARIABLE}")
    label = next((a for a in argv[1:] if a.endswith(".py")), argv[-1])  # the file, for reports

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            argv, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
            stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip

    with _SPAWN_LOCK:
        with _LOCK:
            shard = _SHARD
            attempt = Attempt(token, label, now_ticks())
            shard.attempts[token] = attempt
        cgroup = shard.cgroups.attempt(f"attempt-{token}") if shard.cgroups else None
        if cgroup is not None:
            try:
                cgroup.enter()
                attempt.cgroup = cgroup
            except OSError:  # this attempt goes without: the proofs still hold
                cgroup.remove()
        try:
            proc = start()
        except OSError:
            attempt.finished = True
            attempt.window_end = now_ticks(round_up=True)
            raise
        finally:
            if attempt.cgroup is not None:
                attempt.cgroup.leave()
                if attempt.finished:
                    attempt.cgroup.remove()
        attempt.root = proc_table.read_entry(proc.pid)
        attempt.root_pid = proc.pid
        with _LOCK:
            shard.live_roots[proc.pid] = attempt
    return proc


@contextlib.contextmanager
def spawn_guard() -> Iterator[None]:
    """Hold while starting a file and registering its pid (:func:`register_root`).

    Nothing is reaped while it is held, so a file's own process, which its ``Popen`` must reap,
    is never collected by a sweep in the moment before it is registered.
    """
    with _SPAWN_LOCK:
        yield


def register_root(pid: int) -> None:
    """Mark ``pid`` as a file's own process, reaped by its ``Popen`` and never here."""
    with _LOCK:
        if pid not in _SHARD.live_roots:
            attempt = next((a for a in _SHARD.attempts.values() if a.root_pid == pid), None)
            if attempt is not None and attempt.reaped_at is None:
                _SHARD.live_roots[pid] = attempt


def unregister_root(pid: int) -> None:
    """Call once the file's ``Popen`` has reaped ``pid``: its next sweep is its final one."""
    with _LOCK:
        attempt = _SHARD.live_roots.pop(pid, None)
        if attempt is not None:
            attempt.root = None
            attempt.reaped_at = now_ticks(round_up=True)


def _attempt_for(root: psutil.Process, token: str) -> Attempt:
    with _LOCK:
        attempt = _SHARD.attempts.get(token)
        if attempt is None:  # started without spawn_in_new_session: known by its own process
            entry = proc_table.read_entry(root.pid)
            attempt = Attempt(token, str(root.pid), entry.birth if entry else now_ticks())
            attempt.root, attempt.root_pid = entry, root.pid
            _SHARD.attempts[token] = attempt
            if entry is not None and not entry.dead:
                _SHARD.live_roots[root.pid] = attempt
    return attempt


def find_file_processes(root: psutil.Process, token: str) -> list[psutil.Process]:
    """Every live process proven to be the attempt's (its cgroup's members, or proven by the
    facts of :mod:`.process_owners`), the attempt's own process included while it lives."""
    attempt = _attempt_for(root, token)
    if attempt.cgroup is not None:
        entries = [proc_table.read_entry(pid) for pid in attempt.cgroup.pids()]
    else:
        table, owners = _survey()
        mine = frozenset((attempt,))
        entries = [table[pid] for pid, cands in owners.items() if cands == mine]
    found = []
    for entry in entries:
        if entry is None or entry.dead:
            continue
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(entry.pid)
            if proc_table.exists(entry):  # still the process the look found
                found.append(proc)
    return found


def kill_file_processes(
    root: psutil.Process, token: str, grace_seconds: float, settle_seconds: float = 0.0
) -> int:
    """End everything the attempt started; return how many processes proven its were killed.

    First up to ``settle_seconds`` for processes that end by themselves once the file's own
    process has exited; then SIGTERM, up to ``grace_seconds``, and SIGKILL to everything left.
    The file's own process is signalled but left to its ``Popen`` to reap. A call after
    :func:`unregister_root` is the attempt's final sweep: afterwards it counts as finished.
    """
    attempt = _attempt_for(root, token)
    with attempt.lock:
        final = attempt.root is None
        if attempt.cgroup is not None:
            return _end_in_cgroup(attempt, grace_seconds, settle_seconds, final)
        return _end_by_proof(attempt, grace_seconds, settle_seconds, final)


def reap_adopted_zombies() -> None:
    """Collect exited orphans the subreaper runner inherited (never a file's own process)."""
    with _SWEEP_LOCK:
        _reap_waiting()


def _reap_waiting() -> None:
    if proc_table.has_waitable_child()[0]:
        me = os.getpid()
        _reap(proc_table.children_of(me))


def _reap(table: Mapping[int, ProcEntry]) -> None:
    me = os.getpid()
    with _SPAWN_LOCK, _LOCK:
        roots = set(_SHARD.live_roots)
        proc_table.reap(
            e.pid for e in table.values() if e.ppid == me and e.dead and e.pid not in roots
        )


# --- with a cgroup -----------------------------------------------------------------------------


def _end_in_cgroup(attempt: Attempt, grace: float, settle: float, final: bool) -> int:
    cgroup: AttemptCgroup = attempt.cgroup  # type: ignore[assignment]
    if settle > 0 and cgroup.populated():
        cgroup.wait_empty(settle)
    killed: set[int] = set()
    if cgroup.populated():
        with _SPAWN_LOCK:  # frozen, no member can exit and free its pid while signalled
            cgroup.freeze(True)
            members = cgroup.pids()
            for pid in members:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGTERM)
            cgroup.freeze(False)
        killed |= members
        if not cgroup.wait_empty(grace):
            with _SPAWN_LOCK:
                killed |= cgroup.pids()
                with contextlib.suppress(OSError, RuntimeError):
                    cgroup.kill()
            cgroup.wait_empty(5.0)
    if final:
        attempt.finished = True
        if not cgroup.populated() and cgroup.remove():
            attempt.window_end = now_ticks(round_up=True)
    reap_adopted_zombies()
    killed.discard(attempt.root_pid or 0)
    return len(killed)


# --- without a cgroup: proofs and the freeze-then-kill fixpoint --------------------------------


def _read_token(entry: ProcEntry) -> str | None:
    return proc_table.read_variable(entry, TOKEN_VARIABLE)


def _survey() -> tuple[dict[int, ProcEntry], dict[int, Candidates]]:
    """Everything below the runner, and its candidate owners.

    The walk through children files is complete unless a list lost an entry while it was read.
    Below the runner only a reaping parent removes one; a parent that may be killed is frozen
    before its list counts for the fixpoint, and the runner itself reaps only zombies inside
    ``_SWEEP_LOCK`` and the files' own processes (their ``Popen``), checked around the walk:
    if one of those vanished meanwhile, the walk is repeated. Where there are no children
    files, every process of the machine is read.
    """
    me = os.getpid()
    with _LOCK:
        attempts = list(_SHARD.attempts.values())
        roots = [a.root for a in _SHARD.live_roots.values() if a.root is not None]
    table: dict[int, ProcEntry] | None = None
    for _ in range(3):
        before = [root for root in roots if proc_table.exists(root)]
        table = proc_table.descendants(me)
        if table is None or all(proc_table.exists(root) for root in before):
            break
        table = None
    if table is None:
        table = proc_table.snapshot()
    return table, candidates(table, me, attempts, _read_token)


def _targets(sweeper: Attempt) -> list[tuple[ProcEntry, Candidates]]:
    table, owners = _survey()
    return [
        (table[pid], cands)
        for pid, cands in owners.items()
        if not table[pid].dead and killable_by(cands, sweeper)
    ]


KillRule = Callable[[ProcEntry, Candidates], bool]


def _stop_groups(entries: list[ProcEntry], signum: int) -> None:
    """Signal the process groups of ``entries``, each a stopped or dead process that may be
    killed and that only the runner could reap.

    Such a process keeps its group and session id reserved, and a session is never empty
    between its creation and any member's birth, so every member of the group descends from
    the same session leader as the anchor and has the same true owner. One signal stops a
    whole chain of hops or a fork bomb that never left its group, forks in flight included.
    """
    runner_group = os.getpgrp()
    done: set[int] = set()
    for entry in entries:
        if entry.pgid in done or entry.pgid in (0, runner_group):
            continue
        current = proc_table.read_entry(entry.pid)
        if current is None or current.key != entry.key or current.pgid != entry.pgid:
            continue
        if not (current.dead or current.state in STOPPED_STATES):
            continue
        done.add(entry.pgid)
        with contextlib.suppress(OSError):
            os.killpg(entry.pgid, signum)


def _freeze_and_kill(
    may_kill: KillRule,
) -> tuple[dict[tuple[int, int], Candidates], dict[int, ProcEntry], dict[int, Candidates]]:
    """SIGSTOP until nothing new appears, then SIGKILL; (killed, last table, its candidates).

    Call with ``_SWEEP_LOCK`` held. A look is conclusive when every process that may be killed
    is stopped and none died since the previous look: a process that died may have forked
    first, so its zombie (which the runner does not reap before a look has seen it) forces
    another look. Each look also stops whole process groups through anchors
    (:func:`_stop_groups`), so chains that hop faster than a look are caught too.
    """
    me = os.getpid()
    frozen: dict[tuple[int, int], tuple[ProcEntry, Candidates]] = {}
    dead_seen: set[tuple[int, int]] = set()
    anchors: list[ProcEntry] = []
    deadline = time.monotonic() + FREEZE_LIMIT_SECONDS
    while True:
        table, owners = _survey()
        with _LOCK:
            roots = set(_SHARD.live_roots)
        fresh: list[ProcEntry] = []
        anchors = []
        new_dead = False
        for pid, cands in owners.items():
            entry = table[pid]
            if not may_kill(entry, cands):
                continue
            if entry.dead:
                new_dead |= entry.key not in dead_seen
                dead_seen.add(entry.key)
                if entry.ppid == me and pid not in roots:
                    anchors.append(entry)
            elif entry.key in frozen and (
                entry.state in STOPPED_STATES or proc_table.is_frozen(entry)
            ):
                anchors.append(entry)
            else:
                fresh.append(entry)
                frozen.setdefault(entry.key, (entry, cands))
        if not fresh and not new_dead:
            break
        if time.monotonic() > deadline:
            with _LOCK:
                _SHARD.notes.append(
                    f"[ci_runner] new processes kept appearing for {FREEZE_LIMIT_SECONDS:g}s "
                    "while a file's processes were being stopped; what was still running was "
                    "ended at the end of the shard"
                )
            break
        _stop_groups(anchors, signal.SIGSTOP)
        _reap(table)  # seen dead: their children are the runner's now, visible next look
        for entry in fresh:
            proc_table.send(entry, signal.SIGSTOP)
        proc_table.wait_until(fresh, STOP_WAIT_SECONDS, proc_table.is_frozen)
    _stop_groups(anchors, signal.SIGKILL)
    for entry, _ in frozen.values():
        proc_table.send(entry, signal.SIGKILL)
    proc_table.wait_until((e for e, _ in frozen.values()), 5.0)
    table, owners = _survey()
    return {key: cands for key, (_, cands) in frozen.items()}, table, owners


def _close_windows(table: Mapping[int, ProcEntry], owners: Mapping[int, Candidates]) -> None:
    """A finished attempt no live process may belong to can own nothing born from now on."""
    owned = {a for pid, cands in owners.items() if not table[pid].dead for a in cands}
    now = now_ticks(round_up=True)
    with _LOCK:
        for attempt in _SHARD.attempts.values():
            if attempt.finished and attempt.window_end is None and attempt not in owned:
                attempt.window_end = now


def _end_by_proof(attempt: Attempt, grace: float, settle: float, final: bool) -> int:
    with _SWEEP_LOCK:
        table, owners = _survey()
        if not any(killable_by(cands, attempt) for cands in owners.values()):
            if final:
                attempt.finished = True
                _close_windows(table, owners)
            _reap(table)
            return 0
    targets = _targets(attempt)
    if targets and settle > 0:
        proc_table.wait_until((e for e, _ in targets), settle)
        targets = _targets(attempt)
    ended = {e.key: cands for e, cands in targets}
    if targets:
        for entry, _ in targets:
            proc_table.send(entry, signal.SIGTERM)
        proc_table.wait_until((e for e, _ in targets), grace)
    with _SWEEP_LOCK:
        killed, table, owners = _freeze_and_kill(lambda _e, cands: killable_by(cands, attempt))
        ended.update(killed)
        if final:
            attempt.finished = True
            _close_windows(table, owners)
        _reap(table)
    root_key = attempt.root.key if attempt.root is not None else None
    proven = 0
    with _LOCK:
        for key, cands in ended.items():
            if cands == frozenset((attempt,)):
                proven += key != root_key
            else:
                labels = tuple(sorted(a.label for a in cands))
                _SHARD.unproven[labels] = _SHARD.unproven.get(labels, 0) + 1
    return proven
