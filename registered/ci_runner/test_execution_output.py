"""50 MB of output (with bytes that are not UTF-8): shown in full, bounded memory, bounded JUnit.
A file that sabotages its own output (its log swapped for a FIFO, the runner's temporary
directory removed) neither hangs the runner nor is blamed on the next file."""

import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=4, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from execution_tree import RUN_SUITE, make_tree, run_suite, runner_env, script_file  # noqa: E402

MB = 1024 * 1024
LOUD = script_file(
    "def main():\n"
    "    chunk = (b'x' * 1023 + b'\\n') * 1024\n"
    "    for _ in range(50):\n"
    "        sys.stdout.buffer.write(chunk)\n"
    "    sys.stdout.buffer.write(b'\\xff\\xfe end of the loud file\\n')\n"
    "    return 1\n",
    est=1,
)


def peak_rss(pid: int, stop: threading.Event, peaks: list[int]) -> None:
    proc = psutil.Process(pid)
    while not stop.is_set():
        try:
            peaks.append(proc.memory_info().rss)
        except psutil.Error:
            return
        stop.wait(0.02)


@pytest.fixture(scope="module")
def loud_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("loud")
    root = make_tree(tmp / "tree", {"test_loud.py": LOUD})
    console, junit = tmp / "console.txt", tmp / "junit.xml"
    peaks: list[int] = []
    stop = threading.Event()
    with open(console, "wb") as out:
        runner = subprocess.Popen(
            [sys.executable, str(RUN_SUITE), "--root", str(root), "--hw", "cpu", "--suite",
             "cpu-suite", "--junit-xml", str(junit)],
            stdout=out, stderr=subprocess.STDOUT, env=runner_env(),
        )  # fmt: skip
        sampler = threading.Thread(target=peak_rss, args=(runner.pid, stop, peaks))
        sampler.start()
        code = runner.wait(timeout=120)
        stop.set()
        sampler.join()
    return code, console, junit, max(peaks)


def test_failing_output_is_shown_in_full(loud_run):
    code, console, _, _ = loud_run
    assert code == 1
    assert console.stat().st_size > 50 * MB
    with open(console, "rb") as handle:
        handle.seek(-4096, 2)
        tail = handle.read().decode("utf-8")
    assert "\ufffd\ufffd end of the loud file" in tail
    assert tail.rstrip().splitlines()[-1] == "summary: 0 passed, 1 failed, 0 skipped"


def test_runner_memory_stays_bounded(loud_run):
    *_, peak = loud_run
    assert peak < 80 * MB, f"runner peaked at {peak / MB:.0f} MB"


def test_junit_keeps_a_bounded_tail(loud_run):
    _, _, junit, _ = loud_run
    text = junit.read_text(encoding="utf-8")
    assert len(text) < 512 * 1024
    assert "output truncated" in text and "end of the loud file" in text


SWAPS_ITS_LOG = script_file(
    "import os\n\n\ndef main():\n    print('before the swap', flush=True)\n"
    "    log = os.readlink('/proc/self/fd/1')\n    os.unlink(log)\n    os.mkfifo(log)\n"
    "    return 1\n",
    est=5,
)
REMOVES_THE_WORKDIR = script_file(
    "import os\nimport shutil\n\n\ndef main():\n"
    "    shutil.rmtree(os.path.dirname(os.environ['CI_RUNNER_CASE_RECORD']))\n    return 0\n",
    est=5,
)


def test_a_file_that_swaps_its_log_for_a_fifo_does_not_hang_the_runner(tmp_path):
    root = make_tree(tmp_path, {"test_swap.py": SWAPS_ITS_LOG, "test_next.py": script_file("def main():\n    return 0\n")})  # fmt: skip
    result = run_suite(root, "--continue-on-error", timeout=60)
    assert result.returncode == 1
    assert "registered/test_swap.py [failed]: exit code 1" in result.stdout
    assert result.stdout.rstrip().endswith("summary: 1 passed, 1 failed, 0 skipped")


def test_a_file_that_removes_the_runners_workdir_is_not_blamed_on_the_next(tmp_path):
    root = make_tree(tmp_path, {"test_rm.py": REMOVES_THE_WORKDIR, "test_next.py": script_file("def main():\n    return 0\n")})  # fmt: skip
    result = run_suite(root, timeout=60)
    assert result.returncode == 0, result.stdout
    assert result.stdout.rstrip().endswith("summary: 2 passed, 0 failed, 0 skipped")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
