"""Fail-fast (the default) lists what it did not run everywhere; --continue-on-error runs all."""

import json
import sys
from pathlib import Path

import pytest
from junitparser import JUnitXml

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=8, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from execution_tree import make_tree, pytest_file, run_suite  # noqa: E402

FILES = {
    "test_first_fails.py": pytest_file("def test_x():\n    assert False\n", est=3),
    "test_second.py": pytest_file("def test_x():\n    pass\n", est=2),
    "test_third.py": pytest_file("def test_x():\n    pass\n", est=1),
}


def test_fail_fast_lists_not_run_files_in_every_report(tmp_path):
    root = make_tree(tmp_path, FILES)
    junit, timings = tmp_path / "j.xml", tmp_path / "t.jsonl"
    proc = run_suite(root, "--junit-xml", str(junit), "--timings-out", str(timings))
    assert proc.returncode == 1
    out = proc.stdout
    assert "fail-fast" in out
    assert "not run:\n  registered/test_second.py [not_run]: not started: fail-fast after " in out
    assert "registered/test_third.py [not_run]" in out
    assert out.rstrip().splitlines()[-1] == "summary: 0 passed, 1 failed, 2 skipped"
    statuses = {
        json.loads(line)["path"]: json.loads(line)["status"]
        for line in timings.read_text().splitlines()
    }
    assert statuses == {
        "registered/test_first_fails.py": "failed",
        "registered/test_second.py": "not_run",
        "registered/test_third.py": "not_run",
    }
    suites = {s.name: s for s in JUnitXml.fromfile(str(junit))}
    case = next(iter(suites["registered/test_third.py"]))
    assert case.result[0].message.startswith("not_run: not started: fail-fast after")
    assert {p.name: p.value for p in suites["registered/test_third.py"].properties()}[
        "status"
    ] == "not_run"


def test_continue_on_error_runs_everything(tmp_path):
    root = make_tree(tmp_path, FILES)
    proc = run_suite(root, "--continue-on-error")
    assert proc.returncode == 1
    assert "not run:" not in proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1] == "summary: 2 passed, 1 failed, 0 skipped"


FLAKY = pytest_file(
    """
    from pathlib import Path

    def test_second_time_lucky():
        marker = Path(__file__).with_suffix(".ran")
        first = not marker.exists()
        marker.write_text("x")
        assert not first
    """
)


@pytest.mark.parametrize(("extra", "code"), [((), 0), (("--fail-on-flaky",), 1)])
def test_flaky_passes_unless_fail_on_flaky(tmp_path, extra, code):
    root = make_tree(tmp_path, {"test_flaky.py": FLAKY})
    proc = run_suite(root, "--enable-retry", "--retry-wait-seconds", "0", *extra)
    assert proc.returncode == code, proc.stdout
    assert "registered/test_flaky.py  flaky" in proc.stdout


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
