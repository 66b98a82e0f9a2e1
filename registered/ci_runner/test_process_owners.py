"""Attribution of processes to attempts: a running attempt's process is never another's to kill."""

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_runner import register_cpu_ci
from ci_runner.execution.proc_table import ProcEntry
from ci_runner.execution.process_owners import Attempt, candidates, killable_by

register_cpu_ci(est_time=3, suite="base-a-test-cpu")

RUNNER = 1
PROPERTY = settings(max_examples=300, deadline=None, database=None, derandomize=True)


def attempt(token: str, start: int, root_pid: int, **kw) -> Attempt:
    made = Attempt(token, f"test_{token}.py", start, root_pid=root_pid, **kw)
    if made.reaped_at is None:
        made.root = ProcEntry(root_pid, RUNNER, "S", root_pid, root_pid, start)
    return made


def entry(pid: int, ppid: int, sid: int, birth: int, state: str = "S") -> ProcEntry:
    return ProcEntry(pid, ppid, state, sid, sid, birth)


def owners_of(entries, attempts, tokens=None):
    table = {e.pid: e for e in entries}
    for a in attempts:
        if a.root is not None:
            table[a.root.pid] = a.root
    tokens = tokens or {}
    return candidates(table, RUNNER, attempts, lambda e: tokens.get(e.pid, ""))


def test_an_orphan_born_while_one_file_ran_is_that_files():
    a = attempt("a", 100, 10, reaped_at=150)
    owners = owners_of([entry(20, RUNNER, 20, 160)], [a])
    assert owners[20] == {a}


def test_an_orphan_born_while_two_files_ran_is_proven_only_by_its_token():
    a, b = attempt("a", 100, 10), attempt("b", 120, 11)
    orphan = entry(20, RUNNER, 20, 130)
    assert owners_of([orphan], [a, b])[20] == {a, b}
    assert owners_of([orphan], [a, b], {20: "b"})[20] == {b}
    assert owners_of([orphan], [a, b], {20: "a token of a nested runner"})[20] == {a, b}
    assert not killable_by(frozenset((a, b)), a)


def test_a_process_in_a_files_session_is_that_files_until_its_pid_may_be_reused():
    a = attempt("a", 100, 10, reaped_at=150)
    b = attempt("b", 120, 11)
    early, late = entry(20, RUNNER, 10, 140), entry(21, RUNNER, 10, 160)
    owners = owners_of([early, late], [a, b])
    assert owners[20] == {a}
    assert owners[21] == {a, b}  # born after pid 10 was released: the session proves nothing


def test_a_child_is_its_parents():
    a, b = attempt("a", 100, 10), attempt("b", 120, 11)
    child = entry(30, 10, 30, 130)  # setsid, cleared environment, but a's process's child
    assert owners_of([child], [a, b])[30] == {a}


def test_a_finished_file_whose_window_closed_owns_nothing_born_later():
    a = attempt("a", 100, 10, reaped_at=140, finished=True, window_end=150)
    b = attempt("b", 120, 11)
    owners = owners_of([entry(20, RUNNER, 20, 145), entry(21, RUNNER, 21, 160)], [a, b])
    assert owners[20] == {a, b} and killable_by(owners[20], b)
    assert owners[21] == {b}


def test_a_process_older_than_every_file_is_nobodys():
    a = attempt("a", 100, 10)
    owners = owners_of([entry(20, RUNNER, 20, 50)], [a])
    assert owners[20] == frozenset() and not killable_by(owners[20], a)


@st.composite
def histories(draw):
    """Attempts (some finished) and processes, each with its true owner and what it did."""
    count = draw(st.integers(1, 4))
    starts = sorted(draw(st.lists(st.integers(0, 50), min_size=count, max_size=count)))
    attempts = []
    for index, start in enumerate(starts):
        finished = draw(st.booleans())
        reaped = (
            draw(st.one_of(st.none(), st.integers(start, start + 40)))
            if not finished
            else (start + draw(st.integers(0, 40)))
        )
        window_end = (
            draw(st.one_of(st.none(), st.integers(reaped, reaped + 40))) if finished else None
        )
        attempts.append(
            attempt(str(index), start, 1000 + index, reaped_at=reaped, finished=finished,
                    window_end=window_end)
        )  # fmt: skip
    live = [a for a in attempts if not a.finished]
    processes: list[tuple[ProcEntry, Attempt, str]] = []
    for pid in range(2000, 2000 + draw(st.integers(0, 8))):
        if not live:
            break
        owner = draw(st.sampled_from(live))
        own = [e for e, o, _ in processes if o is owner]
        birth = draw(st.integers(owner.start, owner.start + 80))
        parents = [e for e in own if e.birth <= birth]
        if owner.root is not None and owner.root.birth <= birth:
            parents.append(owner.root)
        parent = draw(st.one_of(st.none(), st.sampled_from(parents))) if parents else None
        setsid = draw(st.booleans())
        in_root_session = not setsid and (parent is None or parent.sid == owner.root_pid)
        if parent is not None and not setsid:
            sid = parent.sid
        else:
            sid = owner.root_pid if in_root_session else pid
        token = draw(st.sampled_from([owner.token, "", "nested"]))
        ppid = parent.pid if parent is not None else RUNNER
        processes.append((entry(pid, ppid, sid, birth), owner, token))
    return attempts, processes


@PROPERTY
@given(histories())
def test_a_running_files_process_is_never_another_files_to_kill(history):
    attempts, processes = history
    owners = owners_of([e for e, _, _ in processes], attempts, {e.pid: t for e, _, t in processes})
    for process, owner, _ in processes:
        assert owner in owners[process.pid], (process, owner.token)
        for other in attempts:
            if other is not owner:
                assert not killable_by(owners[process.pid], other)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
