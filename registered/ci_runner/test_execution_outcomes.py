"""Every file outcome through the real CLI on one generated tree (one run, many assertions)."""

import json
import sys
from pathlib import Path

import pytest
from junitparser import JUnitXml

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=14, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from execution_tree import FLAKY_CASE, make_tree, pytest_file, run_suite, script_file  # noqa: E402
from junit_schema import schema_problems  # noqa: E402

FILES = {
    "test_pass.py": pytest_file(
        """
        def test_one():
            assert 1 + 1 == 2

        def test_two():
            pass

        def test_skipped():
            pytest.skip("not today")
        """,
        est=9,
    ),
    "test_fail.py": pytest_file("def test_bad():\n    assert 1 == 2, 'one is not two'\n", est=8),
    "test_flaky.py": pytest_file("from pathlib import Path\n\n" + FLAKY_CASE, est=7),
    "test_segv.py": script_file(
        "import ctypes\n\n\ndef main():\n    ctypes.string_at(0)\n    return 0\n", est=6
    ),
    "test_no_tests.py": pytest_file("HELPER = 1\n", est=5),
    "test_import_error.py": pytest_file(
        "import definitely_missing_module_xyz  # noqa\n\n\ndef test_x():\n    pass\n", est=4
    ),
    "test_hang.py": pytest_file(
        "import time\n\n\ndef test_sleeps():\n    time.sleep(600)\n", est=3
    ),
    "test_script_ok.py": script_file(
        "def main():\n    print('plain script')\n    return 0\n", est=2
    ),
    "test_non_utf8.py": script_file(
        "def main():\n    sys.stdout.buffer.write(b'bad \\xff\\xfe bytes\\n')\n    return 3\n",
        est=1,
    ),
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = make_tree(tmp_path_factory.mktemp("outcomes"), FILES)
    junit = root / "out" / "junit.xml"
    timings = root / "out" / "timings.jsonl"
    summary = root / "out" / "summary.md"
    proc = run_suite(
        root,
        "--quiet",
        "--continue-on-error",
        "--timeout-per-file", "4",
        "--kill-grace-seconds", "0.5",
        "--enable-retry", "--max-attempts", "2", "--retry-wait-seconds", "0",
        "--junit-xml", str(junit),
        "--timings-out", str(timings),
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    records = {
        json.loads(line)["path"].removeprefix("registered/"): json.loads(line)
        for line in timings.read_text().splitlines()
    }
    return proc, records, junit, summary


EXPECTED = {
    "test_pass.py": ("passed", 1),
    "test_fail.py": ("failed", 2),
    "test_flaky.py": ("flaky", 2),
    "test_segv.py": ("crashed", 2),
    "test_no_tests.py": ("no_tests", 1),
    "test_import_error.py": ("failed", 1),
    "test_hang.py": ("timeout", 1),
    "test_script_ok.py": ("passed", 1),
    "test_non_utf8.py": ("failed", 2),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_status_and_attempts(run, name):
    _, records, _, _ = run
    status, attempts = EXPECTED[name]
    assert (records[name]["status"], records[name]["attempts"]) == (status, attempts)


def test_exit_code_is_one_for_failures(run):
    proc, *_ = run
    assert proc.returncode == 1, proc.stderr


def test_reasons_name_the_cause(run):
    _, records, _, _ = run
    assert records["test_segv.py"]["reason"] == "killed by SIGSEGV"
    assert records["test_no_tests.py"]["reason"] == "pytest ran no test case (collected 0, exit 5)"
    assert (
        "ModuleNotFoundError: No module named 'definitely_missing_module_xyz'"
        in (records["test_import_error.py"]["reason"])
    )
    assert records["test_hang.py"]["reason"] == (
        "timed out after 4s limit while running registered/test_hang.py::test_sleeps"
    )
    assert records["test_hang.py"]["timeout"] == 4
    assert records["test_flaky.py"]["reason"].startswith("passed on attempt 2 after:")


def test_timeout_was_enforced_quickly(run):
    _, records, _, _ = run
    assert 4 <= records["test_hang.py"]["elapsed"] < 10


def test_console_lines_and_summary(run):
    proc, *_ = run
    out = proc.stdout
    assert "registered/test_hang.py  timeout" in out
    assert "[limit 4s; running registered/test_hang.py::test_sleeps]" in out
    assert "registered/test_segv.py  crashed" in out and "killed by SIGSEGV" in out
    assert "registered/test_flaky.py  flaky" in out and "attempts 2" in out
    assert "not retried: it cannot be flaky (broken file)" in out
    assert "not retried: it ran no test (retrying cannot change that)" in out
    assert "not retried: timeouts are retried only with --retry-timeouts" in out
    assert "one is not two" in out  # a failing file's output is shown in full
    assert "plain script" not in out  # with --quiet a passing file's output is not
    assert "bad \ufffd\ufffd bytes" in out  # non-UTF-8 bytes replaced, not fatal
    # pass: 2 passed 1 skipped; script_ok 1; flaky 1 passed (final attempt); failures: fail,
    # segv, no_tests, import_error, hang, non_utf8 = 6 failed cases.
    assert out.rstrip().splitlines()[-1] == "summary: 4 passed, 6 failed, 1 skipped"


def test_junit_is_valid_and_has_one_suite_per_file(run):
    _, _, junit, _ = run
    assert schema_problems(junit) == []
    xml = JUnitXml.fromfile(str(junit))
    suites = {s.name.removeprefix("registered/"): s for s in xml}
    assert set(suites) == set(EXPECTED)
    props = {p.name: p.value for p in suites["test_flaky.py"].properties()}
    assert props["status"] == "flaky" and props["attempts"] == "2" and props["shard"] == "0/1"
    assert props["attempt.1"].startswith("failed")
    assert "fails on the first attempt only" in junit.read_text()
    (hang,) = suites["test_hang.py"]
    assert (hang.name, hang.result[0].type) == ("test_sleeps", "timeout")
    assert hang.result[0].message == "timed out after 4s limit while running this case"
    assert "in test_sleeps" in hang.result[0].text  # the stack of the case that hung
    names = sorted(case.name for case in suites["test_pass.py"])
    assert names == ["test_one", "test_skipped", "test_two"]


def test_step_summary_table_and_failures(run):
    _, _, _, summary = run
    text = summary.read_text()
    assert "| file | status | time | est | attempts |" in text
    assert "`registered/test_flaky.py` | ⚠️ flaky" in text
    assert (
        text.index("### Failures (6)") < text.index("### Flaky (1)") < text.index("### Files (9)")
    )
    assert "predicted: this shard" in text


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
