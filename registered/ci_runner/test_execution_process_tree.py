"""No process a file started survives it: SIGTERM-ignoring children, escaped sessions, daemons."""

import sys
import uuid
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=10, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from execution_tree import make_tree, processes_with_marker, run_suite, script_file  # noqa: E402

SPAWNERS = """
import os
import subprocess
import time

MARKER = "{marker}"
STUBBORN = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"


def spawn_all():
    # 1. a child that ignores SIGTERM
    subprocess.Popen([sys.executable, "-c", STUBBORN, MARKER])
    # 2. a child that moved to its own session
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", MARKER],
                     start_new_session=True)
    # 3. a double-forked daemon in its own session that ignores SIGTERM
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", STUBBORN, MARKER])
        os._exit(0)
    # 4. an escaped child with an empty environment
    subprocess.Popen([sys.executable, "-c", STUBBORN, MARKER], env={{}}, start_new_session=True)
    time.sleep(0.5)  # let them start
"""


def tree_file(marker: str, then: str) -> str:
    body = SPAWNERS.format(marker=marker) + f"\n\ndef main():\n    spawn_all()\n    {then}\n"
    return script_file(body, est=1)


@pytest.fixture
def marker():
    token = f"ci-runner-tree-{uuid.uuid4().hex}"
    yield token
    for proc in processes_with_marker(token):  # never leave anything behind, even on failure
        proc.kill()


def test_timeout_kills_every_descendant(tmp_path, marker):
    root = make_tree(tmp_path, {"test_hangs.py": tree_file(marker, "time.sleep(600)")})
    proc = run_suite(root, "--timeout-per-file", "3", "--kill-grace-seconds", "0.5")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "registered/test_hangs.py  timeout" in proc.stdout
    assert processes_with_marker(marker) == []


def test_processes_left_by_a_passing_file_are_killed(tmp_path, marker):
    root = make_tree(tmp_path, {"test_leaves.py": tree_file(marker, "return 0")})
    proc = run_suite(root, "--kill-grace-seconds", "0.5")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "registered/test_leaves.py  passed" in proc.stdout
    assert "killed 4 leftover process(es)" in proc.stdout
    assert processes_with_marker(marker) == []


HELPERS_THAT_QUIT = """
import multiprocessing
import os
import subprocess
import time


def main():
    # multiprocessing's spawn start method leaves its resource tracker running until this
    # process exits; the child below ends 0.3 s after this file does.
    worker = multiprocessing.get_context("spawn").Process(target=os.getpid)
    worker.start()
    worker.join()
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)", "{marker}"])
    return worker.exitcode
"""


def test_helpers_that_end_with_the_file_are_not_leftovers(tmp_path, marker):
    body = HELPERS_THAT_QUIT.format(marker=marker)
    root = make_tree(tmp_path, {"test_pool.py": script_file(body, est=1)})
    proc = run_suite(root, "--kill-grace-seconds", "0.5")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "registered/test_pool.py  passed" in proc.stdout
    assert "leftover" not in proc.stdout, proc.stdout
    assert processes_with_marker(marker) == []


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
