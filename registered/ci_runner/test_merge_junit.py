"""The aggregate check: merged JUnit vs the plan (lost, doubled, unplanned, failing files)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from junitparser import JUnitXml, TestCase, TestSuite

from ci_runner import register_cpu_ci
from ci_runner.maintenance.junit_merge import main

register_cpu_ci(est_time=4, suite="base-a-test-cpu")

ROOT = Path(__file__).resolve().parents[2]


def write_plan(path: Path, files: list[tuple[str, str]], disabled=()) -> Path:
    path.write_text(
        json.dumps(
            {
                "files": [{"path": p, "suite": s, "est_time": 10} for p, s in files],
                "disabled": [{"path": p, "suite": s, "reason": "r"} for p, s in disabled],
                "shards": [],
            }
        )
    )
    return path


def write_report(path: Path, rows: list[tuple[str, str, str]], shard: str = "1/2") -> Path:
    xml = JUnitXml()
    for file_path, suite, status in rows:
        ts = TestSuite(file_path)
        for name, value in (
            ("path", file_path),
            ("suite", suite),
            ("status", status),
            ("shard", shard),
            ("elapsed", "4.5"),
        ):
            ts.add_property(name, value)
        ts.add_testcase(TestCase(file_path))
        xml.add_testsuite(ts)
    path.parent.mkdir(parents=True, exist_ok=True)
    xml.write(str(path))
    return path


S = "base-b-kernel-unit-1-gpu-large"


def test_complete_and_green(tmp_path, capsys, monkeypatch):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    plan = write_plan(tmp_path / "plan.json", [("a.py", S), ("b.py", S)], disabled=[("d.py", S)])
    reports = tmp_path / "reports"
    write_report(reports / "s0" / "junit.xml", [("a.py", S, "passed"), ("d.py", S, "disabled")])
    write_report(reports / "s1" / "junit.xml", [("b.py", S, "flaky"), ("d.py", S, "disabled")])
    out = tmp_path / "merged.xml"
    code = main(["--plan", str(plan), "--junit-dir", str(reports), "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "OK: every planned file ran exactly once and passed" in text
    merged = list(JUnitXml.fromfile(str(out)))
    assert sorted(ts.name for ts in merged) == ["a.py", "b.py", "d.py"]  # disabled once
    assert "### Aggregate check" in summary.read_text()


def test_lost_doubled_and_unplanned_files_fail_with_a_list(tmp_path, capsys):
    plan = write_plan(tmp_path / "plan.json", [("a.py", S), ("b.py", S), ("c.py", S)])
    reports = tmp_path / "reports"
    write_report(reports / "s0.xml", [("a.py", S, "passed")], shard="1/2")
    write_report(reports / "s1.xml", [("a.py", S, "passed"), ("x.py", S, "passed")], shard="2/2")
    write_report(reports / "s2.xml", [("b.py", S, "passed")])
    code = main(["--plan", str(plan), "--junit-dir", str(reports)])
    text = capsys.readouterr().out
    assert code == 1
    assert "MISSING: 1 planned file(s) have no report (lost):" in text
    assert f"c.py [{S}]" in text
    assert "DUPLICATED: 1 file(s) ran more than once:" in text
    assert "a.py [base-b-kernel-unit-1-gpu-large]: 2x in shard 1/2 (s0.xml), shard 2/2" in text
    assert "UNPLANNED: 1 report(s) for files not in the plan:" in text
    assert "x.py" in text
    assert text.rstrip().endswith("FAILED")


def test_same_file_in_two_suites_is_two_planned_runs(tmp_path, capsys):
    other = "base-b-kernel-unit-1-gpu-b200"
    plans = tmp_path / "plans"
    plans.mkdir()
    write_plan(plans / "unit.json", [("a.py", S)])
    write_plan(plans / "b200.json", [("a.py", other)])
    reports = tmp_path / "reports"
    write_report(reports / "u.xml", [("a.py", S, "passed")])
    write_report(reports / "b.xml", [("a.py", other, "passed")])
    assert main(["--plan", str(plans), "--junit-dir", str(reports)]) == 0, capsys.readouterr()


def test_failing_file_fails_the_check(tmp_path, capsys):
    plan = write_plan(tmp_path / "plan.json", [("a.py", S), ("b.py", S)])
    reports = tmp_path / "reports"
    write_report(reports / "s0.xml", [("a.py", S, "timeout"), ("b.py", S, "not_run")])
    assert main(["--plan", str(plan), "--junit-dir", str(reports)]) == 1
    text = capsys.readouterr().out
    assert "NOT PASSING: 2 file(s):" in text
    assert f"a.py [{S}]: timeout" in text
    assert f"b.py [{S}]: not_run" in text


def test_a_no_tests_file_fails_the_check_unless_its_shard_tolerated_it(tmp_path, capsys):
    plan = write_plan(tmp_path / "plan.json", [("a.py", S), ("b.py", S)])
    report = write_report(
        tmp_path / "reports" / "s0.xml", [("a.py", S, "no_tests"), ("b.py", S, "no_tests")]
    )
    text = report.read_text().replace(
        'value="a.py" /><property name="suite"',
        'value="a.py" /><property name="tolerated" value="kept exit status 0" /><property name="suite"',
    )
    report.write_text(text)
    assert main(["--plan", str(plan), "--junit-dir", str(tmp_path / "reports")]) == 1
    out = capsys.readouterr().out
    assert "NOT PASSING: 1 file(s):" in out and f"b.py [{S}]: no_tests" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"shards": []}', "not a dry-run plan"),
        ('{"files": [42]}', "files[0]: expected a path or an object with 'path', got 42"),
    ],
)
def test_bad_plan_exits_2_naming_the_file(tmp_path, capsys, content, message):
    plan = tmp_path / "plan.json"
    plan.write_text(content)
    (tmp_path / "r").mkdir()
    assert main(["--plan", str(plan), "--junit-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert str(plan) in err
    assert message in err


def test_missing_inputs_and_bad_xml_exit_2(tmp_path, capsys):
    assert main(["--plan", str(tmp_path / "nope.json"), "--junit-dir", str(tmp_path)]) == 2
    assert "plan file not found" in capsys.readouterr().err
    plan = write_plan(tmp_path / "plan.json", [("a.py", S)])
    assert main(["--plan", str(plan), "--junit-dir", str(tmp_path / "none")]) == 2
    assert "JUnit directory not found (--junit-dir)" in capsys.readouterr().err
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "broken.xml").write_text("<testsuites><testsuite")
    assert main(["--plan", str(plan), "--junit-dir", str(reports)]) == 2
    assert "broken.xml: not a readable JUnit XML file" in capsys.readouterr().err


def test_script_entry_point_propagates_exit_code(tmp_path):
    plan = write_plan(tmp_path / "plan.json", [("a.py", S)])
    (tmp_path / "reports").mkdir()
    proc = subprocess.run(
        [
            sys.executable,
            *("-m", "ci_runner.maintenance", "merge-junit"),
            *("--plan", str(plan), "--junit-dir", str(tmp_path / "reports")),
        ],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 1, proc.stderr
    assert "MISSING: 1 planned file(s)" in proc.stdout


TEST_FILE = """\
import sys

from ci_runner import register_cpu_ci

register_cpu_ci(est_time={est}, suite="cpu-x")

if __name__ == "__main__":
    sys.exit({code})
"""


def test_contract_with_the_real_runner(tmp_path, capsys, monkeypatch):
    """Plans from --dry-run --format json and shards' --junit-xml, as the workflows produce them."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ci-runner]\n[[tool.ci-runner.suites]]\nname = "cpu-x"\nhw = "cpu"\n'
        "gpus-per-file = 0\n"
    )
    (tmp_path / "registered").mkdir()
    for name, est, code in (("a", 5, 0), ("b", 4, 0), ("c", 3, 1)):
        (tmp_path / "registered" / f"test_{name}.py").write_text(
            TEST_FILE.format(est=est, code=code)
        )
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the fixture's tests import ci_runner
    base = [sys.executable, str(ROOT / "run_suite.py"), "--root", str(tmp_path)]
    base += ["--hw", "cpu", "--suite", "cpu-x"]
    plan = subprocess.run([*base, "--dry-run", "--format", "json"], capture_output=True, text=True)
    assert plan.returncode == 0, plan.stderr
    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "cpu-x.json").write_text(plan.stdout)
    for shard in (0, 1):
        partition = ["--auto-partition-id", str(shard), "--auto-partition-size", "2"]
        report = ["--junit-xml", str(tmp_path / "reports" / f"s{shard}" / "junit.xml")]
        subprocess.run([*base, *partition, "--continue-on-error", *report], capture_output=True)
    args = ["--plan", str(tmp_path / "plans"), "--junit-dir", str(tmp_path / "reports")]
    assert main(args) == 1
    text = capsys.readouterr().out
    assert "3 report entries: 1 failed, 2 passed" in text
    assert "MISSING" not in text and "DUPLICATED" not in text and "UNPLANNED" not in text
    assert (
        "registered/test_c.py [cpu-x]: failed (shard 1/2" in text
        or "test_c.py [cpu-x]: failed" in text
    )
    # A shard that ran the whole suite (the forgotten-partition-flags bug) is caught.
    subprocess.run(
        [*base, "--continue-on-error", "--junit-xml", str(tmp_path / "reports" / "all.xml")]
    )
    assert main(args) == 1
    assert "DUPLICATED: 3 file(s) ran more than once:" in capsys.readouterr().out


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
