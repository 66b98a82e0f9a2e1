"""Python stacks of a file's processes, taken just before the runner kills them.

Every Python process of a file's tree registers a stack dump at start-up (the child bootstrap's
``sitecustomize``): on ``SIGUSR2`` it writes every thread's stack to its own dump file, named by
its pid (``<attempt>.stack.<pid>``).
Before a timeout or interruption kill, :func:`dump_stacks` sends that signal to each process of
the file that is *ready*: it has its dump file, and (on Linux, read from ``/proc/<pid>/status``)
it catches the signal, whose default action would kill it. A process that exec'ed into another
program or never ran the bootstrap (it cleared its environment, ``python -I``) is left alone.
The dumps are then read back once they stop growing, at most :data:`DUMP_WAIT_SECONDS` later.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ci_runner.execution.captured_output import read_tail
from ci_runner.execution.child.ci_runner_case_record import STACK_SIGNAL
from ci_runner.model import ProcessStack
from ci_runner.safe_text import one_line

if TYPE_CHECKING:  # psutil loads only when stacks are dumped (a dry run never loads it)
    import psutil

DUMP_SIGNAL: int | None = getattr(signal, STACK_SIGNAL, None)
DUMP_WAIT_SECONDS = 2.0  # longest wait for the dumps to be written
STACK_BYTES_PER_PROCESS = 32 * 1024  # the end of each dump is kept
MAX_PROCESSES = 16  # dumps kept per file (its own process first); the rest are counted
_POLL_SECONDS = 0.05


def catches_signal(pid: int, signum: int) -> bool:
    """Whether ``pid`` has a handler for ``signum`` (its ``SigCgt`` mask); True where /proc is
    not there to say (the dump file is then the only evidence)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    except FileNotFoundError:
        return not Path("/proc/self/status").exists()
    except (OSError, ValueError, IndexError):
        return False
    return False


def _command(proc: psutil.Process) -> str:
    import psutil

    try:
        return one_line(" ".join(proc.cmdline()))[:300]
    except psutil.Error:
        return "?"


def dump_stacks(
    processes: list[psutil.Process], dump_file: Callable[[int], Path], root_pid: int
) -> tuple[list[ProcessStack], int]:
    """Signal every ready process of ``processes``, then read their dumps: the file's own
    process (``root_pid``) first, then by pid, at most :data:`MAX_PROCESSES` of them; returns
    them and how many more dumped."""
    import psutil

    if DUMP_SIGNAL is None:
        return [], 0
    ready: dict[int, tuple[psutil.Process, Path, int]] = {}
    for proc in processes:
        path = dump_file(proc.pid)
        try:
            before = path.stat().st_size
        except OSError:
            continue
        if catches_signal(proc.pid, DUMP_SIGNAL):
            ready[proc.pid] = (proc, path, before)
    for proc, _, _ in ready.values():
        with contextlib.suppress(psutil.Error):
            proc.send_signal(DUMP_SIGNAL)
    _wait_for({pid: (path, before) for pid, (_, path, before) in ready.items()})
    stacks = []
    for pid in sorted(ready, key=lambda pid: (pid != root_pid, pid)):
        proc, path, before = ready[pid]
        text, cut = read_tail(path, STACK_BYTES_PER_PROCESS)
        if not text.strip():
            continue
        if cut:
            text = "[... earlier frames cut ...]\n" + text
        stacks.append(ProcessStack(pid, _command(proc), text.rstrip("\n")))
    return stacks[:MAX_PROCESSES], max(0, len(stacks) - MAX_PROCESSES)


def _wait_for(files: dict[int, tuple[Path, int]]) -> None:
    """Until every dump has grown and then kept its size for one poll, or the wait is over."""
    deadline = time.monotonic() + DUMP_WAIT_SECONDS
    last: dict[int, int] = {}
    while files and time.monotonic() < deadline:
        time.sleep(_POLL_SECONDS)
        settled = True
        for pid, (path, before) in files.items():
            try:
                size = path.stat().st_size
            except OSError:
                continue
            if size <= before or last.get(pid) != size:
                settled = False
            last[pid] = size
        if settled:
            return


def format_stacks(stacks: tuple[ProcessStack, ...] | list[ProcessStack], more: int = 0) -> str:
    """The dumps as one text block: a header line per process, then its threads."""
    parts = [f"--- process {s.pid}: {s.command}\n{s.text}" for s in stacks]
    if more:
        parts.append(f"--- and {more} more process(es) whose stacks are not shown")
    return "\n\n".join(parts)
