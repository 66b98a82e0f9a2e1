"""Generated process trees for the process-ownership tests (not a test file).

:func:`write_node` puts ``node.py`` in a tree: ``python node.py MARKER SPEC`` becomes one node
of a process tree described by the JSON ``SPEC``, and starts the nodes below it. Every process
carries ``MARKER`` in its argv (forked ones inherit it), so
:func:`execution_tree.processes_with_marker` finds them whatever they did to their environment.

A spec is a dict; every key is optional:

* ``children``: specs of nodes this one starts (``python node.py ...``);
* ``detach``: started through an intermediate process that exits at once (an orphan);
* ``setsid``: started in a session of its own; ``clear_env``: started with an empty
  environment; ``ignore_term``: ignores SIGTERM;
* ``threads``: that many threads, each forking 3 sleeping children at the same time;
* ``bomb``: a fork bomb of that depth (each process forks 2; every second level exits, leaving
  orphans): ``2 ** (bomb + 1) - 2`` processes;
* ``hop``: after starting its children, fork and exit every few milliseconds, forever, touching
  ``beats/MARKER`` next to ``node.py`` at every hop (a chain that hops can dodge a look at the
  process table; it cannot keep its beat file still);
* ``stopped``: stops itself with SIGSTOP once its children are started (unless it hops);
* ``lone_thread``: its main thread exits, leaving a thread that forks a sleeping child every
  20 ms (20 in all): the process looks like a zombie and still forks;
* ``tag``: any text, to find a node by its argv.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from execution_tree import processes_with_marker

NODE_PROGRAM = r"""
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time

MARKER, SPEC = sys.argv[1], json.loads(sys.argv[2])
HOP_SECONDS = 0.003


def forever():
    while True:
        time.sleep(600)


def start(child):
    argv = [sys.executable, __file__, MARKER, json.dumps(child)]
    env = {} if child.get("clear_env") else None
    setsid = bool(child.get("setsid"))
    if not child.get("detach"):
        subprocess.Popen(argv, env=env, start_new_session=setsid)
        return
    pid = os.fork()
    if pid == 0:
        try:
            subprocess.Popen(argv, env=env, start_new_session=setsid)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def forking_thread():
    for _ in range(3):
        if os.fork() == 0:
            forever()


def bomb(depth):
    for _ in range(2):
        if os.fork() == 0:
            if depth > 1:
                bomb(depth - 1)
            if depth % 2 == 0:
                os._exit(0)
            forever()


def hop():
    beat = os.path.join(os.path.dirname(os.path.abspath(__file__)), "beats", MARKER)
    os.makedirs(os.path.dirname(beat), exist_ok=True)
    while True:
        time.sleep(HOP_SECONDS)
        if os.fork() != 0:
            os._exit(0)
        with open(beat, "a"):
            os.utime(beat)


if SPEC.get("ignore_term"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
for child in SPEC.get("children", ()):
    start(child)
threads = [threading.Thread(target=forking_thread) for _ in range(SPEC.get("threads", 0))]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
if SPEC.get("bomb"):
    bomb(SPEC["bomb"])
if SPEC.get("lone_thread"):
    def fork_slowly():
        for _ in range(20):
            time.sleep(0.02)
            if os.fork() == 0:
                forever()
        forever()

    threading.Thread(target=fork_slowly).start()
    ctypes.CDLL(None).pthread_exit(None)
if SPEC.get("hop"):
    hop()
if SPEC.get("stopped"):
    os.kill(os.getpid(), signal.SIGSTOP)
forever()
"""


def write_node(root: Path) -> Path:
    """Write ``node.py`` at the top of the generated tree ``root``; its path."""
    path = root / "node.py"
    path.write_text(NODE_PROGRAM)
    return path


def start_tree_source(node: Path, marker: str, spec: dict) -> str:
    """Source of a ``start_tree()`` that starts ``spec`` as a child of the calling process."""
    return (
        "import subprocess\n\n\n"
        "def start_tree():\n"
        f"    subprocess.Popen([sys.executable, {str(node)!r}, {marker!r}, {json.dumps(spec)!r}])\n"
    )


def beating(node: Path, marker: str, seconds: float = 0.5) -> bool:
    """Whether a hopping process of ``marker`` is still alive: its beat file moves."""
    beat = node.parent / "beats" / marker
    first = beat.stat().st_mtime_ns if beat.exists() else None
    time.sleep(seconds)
    return beat.exists() and beat.stat().st_mtime_ns != first


def survivors(node: Path, marker: str) -> list[str]:
    """What of ``marker`` is still alive: processes seen in three looks, and a moving beat."""
    found: set[str] = set()
    for _ in range(3):
        found.update(f"pid {p.pid}" for p in processes_with_marker(marker))
        time.sleep(0.05)
    if beating(node, marker):
        found.add("a hopping chain (its beat file moves)")
    return sorted(found)
