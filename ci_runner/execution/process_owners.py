"""Which attempt a process can belong to, from facts that prove it (no guesses by time alone).

Every process below the runner gets a set of *candidate* attempts, the attempts that could have
started it. The set always contains the true owner; a set of one is a proof. Facts, strongest
first, for a process ``P``:

1. ``P`` is an attempt's own process (pid and birth match the one its ``Popen`` started).
2. ``P``'s parent has one candidate: ``P`` has the same one (a child belongs to its parent's file;
   an orphan is re-parented to the runner, never to another file's process).
3. ``P``'s session id is the pid of an attempt's own process (each attempt starts a session),
   and ``P`` was born before that process was reaped: until then the pid, hence the session id,
   was that attempt's.
4. Otherwise the candidates are the attempts whose *window* contains ``P``'s birth (an attempt's
   window opens just before its process is forked and closes once no process it could own is
   left), narrowed to the parent's candidates, and to the attempt named by ``P``'s
   ``CI_RUNNER_RUN_TOKEN`` when there are several.

A process born when no window was open is not a file's (it is the runner's own, or older than
the shard): its set is empty and nothing kills it.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from ci_runner.execution.cgroup_v2 import AttemptCgroup
from ci_runner.execution.proc_table import ProcEntry


@dataclass(eq=False)
class Attempt:
    """One attempt of one file, as the process bookkeeping sees it."""

    token: str
    label: str  # the file, for reports
    start: int  # clock ticks, taken before its process was forked
    root: ProcEntry | None = None  # its own process, until its Popen reaps it
    root_pid: int | None = None  # its session id
    reaped_at: int | None = None  # clock ticks (rounded up) after its own process was reaped
    finished: bool = False  # its file is done: what is still its own may be killed by anyone
    window_end: int | None = None  # no process born later can be its own; None = still open
    cgroup: AttemptCgroup | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def in_window(self, birth: int) -> bool:
        return self.start <= birth and (self.window_end is None or birth <= self.window_end)

    def holds_session(self, entry: ProcEntry) -> bool:
        """``entry``'s session is the one this attempt's own process started (fact 3)."""
        return (
            self.root_pid == entry.sid
            and self.start <= entry.birth
            and (self.reaped_at is None or entry.birth <= self.reaped_at)
        )


Candidates = frozenset[Attempt]
TokenReader = Callable[[ProcEntry], str | None]


def candidates(
    table: Mapping[int, ProcEntry],
    runner_pid: int,
    attempts: Iterable[Attempt],
    read_token: TokenReader,
) -> dict[int, Candidates]:
    """The candidate attempts of every process below ``runner_pid`` in ``table``."""
    attempts = list(attempts)
    children: dict[int, list[ProcEntry]] = defaultdict(list)
    for entry in table.values():
        children[entry.ppid].append(entry)
    roots = {a.root.key: a for a in attempts if a.root is not None}
    sessions: dict[int, list[Attempt]] = defaultdict(list)
    for attempt in attempts:
        if attempt.root_pid is not None:
            sessions[attempt.root_pid].append(attempt)
    tokens = {a.token: a for a in attempts}
    found: dict[int, Candidates] = {}
    stack: list[tuple[ProcEntry, Candidates | None]] = [
        (e, None) for e in children[runner_pid] if e.pid != runner_pid
    ]
    while stack:
        entry, inherited = stack.pop()
        if entry.pid in found:
            continue
        own = _owners(entry, inherited, attempts, roots, sessions, tokens, read_token)
        found[entry.pid] = own
        for child in children[entry.pid]:
            # A child born before its listed parent is a stale read across a pid reuse.
            stack.append((child, own if child.birth >= entry.birth else None))
    return found


def _owners(
    entry: ProcEntry,
    inherited: Candidates | None,
    attempts: list[Attempt],
    roots: Mapping[tuple[int, int], Attempt],
    sessions: Mapping[int, list[Attempt]],
    tokens: Mapping[str, Attempt],
    read_token: TokenReader,
) -> Candidates:
    root_of = roots.get(entry.key)
    if root_of is not None:
        return frozenset((root_of,))
    if inherited is not None and len(inherited) == 1:
        return inherited
    for attempt in sessions.get(entry.sid, ()):
        if attempt.holds_session(entry):
            return frozenset((attempt,))
    possible = {a for a in attempts if a.in_window(entry.birth)}
    if inherited is not None:
        possible &= inherited
    if len(possible) > 1:
        named = tokens.get(read_token(entry) or "")
        if named in possible:
            return frozenset((named,))
    return frozenset(possible)


def killable_by(owners: Candidates | None, sweeper: Attempt | None) -> bool:
    """Whether ``sweeper``'s cleanup may kill a process with these candidates.

    Only if every candidate other than the sweeper is finished: then the process is the
    sweeper's or a finished file's, and no running file can own it. ``sweeper`` None (the end
    of the shard) means every candidate must be finished.
    """
    return bool(owners) and all(a is sweeper or a.finished for a in owners or ())
