"""Executor pieces without running a suite: limits, retry rules, judging, environment, flags."""

import argparse
import sys
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci
from ci_runner.cli.arguments import add_execution_arguments, shard_options
from ci_runner.execution import ExecutionOptions, execute_shard
from ci_runner.execution.case_record import CaseRecord, RecordedCase
from ci_runner.execution.case_results import judge_exit
from ci_runner.execution.child import CHILD_DIR
from ci_runner.execution.child_env import AttemptFiles, child_environment, pytest_addopts
from ci_runner.execution.file_runner import RunSettings
from ci_runner.execution.retry import RetryPolicy, broken_file_error
from ci_runner.execution.timeouts import timeout_for, timeout_from_est
from ci_runner.model import AttemptResult, DisabledFile, FileToRun, ShardContext
from ci_runner.reports import ReportOptions, ShardReports

register_cpu_ci(est_time=4, suite="base-a-test-cpu")


@pytest.mark.parametrize(
    ("est", "cap", "limit"),
    [(0, None, 60), (10, None, 90), (100, None, 360), (5000, None, 3600), (100, 200, 200)],
)
def test_timeout_from_est_formula(est, cap, limit):
    assert timeout_from_est(est, cap) == limit


def test_flat_timeout_precedence():
    suites = {"a": 600.0, "b": None}
    assert timeout_for("a", 5, flag_timeout=None, from_est=False, suite_timeouts=suites) == 600
    assert timeout_for("b", 5, flag_timeout=None, from_est=False, suite_timeouts=suites) == 1200
    assert timeout_for("a", 5, flag_timeout=30, from_est=False, suite_timeouts=suites) == 30
    assert timeout_for("a", 5, flag_timeout=30, from_est=True, suite_timeouts=suites) == 30
    assert timeout_for("a", 5, flag_timeout=None, from_est=True, suite_timeouts=suites) == 75


def attempt(status="failed", number=1, retriable=True, reason="exit code 1"):
    return AttemptResult(
        number=number, status=status, elapsed=1.0, exit_code=1, reason=reason,
        retriable=retriable, cases=(), is_pytest=False, output_path="", output_bytes=0,
        output_tail="", tail_truncated=False, timeout_limit=10,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("policy", "last", "used", "expected"),
    [
        (RetryPolicy(), attempt(), 0, (False, "retry disabled")),
        (RetryPolicy(True, 2), attempt(number=2), 0, (False, "no attempts left (2/2)")),
        (
            RetryPolicy(True, 3),
            attempt(status="timeout"),
            0,
            (False, "timeouts are retried only with --retry-timeouts"),
        ),
        (
            RetryPolicy(True, 3, retry_timeouts=True),
            attempt(status="timeout"),
            0,
            (True, "attempt 2/3"),
        ),
        (
            RetryPolicy(True, 3),
            attempt(retriable=False),
            0,
            (False, "it cannot be flaky (broken file)"),
        ),
        (
            RetryPolicy(True, 3, budget_seconds=10),
            attempt(),
            12.5,
            (False, "retry budget exhausted (12.5s of 10s used)"),
        ),
        (RetryPolicy(True, 3), attempt(), 0, (True, "attempt 2/3")),
    ],
)
def test_retry_decisions(policy, last, used, expected):
    assert policy.next_attempt(last, used) == expected


def test_broken_file_error_reads_the_last_traceback_line():
    tail = "Traceback...\n  File 'x.py'\nImportError: cannot import name 'y'\nother\n"
    assert broken_file_error(tail) == "ImportError: cannot import name 'y'"
    assert broken_file_error("AssertionError: mentions ImportError: inside") is None


def test_pytest_addopts_appends_the_case_record_plugin():
    assert pytest_addopts(None) == "-p no:cacheprovider -p ci_runner_pytest_plugin"
    assert pytest_addopts("-x") == "-x -p no:cacheprovider -p ci_runner_pytest_plugin"


def recorded(*outcomes, runner="pytest", running=0, collection=0):
    cases = [RecordedCase(f"t.py::test_{i}", outcome=o) for i, o in enumerate(outcomes)]
    cases += [RecordedCase(f"t.py::test_run{i}") for i in range(running)]
    cases += [
        RecordedCase(f"t.py::c{i}", outcome="error", detail="collection") for i in range(collection)
    ]
    return CaseRecord(runners=(runner,) if runner else (), cases=cases)


def never(*_):
    raise AssertionError("the file's test definitions were not needed")


def test_judging_exit_codes():
    ok, bad = recorded("passed"), recorded("failed")
    assert judge_exit(0, ok, "", never) == ("passed", "", False)
    status, reason, retriable = judge_exit(0, bad, "", never)
    assert status == "failed" and "must pass the exit code on" in reason and retriable
    assert judge_exit(1, bad, "", never) == ("failed", "1 failing test case(s) (exit 1)", True)
    assert judge_exit(2, recorded(collection=1), "", never) == (
        "failed",
        "1 collection error(s) (exit 2)",
        False,
    )
    assert judge_exit(5, recorded(), "", never) == (
        "no_tests",
        "pytest ran no test case (exit 5)",
        False,
    )
    assert judge_exit(-6, CaseRecord(), "", never) == ("crashed", "killed by SIGABRT", True)
    assert judge_exit(-11, recorded("passed", running=1), "", never) == (
        "crashed",
        "killed by SIGSEGV while running t.py::test_run0",
        True,
    )
    assert judge_exit(0, recorded("passed", running=1), "", never) == (
        "failed",
        "exited with code 0 while running t.py::test_run0",
        True,
    )
    assert judge_exit(1, CaseRecord(), "SyntaxError: invalid syntax\n", never) == (
        "failed",
        "SyntaxError: invalid syntax (exit 1)",
        False,
    )
    assert judge_exit(0, CaseRecord(problem="line 3: not JSON"), "", never)[0] == "failed"


def test_unittest_exit_5_after_only_skips_passes():
    """Python 3.12.0-3.12.1's unittest.main() exits 5 ("NO TESTS RAN (skipped=N)") when every
    test skips; any other exit 5 of unittest still fails."""
    skipped = recorded("skipped", "skipped", runner="unittest")
    assert judge_exit(5, skipped, "", never) == ("passed", "", False)
    assert judge_exit(5, recorded("skipped", "passed", runner="unittest"), "", never) == (
        "failed",
        "exit code 5 after its cases passed",
        True,
    )
    assert judge_exit(5, recorded("skipped", "failed", runner="unittest"), "", never)[0] == "failed"
    assert judge_exit(5, recorded(runner="unittest"), "", never)[0] == "no_tests"
    assert judge_exit(5, recorded("skipped", runner="pytest"), "", never)[0] == "no_tests"
    assert judge_exit(1, skipped, "", never)[0] == "failed"


def test_a_file_without_cases_passes_unless_it_defines_tests():
    assert judge_exit(0, CaseRecord(), "", lambda: []) == ("passed", "", False)
    status, reason, retriable = judge_exit(0, CaseRecord(), "", lambda: ["test_a", "T.test_b"])
    assert status == "no_tests" and not retriable
    assert reason.startswith("defines 2 test(s) (test_a, T.test_b) but ran none (exit 0)")


def settings(tmp_path, env, nightly):
    return RunSettings(
        root=tmp_path, workdir=tmp_path, base_env=env, nightly=nightly, kill_grace_seconds=1,
        retry=RetryPolicy(),
    )  # fmt: skip


def environment(tmp_path, base, nightly, gpu_ids=(), pin=False, attempt=1):
    files = AttemptFiles(tmp_path / "a-1.log")
    return child_environment(
        base, tmp_path, nightly, files, gpu_ids=gpu_ids, pin_gpus=pin, attempt=attempt,
        token="tok",
    )  # fmt: skip


def test_child_environment(tmp_path):
    env = environment(
        tmp_path, {"PYTHONPATH": "/x", "PYTEST_ADDOPTS": "-x"}, True, ("2", "3"), True, 2
    )
    assert env["SGLANG_JIT_KERNEL_RUN_FULL_TESTS"] == "1"
    assert env["PYTHONPATH"] == f"{CHILD_DIR}:{tmp_path}:/x"
    assert env["CUDA_VISIBLE_DEVICES"] == "2,3"
    assert env["PYTEST_ADDOPTS"] == "-x -p no:cacheprovider -p ci_runner_pytest_plugin"
    assert env["CI_RUNNER_ATTEMPT"] == "2"
    assert env["CI_RUNNER_CASE_RECORD"] == str(tmp_path / "a-1.cases")
    assert env["CI_RUNNER_STACK_PREFIX"] == str(tmp_path / "a-1.stack.")
    assert (env["CI_RUNNER_CASE_ROOT"], env["CI_RUNNER_CASE_DEPTH"]) == (str(tmp_path), "0")


def test_nightly_keeps_the_callers_choice(tmp_path):
    base = {"SGLANG_JIT_KERNEL_RUN_FULL_TESTS": "off"}
    assert environment(tmp_path, base, True)["SGLANG_JIT_KERNEL_RUN_FULL_TESTS"] == "off"
    assert "CUDA_VISIBLE_DEVICES" not in environment(tmp_path, {}, False, ("0",), False)
    assert "SGLANG_JIT_KERNEL_RUN_FULL_TESTS" not in environment(tmp_path, {}, False)


@pytest.mark.parametrize(
    ("launcher", "suite_launchers", "expected"),
    [
        ("python", {}, ["py", "registered/t.py", "-f"]),
        ("pytest", {}, ["py", "-m", "pytest", "registered/t.py", "-f"]),
        ("python", {"s": "pytest"}, ["py", "-m", "pytest", "registered/t.py", "-f"]),
        ("pytest", {"s": "python"}, ["py", "registered/t.py", "-f"]),
    ],
)
def test_launcher_command(tmp_path, launcher, suite_launchers, expected):
    run = RunSettings(
        root=tmp_path, workdir=tmp_path, base_env={}, nightly=False, kill_grace_seconds=1,
        retry=RetryPolicy(), python="py", file_arguments=("-f",), launcher=launcher,
        suite_launchers=suite_launchers,
    )  # fmt: skip
    assert run.command("registered/t.py", "s") == (expected, tmp_path)


def parser():
    p = argparse.ArgumentParser(prog="run_suite.py")
    add_execution_arguments(p)
    return p


def run_shard(files, ctx, argv=()):
    """execute_shard with the options of ``argv`` and the reports connected, as the CLI does."""
    p = parser()
    execution, reports = shard_options(p, p.parse_args(list(argv)))
    return execute_shard(files, ctx, execution, ShardReports(reports))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--max-attempts", "3"], "--max-attempts need(s) --enable-retry"),
        (["--retry-timeouts"], "--retry-timeouts need(s) --enable-retry"),
        (
            ["--gpus", "2", "--gpu-ids", "0,1"],
            "argument --gpu-ids: not allowed with argument --gpus",
        ),
        (["--timeout-per-file", "0"], "expected a positive number of seconds, got '0'"),
        (["--timeout-per-file", "soon"], "expected a number of seconds, got 'soon'"),
        (
            ["--enable-retry", "--max-attempts", "0"],
            "expected a whole number from 1 to 100, got '0'",
        ),
        (["--gpu-ids", "0,0"], "--gpu-ids='0,0': duplicate device id(s) 0"),
        (
            ["--junit-xml", "."],
            "--junit-xml .: is a directory, not a regular file; only a regular file is written there",
        ),
    ],
)
def test_flag_errors_exit_2_with_a_message(argv, message, capsys):
    p = parser()
    with pytest.raises(SystemExit) as info:
        shard_options(p, p.parse_args(argv))
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_invalid_boolean_variable_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.setenv("SGLANG_IS_IN_CI", "maybe")
    p = parser()
    with pytest.raises(SystemExit):
        shard_options(p, p.parse_args([]))
    assert "SGLANG_IS_IN_CI='maybe' is not a boolean" in capsys.readouterr().err
    monkeypatch.delenv("SGLANG_IS_IN_CI")
    monkeypatch.setenv("SGLANG_KERNEL_DISABLE_LOG_BANDWIDTH", "2")
    code = execute_shard([], context(Path.cwd()), ExecutionOptions(), ShardReports(ReportOptions()))
    assert code == 2
    assert "SGLANG_KERNEL_DISABLE_LOG_BANDWIDTH='2' is not a boolean" in capsys.readouterr().err


def context(root, disabled=(), nightly=False):
    return ShardContext(
        root=root, hw="cpu", suites=("s",), nightly=nightly, shard_id=0, shard_count=1,
        predicted_makespan=0, shard_est_total=0, lower_bound=0, plan_hash="h", disabled=disabled,
    )  # fmt: skip


def test_empty_shard_exits_0_and_lists_disabled_files(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    disabled = (DisabledFile("registered/test_d.py", "s", "flaky on H100"),)
    code = run_shard([], context(tmp_path, disabled))
    out = capsys.readouterr().out
    assert code == 0
    assert "registered/test_d.py [disabled]: flaky on H100" in out
    assert out.rstrip().splitlines()[-1] == "summary: 0 passed, 0 failed, 1 skipped"


def test_unwritable_report_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    reports = ShardReports(ReportOptions(junit_xml=tmp_path / "file" / "junit.xml"))
    assert execute_shard([], context(tmp_path), ExecutionOptions(), reports) == 2
    assert "run_suite: error: cannot write a report file:" in capsys.readouterr().err


def test_nightly_reaches_the_file(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("SGLANG_JIT_KERNEL_RUN_FULL_TESTS", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    (tmp_path / "test_n.py").write_text(
        "import os, sys\nsys.exit(0 if os.environ['SGLANG_JIT_KERNEL_RUN_FULL_TESTS'] == '1' else 1)\n"
    )
    files = [FileToRun("test_n.py", "s", 1, gpus=0)]
    code = run_shard(files, context(tmp_path, nightly=True))
    assert code == 0, capsys.readouterr().out


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
