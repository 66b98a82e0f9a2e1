"""Watching a run: start lines, live output (prefixed when files run side by side, off with
--quiet), heartbeats for late files at a rate that cannot flood a log, and a console whose
reader went away (``| head``) ending the run quietly."""

import itertools
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci
from ci_runner.execution.listener import AttemptStart
from ci_runner.reports.console import start_line
from ci_runner.reports.live import HEARTBEATS_PER_ATTEMPT, LiveOutput, heartbeat_interval

register_cpu_ci(est_time=10, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from execution_tree import (  # noqa: E402
    RUN_SUITE,
    make_tree,
    processes_with_marker,
    run_suite,
    runner_env,
    script_file,
)

SLOW_UNITTEST = (
    "import sys\nimport time\nimport unittest\n\nfrom ci_runner import register_cpu_ci\n\n"
    'register_cpu_ci(est_time=1, suite="cpu-suite")\n\n\n'
    "class TestSlow(unittest.TestCase):\n"
    "    def test_slow(self):\n"
    "        print('step 1 of 2', flush=True)\n"
    "        time.sleep(2.5)\n\n\n"
    'if __name__ == "__main__":\n    unittest.main()\n'
)


def printer(name: str) -> str:
    return script_file(
        "import time\n\n\ndef main():\n"
        f"    print('{name} first', flush=True)\n    time.sleep(0.8)\n"
        f"    print('{name} second', flush=True)\n    return 0\n",
        est=2,
    )


def test_side_by_side_files_stream_prefixed_lines(tmp_path):
    root = make_tree(tmp_path, {"test_a.py": printer("alpha"), "test_b.py": printer("beta")})
    proc = run_suite(root, "--gpus", "2")
    assert proc.returncode == 0, proc.stdout
    lines = proc.stdout.splitlines()
    for name, word in (("test_a.py", "alpha"), ("test_b.py", "beta")):
        assert f"registered/{name} | {word} first" in lines
        assert f"registered/{name} | {word} second" in lines
    starts = [line for line in lines if " start registered/" in line]
    assert sorted(starts) == [
        "[1/2] start registered/test_a.py (est 2s)",
        "[2/2] start registered/test_b.py (est 2s)",
    ] or sorted(starts) == [
        "[1/2] start registered/test_b.py (est 2s)",
        "[2/2] start registered/test_a.py (est 2s)",
    ]


@pytest.fixture(scope="module")
def slow_tree(tmp_path_factory):
    return make_tree(tmp_path_factory.mktemp("slow"), {"test_slow.py": SLOW_UNITTEST})


def test_a_late_file_gets_a_heartbeat_naming_its_case_and_last_line(slow_tree):
    proc = run_suite(slow_tree)
    assert proc.returncode == 0, proc.stdout
    lines = proc.stdout.splitlines()
    assert "[1/1] start registered/test_slow.py (est 1s)" in lines
    assert "step 1 of 2" in lines  # streamed as it is, one slot: no prefix
    beats = [line for line in lines if line.startswith("[1/1] running ")]
    assert len(beats) == 1, proc.stdout  # the next would be 60 s later
    assert beats[0].startswith("[1/1] running registered/test_slow.py for 1.")
    assert beats[0].endswith(
        "(est 1s, limit 1m00s); case: registered/test_slow.py::TestSlow::test_slow; "
        "last output: step 1 of 2"
    )
    assert lines.index("step 1 of 2") < lines.index(beats[0])


def test_quiet_keeps_start_lines_and_heartbeats_but_streams_nothing(slow_tree):
    proc = run_suite(slow_tree, "--quiet")
    lines = proc.stdout.splitlines()
    assert "[1/1] start registered/test_slow.py (est 1s)" in lines
    assert any(line.startswith("[1/1] running registered/test_slow.py for ") for line in lines)
    assert "step 1 of 2" not in lines  # a passing file's output is not shown (only quoted)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("est", "limit"), [(1, 60), (30, 1200), (600, 1860), (100, 15100)])
def test_heartbeats_are_few_and_at_least_a_minute_apart(tmp_path, est, limit):
    lines: list[str] = []
    clock = FakeClock()
    live = LiveOutput(lambda text, streamed: lines.append(text), stream=False, clock=clock)
    start = AttemptStart("t.py", 1, 1, est, limit, (), tmp_path / "o", tmp_path / "r", 0.0)
    live.follow(start, "[1/1]")
    (followed,) = live._followed.values()
    beats = []
    while clock.now < limit:
        clock.now += 1.0
        before = len(lines)
        live._beat(followed)
        if len(lines) > before:
            beats.append(clock.now)
    assert beats[0] == max(est, 1.0)
    assert all(later - earlier >= 60 for earlier, later in itertools.pairwise(beats))
    assert len(beats) <= HEARTBEATS_PER_ATTEMPT + 1
    assert heartbeat_interval(est, limit) == max(60, (limit - est) / 20)


def test_start_line_names_the_attempt_and_the_gpus(tmp_path):
    start = AttemptStart("registered/t.py", 2, 3, 30, 90, ("4", "5"), tmp_path, tmp_path, 0.0)
    assert (
        start_line(start, "[3/9]") == "[3/9] start registered/t.py (est 30s) attempt 2/3 [GPU 4,5]"
    )


def test_output_piped_into_head_ends_the_run_quietly(tmp_path):
    marker = f"loud-{uuid.uuid4().hex[:8]}"
    loud = script_file(
        f"import time\n\nMARK = '{marker}'\n\n\ndef main():\n"
        "    for i in range(100000):\n        print('line', i, flush=True)\n"
        "        time.sleep(0.001)\n    return 0\n",
        est=60,
    )
    root = make_tree(tmp_path, {"test_loud.py": loud})
    argv = [
        sys.executable,
        str(RUN_SUITE),
        "--root",
        str(root),
        "--hw",
        "cpu",
        "--suite",
        "cpu-suite",
    ]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=runner_env(), text=True
    )
    for _ in range(20):  # the header, the plan, the start line and some output: like head
        proc.stdout.readline()
    proc.stdout.close()
    code = proc.wait(timeout=60)
    assert code == 141  # 128 + SIGPIPE, as a Unix tool that died of it
    assert proc.stderr.read() == ""  # no traceback, no "Exception ignored"
    assert processes_with_marker(marker) == []
    dry = subprocess.Popen(
        [*argv, "--dry-run"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=runner_env()
    )
    dry.stdout.close()
    assert dry.wait(timeout=60) in (0, 141)
    assert dry.stderr.read() == b""


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
