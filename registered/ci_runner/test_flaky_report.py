"""``flaky-report``: flake rates of files and cases over the reports of many runs, first and last
seen, each result counted once (generated reports of four runs)."""

import json
import os
import subprocess
import sys

import pytest

from ci_runner import register_cpu_ci
from ci_runner.maintenance.flaky_report import load_flakes, main

register_cpu_ci(est_time=2, suite="base-a-test-cpu")

PATH = "registered/test_k.py"


def suite_xml(status: str, when: str, cases: str, elapsed: str = "1.000", extra: str = "") -> str:
    return (
        f'<testsuite name="{PATH}" timestamp="{when}" time="{elapsed}"><properties>'
        f'<property name="path" value="{PATH}"/><property name="suite" value="s"/>'
        f'<property name="status" value="{status}"/><property name="shard" value="0/1"/>'
        f'<property name="elapsed" value="{elapsed}"/>{extra}</properties>{cases}</testsuite>'
    )


PASS = '<testcase name="test_a[1]" classname="registered.test_k.TestK"/>'
FLAKY = (
    '<testcase name="test_a[1]" classname="registered.test_k.TestK">'
    '<flakyFailure message="assert 0" type="AssertionError">trace</flakyFailure></testcase>'
)
FAIL = '<testcase name="test_a[1]" classname="registered.test_k.TestK"><failure message="x"/></testcase>'
OTHER = '<testcase name="test_b" classname="test_k"/>'  # pytest's rootdir was registered/
SKIP = '<testcase name="test_b" classname="test_k"><skipped message="no GPU"/></testcase>'

RUNS = {
    "run1/reports-s-0/junit.xml": suite_xml("flaky", "2026-11-20T10:00:00", FLAKY + OTHER),
    "run2/reports-s-0/junit.xml": suite_xml("passed", "2026-11-21T10:00:00", PASS + SKIP),
    "run3/reports-s-0/junit.xml": suite_xml("failed", "2026-11-22T10:00:00", FAIL + OTHER),
    "run4/reports-s-0/junit.xml": suite_xml("flaky", "2026-11-23T10:00:00", FLAKY + OTHER, "2.5"),
    # merge-junit's copy of run 1: the same results, counted once
    "run1/junit-merged/junit.xml": suite_xml("flaky", "2026-11-20T10:00:00", FLAKY + OTHER),
    # carried over by --resume-from: not a run
    "run5/reports-s-0/junit.xml": suite_xml(
        "passed", "2026-11-24T10:00:00", PASS, extra='<property name="resumed" value="true"/>'
    ),
}


@pytest.fixture
def runs(tmp_path):
    for rel, text in RUNS.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"<testsuites>{text}</testsuites>")
    return tmp_path


def report(capsys, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m ci_runner.maintenance flaky-report ARGS`` (in this process)."""
    code = main(list(args))
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, captured.out, captured.err)


def test_files_and_cases_get_their_flake_rate_and_first_and_last_seen(runs):
    data = load_flakes([runs])
    assert data.reports == 6
    assert data.files[PATH].row() == {
        "name": PATH, "runs": 4, "flaky": 2, "failed": 1, "flake_rate": 0.5,
        "first_seen": "2026-11-20T10:00:00", "last_seen": "2026-11-23T10:00:00",
    }  # fmt: skip
    case = data.cases[f"{PATH}::TestK::test_a[1]"].row()
    assert (case["runs"], case["flaky"], case["failed"], case["flake_rate"]) == (4, 2, 1, 0.5)
    other = data.cases[f"{PATH}::test_b"].row()
    assert (other["runs"], other["flaky"], other["first_seen"]) == (3, 0, None)


def test_the_text_report_ranks_by_flake_rate(runs, capsys):
    proc = report(capsys, "--timings", str(runs))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "flaky-report: 6 report file(s), 1 file(s), 2 case(s)"
    assert "cases that flaked or failed: 1 of 2" in lines
    row = next(line for line in lines if line.endswith("::TestK::test_a[1]"))
    assert row.split() == [
        "50.0%", "4", "2", "1", "2026-11-20T10:00:00", "2026-11-23T10:00:00",
        f"{PATH}::TestK::test_a[1]",
    ]  # fmt: skip
    everything = json.loads(
        report(capsys, "--timings", str(runs), "--all", "--format", "json").stdout
    )
    assert [c["name"] for c in everything["cases"]] == [
        f"{PATH}::TestK::test_a[1]",
        f"{PATH}::test_b",
    ]


def test_timings_lines_count_files_and_take_the_file_time(tmp_path):
    rows = [
        {"path": PATH, "suite": "s", "status": status, "elapsed": e, "shard": "0/1",
         "plan_hash": "h"}
        for status, e in (("flaky", 1), ("passed", 2), ("timeout", 3))
    ]  # fmt: skip
    rows.append({**rows[1], "elapsed": 9, "resumed": True})
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    os.utime(path, (1795000000, 1795000000))
    row = load_flakes([tmp_path]).files[PATH].row()
    assert (row["runs"], row["flaky"], row["failed"]) == (3, 1, 1)
    assert row["first_seen"] == row["last_seen"] == "2026-11-18T11:06:40"


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("bad.xml", "<testsuites", "not a readable JUnit XML file"),
        ("bad.jsonl", '{"path": 1}\n', ":1: expected a --timings-out JSON object"),
        ("bad.jsonl", '{"path": "a.py", "status": 3}\n', ":1: path and status must be strings"),
    ],
)
def test_unreadable_reports_are_exit_2_naming_the_file(tmp_path, capsys, name, text, message):
    (tmp_path / name).write_text(text)
    proc = report(capsys, "--timings", str(tmp_path / name))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"flaky-report: error: {tmp_path / name}")
    assert message in proc.stderr


def test_no_reports_is_exit_2(tmp_path, capsys):
    proc = report(capsys, "--timings", str(tmp_path))
    assert proc.returncode == 2 and "no *.xml or *.jsonl reports found" in proc.stderr
    proc = report(capsys, "--timings", str(tmp_path / "missing"))
    assert proc.returncode == 2 and "report file or directory not found" in proc.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
