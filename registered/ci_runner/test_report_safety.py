"""Reports stay well-formed whatever names and texts they carry. Property tests (hypothesis) send
arbitrary file names, suite names, reasons, case names and outputs (control characters, lone
surrogates from non-UTF-8 names, XML-invalid characters, Markdown and HTML syntax) through every
format: the console, JUnit XML, timings JSON lines, the step summary and the merged JUnit of
``merge-junit``. And a failing file is always counted, never ``0 passed, 0 failed, 0 skipped``."""

import io
import json
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from junitparser import JUnitXml

from ci_runner import register_cpu_ci
from ci_runner.maintenance.junit_merge import check, load_plan, load_reports
from ci_runner.model import (
    STATUSES,
    AttemptResult,
    CaseResult,
    FileResult,
    RunInfo,
    ShardOutcome,
    case_counts,
)
from ci_runner.reports import ConsoleReport
from ci_runner.reports.github import GitHubContext, failing_cases
from ci_runner.reports.junit import write_junit
from ci_runner.reports.step_summary import MAX_CASE_ROWS, render_step_summary
from ci_runner.reports.timings import write_timings
from ci_runner.safe_text import one_line, printable, xml_safe

sys.path.insert(0, str(Path(__file__).parent))
from execution_tree import make_tree, pytest_file, run_suite, runner_env, script_file
from junit_schema import schema_problems

register_cpu_ci(est_time=6, suite="base-a-test-cpu")

PROPERTY = settings(max_examples=50, deadline=None, database=None, derandomize=True)
CHARACTERS = st.one_of(
    st.characters(exclude_categories=()),
    st.integers(0xD800, 0xDFFF).map(chr),  # what a non-UTF-8 file name becomes in Python
    st.sampled_from(["\x1b", "\x00", "\n", "\r", "\t", "`", "|", "<", ">", "&", "]", "\ufffe"]),
)
TEXT = st.text(CHARACTERS, max_size=24)
NAMES = st.text(CHARACTERS, min_size=1, max_size=24)
CASE = st.builds(
    CaseResult, name=TEXT, classname=TEXT, time=st.floats(0, 1e4), message=TEXT, text=TEXT,
    outcome=st.sampled_from(["passed", "failed", "error", "skipped"]), type=TEXT,
    case_id=TEXT, file=TEXT, line=st.integers(0, 10**6),
)  # fmt: skip
GITHUB = GitHubContext("https://github.com", "o/r", "abc", "1", "2")


@st.composite
def results(draw) -> list[FileResult]:
    """Up to 5 files with arbitrary names and texts (distinct as reports spell them)."""
    paths = draw(st.lists(NAMES, min_size=1, max_size=5, unique_by=xml_safe))
    suite = draw(NAMES)
    out: list[FileResult] = []
    for path in paths:
        status = draw(st.sampled_from(STATUSES))
        attempt = AttemptResult(
            number=1, status=status, elapsed=1.0, exit_code=1, reason=draw(TEXT), retriable=False,
            cases=(), is_pytest=True, output_path="", output_bytes=0, output_tail=draw(TEXT),
            tail_truncated=False, timeout_limit=60,
        )  # fmt: skip
        result = FileResult(
            path=path, suite=suite, est_time=draw(st.floats(0, 604800)), status=status,
            elapsed=draw(st.floats(0, 1e5)), attempts=(attempt,), reason=draw(TEXT),
            gpu_ids=tuple(draw(st.lists(TEXT, max_size=2))),
            cases=tuple(draw(st.lists(CASE, max_size=3))),
            tolerated=draw(st.sampled_from(["", "kept exit status 0"])) if status == "no_tests" else "",
        )  # fmt: skip
        out.append(result)
    return out


def info_for(suite: str) -> RunInfo:
    return RunInfo(
        hw="cpu", suites=(suite,), nightly=False, shard_id=0, shard_count=1, plan_hash="0" * 16,
        predicted_makespan=1, shard_est_total=1, lower_bound=1, slots="1 slot", mode="fail-fast",
    )  # fmt: skip


def check_junit(path: Path, files: list[FileResult]) -> None:
    write_junit(path, files, info_for(files[0].suite))
    root = ET.parse(path).getroot()  # well-formed, or this raises
    assert [s.get("name") for s in root] == [xml_safe(r.path) for r in files]
    assert schema_problems(path) == []
    failures = sum(int(s.get("failures")) + int(s.get("errors")) for s in root)
    assert failures == case_counts(files)[1]


def check_timings(path: Path, files: list[FileResult]) -> None:
    write_timings(path, files, info_for(files[0].suite))
    lines = path.read_bytes().decode("utf-8").splitlines()  # strict UTF-8
    rows = [json.loads(line) for line in lines]
    assert [row["path"] for row in rows] == [printable(r.path) for r in files]
    assert [row["status"] for row in rows] == [r.status for r in files]


def _table_rows(text: str, heading: str) -> list[str]:
    """The table rows of the section headed ``### <heading> (...)``; [] without that section."""
    if f"### {heading} (" not in text:
        return []
    section = text.split(f"### {heading} (", 1)[1].split("\n### ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| ")]


def check_step_summary(outcome: ShardOutcome) -> None:
    text = render_step_summary(outcome, GITHUB)
    text.encode("utf-8")  # strict: no lone surrogate reaches the file
    rows = _table_rows(text, "Files")
    assert len(rows) == 2 + len(outcome.results)  # header, rule, then one row per file
    failing = sum(len(failing_cases(r)) for r in outcome.failing)
    shown = failing if failing <= MAX_CASE_ROWS else MAX_CASE_ROWS + 1
    assert len(_table_rows(text, "Failures")) == (2 + shown if failing else 0)
    assert "\x1b" not in text and "\x00" not in text


def check_console(outcome: ShardOutcome) -> None:
    stream, files = io.StringIO(), outcome.results
    console = ConsoleReport(stream)
    for index, result in enumerate(files, start=1):
        console.file_finished(result, index, len(files))
    console.finish(outcome)
    lines = stream.getvalue().splitlines()
    "\n".join(lines).encode("utf-8")
    assert lines[-1] == "summary: {} passed, {} failed, {} skipped".format(*case_counts(files))
    assert sum(line.startswith("summary: ") for line in lines) == 1
    live = [line for line in lines if line.startswith("[") and f"/{len(files)}] " in line]
    assert len(live) == len(files)  # one console line per file, whatever its name


def check_merge(tmp: Path, files: list[FileResult]) -> None:
    reports = tmp / "reports"
    write_junit(reports / "shard0" / "junit.xml", files, info_for(files[0].suite))
    plan = {
        "files": [{"path": r.path, "suite": r.suite} for r in files if r.status != "disabled"],
        "disabled": [{"path": r.path, "suite": r.suite} for r in files if r.status == "disabled"],
    }
    (tmp / "plan.json").write_text(json.dumps(plan))  # as --dry-run --format json writes it
    result = check(load_plan([tmp / "plan.json"]), load_reports(reports))
    assert result.missing == [] and result.unplanned == [] and result.duplicated == {}


@PROPERTY
@given(results())
def test_every_report_format_stays_well_formed_whatever_the_names(files):
    outcome = ShardOutcome(info_for(files[0].suite), files, wall=3.0, exit_code=1)
    with tempfile.TemporaryDirectory() as tmp:
        check_junit(Path(tmp) / "junit.xml", files)
        check_timings(Path(tmp) / "timings.jsonl", files)
        check_merge(Path(tmp), files)
    check_step_summary(outcome)
    check_console(outcome)
    stripped = [
        FileResult(r.path, r.suite, r.est_time, r.status, r.elapsed, tolerated=r.tolerated)
        for r in files
    ]
    passed, failed, skipped = case_counts(stripped)  # a failing file counts even without cases
    assert failed == sum(r.failing for r in files)
    assert passed + failed + skipped == len(files)


def test_a_runner_error_without_cases_counts_in_the_summary_and_the_junit(tmp_path):
    error = FileResult(
        "registered/test_x.py", "s", 1, "failed", 0.0, reason="runner error: RuntimeError: boom"
    )
    assert case_counts([error]) == (0, 1, 0)
    write_junit(tmp_path / "j.xml", [error], info_for("s"))
    (suite,) = JUnitXml.fromfile(str(tmp_path / "j.xml"))
    assert (suite.tests, suite.failures) == (1, 1)
    (case,) = suite
    assert case.result[0].message == "runner error: RuntimeError: boom"


ESCAPE_NAME = "test_\x1b[31mred.py"


def test_a_file_named_with_an_escape_code_runs_and_its_reports_merge(tmp_path):
    # a script, not pytest: pytest itself refuses a path with [] in it
    root = make_tree(tmp_path / "repo", {ESCAPE_NAME: script_file("def main():\n    return 0\n")})
    junit, summary = tmp_path / "reports" / "junit.xml", tmp_path / "summary.md"
    result = run_suite(
        root, "--junit-xml", str(junit), "--timings-out", str(tmp_path / "t.jsonl"),
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[1/1] registered/test_\\x1b[31mred.py  passed" in result.stdout  # no raw escape
    assert result.stdout.rstrip().splitlines()[-1] == "summary: 1 passed, 0 failed, 0 skipped"
    ET.parse(junit)
    (row,) = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert row["path"] == f"registered/{ESCAPE_NAME}"  # JSON carries it exactly
    assert "`registered/test_\\x1b[31mred.py`" in summary.read_text()
    plan = run_suite(root, "--dry-run", "--format", "json")
    (tmp_path / "plan.json").write_text(plan.stdout)
    merged = subprocess.run(
        [sys.executable, "-m", "ci_runner.maintenance", "merge-junit", "--plan",
         str(tmp_path / "plan.json"), "--junit-dir", str(junit.parent), "--out",
         str(tmp_path / "merged.xml")],
        capture_output=True, text=True, env=runner_env(), check=False,
    )  # fmt: skip
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert "OK: every planned file ran exactly once and passed" in merged.stdout
    ET.parse(tmp_path / "merged.xml")


WRITES_INTO_ITS_RECORD = """
def test_a():
    with open(os.environ["CI_RUNNER_CASE_RECORD"], "a") as record:
        record.write('{"event": "end", "id": "x", "outcome": "great", "pid": 1, "depth": 0}\\n')
"""


def test_a_case_record_line_that_is_no_record_fails_the_file_as_a_counted_runner_error(tmp_path):
    body = "import os\n\n" + WRITES_INTO_ITS_RECORD
    root = make_tree(tmp_path / "repo", {"test_na.py": pytest_file(body)})
    result = run_suite(root, "--junit-xml", str(tmp_path / "j.xml"))
    assert result.returncode == 1, result.stdout
    assert (
        "registered/test_na.py [failed]: runner error: case record line 4: outcome 'great' is "
        "not one of passed, failed, error, skipped (exit 0)" in result.stdout
    )
    assert result.stdout.rstrip().splitlines()[-1] == "summary: 1 passed, 1 failed, 0 skipped"
    (suite,) = JUnitXml.fromfile(str(tmp_path / "j.xml"))
    assert (suite.tests, suite.failures + suite.errors) == (2, 1)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("test_\udcff.py", "test_\\xff.py"),  # a non-UTF-8 byte, as os.listdir returns it
        ("a\x1b[31mred\nb", "a\\x1b[31mred\\x0ab"),
        ("tab\tkept", "tab\tkept"),
    ],
)
def test_one_line_escapes_what_would_break_a_line_or_an_encoder(text, expected):
    assert one_line(text) == expected


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
