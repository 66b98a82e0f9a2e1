"""SIGTERM/SIGHUP/SIGINT to the runner: running trees die, the rest is not_run, reports exist."""

import json
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from junitparser import JUnitXml

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=6, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from execution_tree import (  # noqa: E402
    RUN_SUITE,
    make_tree,
    processes_with_marker,
    pytest_file,
    runner_env,
    script_file,
)


def slow_file(marker: str) -> str:
    return script_file(
        "import subprocess\nimport time\n\n\ndef main():\n"
        f"    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', '{marker}'],"
        " start_new_session=True)\n"
        "    time.sleep(600)\n    return 0\n",
        est=9,
    )


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)]
)
def test_signal_stops_the_run_and_writes_reports(tmp_path, signum, code):
    marker = f"ci-runner-signal-{uuid.uuid4().hex}"
    root = make_tree(
        tmp_path,
        {
            "test_slow.py": slow_file(marker),
            "test_later.py": pytest_file("def test_x():\n    pass\n", est=1),
        },
    )
    junit, timings = tmp_path / "j.xml", tmp_path / "t.jsonl"
    log = tmp_path / "console.txt"
    with open(log, "w") as out:
        runner = subprocess.Popen(
            [sys.executable, str(RUN_SUITE), "--root", str(root), "--hw", "cpu", "--suite",
             "cpu-suite", "--kill-grace-seconds", "0.5", "--junit-xml", str(junit),
             "--timings-out", str(timings)],
            stdout=out, stderr=subprocess.STDOUT, env=runner_env(),
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while not processes_with_marker(marker) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert processes_with_marker(marker), "the slow file never started its child"
            runner.send_signal(signum)
            assert runner.wait(timeout=30) == code
        finally:
            runner.kill()
            for proc in processes_with_marker(marker):
                proc.kill()
    text = log.read_text()
    name = signal.Signals(signum).name
    assert processes_with_marker(marker) == []
    assert f"registered/test_slow.py [not_run]: interrupted by {name} after" in text
    assert (
        f"registered/test_later.py [not_run]: not started: the run was interrupted by {name}"
        in (text)
    )
    assert f"interrupted by {name}\nexit code {code}" in text
    assert text.rstrip().splitlines()[-1] == "summary: 0 passed, 0 failed, 2 skipped"
    statuses = [json.loads(line)["status"] for line in timings.read_text().splitlines()]
    assert statuses == ["not_run", "not_run"]
    assert len(list(JUnitXml.fromfile(str(junit)))) == 2


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
