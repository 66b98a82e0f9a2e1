"""The report formats on hand-made results: JUnit (schema, layout), timings, step summary, console."""

import io
import json
import sys
from pathlib import Path

import pytest
from junitparser import JUnitXml

from ci_runner import register_cpu_ci
from ci_runner.model import (
    AttemptResult,
    CaseResult,
    FileResult,
    RunInfo,
    ShardOutcome,
    placeholder,
)
from ci_runner.reports import ConsoleReport
from ci_runner.reports.console import file_line
from ci_runner.reports.github import MAX_ANNOTATIONS, GitHubContext, annotations
from ci_runner.reports.junit import write_junit, xml_safe
from ci_runner.reports.step_summary import render_step_summary
from ci_runner.reports.timings import write_timings

register_cpu_ci(est_time=4, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from junit_schema import schema_problems  # noqa: E402

INFO = RunInfo(
    hw="cuda", suites=("unit",), nightly=False, shard_id=1, shard_count=4, plan_hash="abc123",
    predicted_makespan=100, shard_est_total=90, lower_bound=80, slots="4 slot(s)", mode="fail-fast",
)  # fmt: skip


def attempt(number, status, reason="", tail="", output_path=""):
    return AttemptResult(
        number=number, status=status, elapsed=1.5, exit_code=1 if status != "passed" else 0,
        reason=reason, retriable=True, cases=(), is_pytest=True, output_path=output_path,
        output_bytes=len(tail), output_tail=tail, tail_truncated=False, timeout_limit=60,
    )  # fmt: skip


def results(tmp_path):
    log = tmp_path / "flaky.log"
    log.write_bytes(b"attempt output \x1b[31mred\x1b[0m\n")
    passed = FileResult(
        "registered/test_ok.py", "unit", 30, "passed", 12.3, (attempt(1, "passed"),),
        cases=(CaseResult("test_a", "registered.test_ok", 0.5, "passed"),),
    )  # fmt: skip
    flaky = FileResult(
        "registered/test_flaky.py", "unit", 20, "flaky", 4.0,
        (attempt(1, "failed", "1 failing test case(s) (exit 1)", "boom \x00\x1b[31m", str(log)),
         attempt(2, "passed")),
        reason="passed on attempt 2 after: 1 failing test case(s) (exit 1)",
        cases=(CaseResult("test_b", "registered.test_flaky", 0.5, "passed"),),
    )  # fmt: skip
    timeout = FileResult(
        "registered/test_hang.py", "unit", 10, "timeout", 60.2,
        (attempt(1, "timeout", "timed out after 60s limit"),), reason="timed out after 60s limit",
        timeout_limit=60,
        cases=(CaseResult("test_hang.py", "registered.test_hang", 60.2, "error",
                          "timed out after 60s limit", "tail", "timeout"),),
    )  # fmt: skip
    return [
        passed,
        flaky,
        timeout,
        placeholder("registered/test_next.py", "unit", 5, "not_run", "not started: fail-fast"),
        placeholder("registered/test_off.py", "unit", 0, "disabled", "broken on B200"),
    ]


def test_junit_layout_and_schema(tmp_path):
    path = tmp_path / "deep" / "junit.xml"
    write_junit(path, results(tmp_path), INFO)
    assert schema_problems(path) == []
    suites = {s.name: s for s in JUnitXml.fromfile(str(path))}
    assert list(suites) == [r.path for r in results(tmp_path)]
    props = {p.name: p.value for p in suites["registered/test_flaky.py"].properties()}
    assert {k: props[k] for k in ("path", "suite", "status", "attempts", "shard", "est_time")} == {
        "path": "registered/test_flaky.py", "suite": "unit", "status": "flaky", "attempts": "2",
        "shard": "1/4", "est_time": "20",
    }  # fmt: skip
    assert props["elapsed"] == "4.000"
    text = path.read_text()
    assert "boom \\x00\\x1b[31m" in text  # control characters escaped, XML stays valid
    hang = next(iter(suites["registered/test_hang.py"]))
    assert (hang.result[0].type, hang.result[0].message) == ("timeout", "timed out after 60s limit")
    off = next(iter(suites["registered/test_off.py"]))
    assert off.result[0].message == "disabled: broken on B200"
    assert suites["registered/test_ok.py"].time == 12.3


def test_xml_safe():
    assert xml_safe("a\x00b\x07c\td\n") == "a\\x00b\\x07c\td\n"


def test_timings_lines(tmp_path):
    path = tmp_path / "t.jsonl"
    write_timings(path, results(tmp_path), INFO)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["status"] for line in lines] == [
        "passed",
        "flaky",
        "timeout",
        "not_run",
        "disabled",
    ]
    first = lines[0]
    assert {k: first[k] for k in ("path", "suite", "est_time", "elapsed", "attempts", "shard")} == {
        "path": "registered/test_ok.py", "suite": "unit", "est_time": 30, "elapsed": 12.3,
        "attempts": 1, "shard": "1/4",
    }  # fmt: skip


def outcome(tmp_path, code=1):
    return ShardOutcome(INFO, results(tmp_path), wall=77.0, exit_code=code)


def test_step_summary(tmp_path):
    text = render_step_summary(outcome(tmp_path))
    assert text.startswith("## run_suite: cuda unit, shard 1/4: failed (exit 1)")
    assert (
        "predicted: this shard 90s of est, slowest shard 100s (lower bound 80s); actual wall 1m17s"
        in text
    )
    assert "| `registered/test_flaky.py` | ⚠️ flaky | 4.0s | 20s | 2 |" in text
    assert "**`registered/test_hang.py`** timeout: timed out after 60s limit" in text
    assert "### Not run (1)" in text and "`registered/test_next.py`: not started: fail-fast" in text


def test_console_line_format():
    result = FileResult("registered/jit/test_x.py", "unit", 30, "passed", 12.3)
    assert file_line(result, 3, 17) == "[3/17] registered/jit/test_x.py  passed  12.3s (est 30s)"


def test_console_groups_output_under_github_actions(tmp_path):
    stream = io.StringIO()
    console = ConsoleReport(stream, github_actions=True, live=False)  # --quiet
    flaky = results(tmp_path)[1]
    console.file_finished(flaky, 2, 5)
    text = stream.getvalue()
    assert "::group::output of registered/test_flaky.py (attempt 1: failed" in text
    assert "attempt output \x1b[31mred" in text and "\n::endgroup::" in text


def test_show_output_prints_passing_output(tmp_path):
    log = tmp_path / "ok.log"
    log.write_text("hello from a passing file\n")
    passed = FileResult(
        "registered/test_ok.py", "unit", 1, "passed", 1.0,
        (attempt(1, "passed", output_path=str(log)),),
    )  # fmt: skip
    quiet, loud = io.StringIO(), io.StringIO()
    ConsoleReport(quiet, live=False).file_finished(passed, 1, 1)
    ConsoleReport(loud, show_output=True, live=False).file_finished(passed, 1, 1)
    assert "hello from a passing file" not in quiet.getvalue()
    assert "hello from a passing file" in loud.getvalue()


def test_console_table_and_summary_line(tmp_path):
    stream = io.StringIO()
    ConsoleReport(stream).finish(outcome(tmp_path))
    lines = stream.getvalue().rstrip().splitlines()
    # cases: ok 1 passed, flaky 1 passed, hang 1 failed, not_run + disabled skipped
    assert lines[-1] == "summary: 2 passed, 1 failed, 2 skipped"
    assert lines[-2] == "exit code 1"
    assert ["flaky", "4.0s", "20s", "2", "registered/test_flaky.py"] in [
        line.split() for line in lines
    ]


def test_annotations_are_bounded_and_the_rest_summarised():
    cases = tuple(
        CaseResult(f"test_{i}", "c", 0.1, "failed", f"boom {i}", case_id=f"t.py::test_{i}",
                   file="t.py", line=i + 1)
        for i in range(12)
    )  # fmt: skip
    failing = FileResult("t.py", "unit", 1, "failed", 1.0, reason="12 failing", cases=cases)
    lines = annotations(ShardOutcome(INFO, [failing], exit_code=1), GitHubContext())
    assert len(lines) == MAX_ANNOTATIONS == 10
    assert lines[0] == "::error file=t.py,line=1,title=t.py%3A%3Atest_0::failed: boom 0"
    assert lines[-1] == (
        "::error::3 more failing test case(s): see the job's step summary and JUnit report"
    )


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
