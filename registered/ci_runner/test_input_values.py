"""Numbers and repeated flags, wherever they enter: registrations, the catalog, run_suite.py's
flags and the maintenance commands. Property tests (hypothesis) feed arbitrary values: each is
either accepted inside its documented range or rejected with one message naming the key or flag;
never an OverflowError, a hang or a value the runner chokes on later."""

import argparse
import contextlib
import io
import math
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_runner import register_cpu_ci
from ci_runner.adoption.init_command import build_parser as init_parser
from ci_runner.catalog import CatalogError, parse_catalog
from ci_runner.catalog.limits import MAX_ATTEMPTS, MAX_GPUS, MAX_MINUTES, MAX_SECONDS
from ci_runner.cli import main
from ci_runner.cli.arguments import build_parser, shard_options, validate_arguments
from ci_runner.cli_errors import JoinCommaLists, StoreOnce
from ci_runner.collect import scan_markers
from ci_runner.maintenance.__main__ import main as maintenance
from ci_runner.plan.packing import plan

sys.path.insert(0, str(Path(__file__).parent))
from helpers_tree import make_repo, registered_source

register_cpu_ci(est_time=4, suite="base-a-test-cpu")

# Fast and reproducible in CI: a fixed number of examples, no deadline, no example database.
PROPERTY = settings(max_examples=150, deadline=None, database=None, derandomize=True)
NUMBERS = st.one_of(
    st.integers(),
    st.integers(min_value=-(10**500), max_value=10**500),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, MAX_SECONDS, MAX_SECONDS + 1, MAX_GPUS, MAX_GPUS + 1, 2**63 - 1]),
)


def literal(value: int | float) -> str:
    """Python source for ``value``: a decimal or hex literal (past 4,300 digits), 1e999 for inf."""
    if isinstance(value, float) and not math.isfinite(value):
        return "1e999" if value > 0 else ("-1e999" if value < 0 else "1e999 - 1e999")
    if isinstance(value, int) and value.bit_length() > 10_000:
        return hex(value)
    return repr(value)


def scan(call: str):
    return scan_markers(registered_source(call), "registered/test_x.py")


@PROPERTY
@given(NUMBERS)
def test_any_est_time_is_accepted_in_range_or_named_in_one_problem(value):
    registrations, problems = scan(f'register_cpu_ci(est_time={literal(value)}, suite="s")')
    if registrations:
        (registration,) = registrations
        assert 0 <= registration.est_time <= MAX_SECONDS
        plan([(registration.path, registration.est_time)], 3)  # the planner takes it as is
    else:
        (problem,) = problems
        assert problem.message.startswith("est_time must be ")
        assert len(problem.message) < 250


@PROPERTY
@given(NUMBERS)
def test_any_min_gpus_is_accepted_in_range_or_named_in_one_problem(value):
    registrations, problems = scan(f'register_cpu_ci(1, "s", min_gpus={literal(value)})')
    if registrations:
        assert 1 <= registrations[0].min_gpus <= MAX_GPUS
    else:
        (problem,) = problems
        assert problem.message.startswith("min_gpus must be ") and len(problem.message) < 250


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1e308", "est_time must be at most 604800 seconds (a week), got 1e+308"),
        (
            "9" * 400,
            "est_time must be at most 604800 seconds (a week), got an integer of about 40",
        ),
        ("0x" + "f" * 5000, "est_time must be at most 604800 seconds (a week), got an integer of"),
        ("1e999", "est_time must be a finite number of seconds, 0 or more, got inf"),
    ],
)
def test_huge_est_times_name_the_argument(value, message):
    _, (problem,) = scan(f'register_cpu_ci(est_time={value}, suite="s")')
    assert problem.message.startswith(message)


CATALOG_VALUES = st.one_of(NUMBERS.filter(lambda v: not isinstance(v, int) or abs(v) < 2**63),
                           st.booleans(), st.text(max_size=8), st.none())  # fmt: skip


@PROPERTY
@given(
    st.sampled_from(["timeout-per-file", "job-timeout-minutes", "gpus-per-file"]), CATALOG_VALUES
)
def test_any_catalog_number_is_accepted_in_range_or_names_its_key(key, value):
    suite = {"name": "s", "hw": "cuda", **({} if value is None else {key: value})}
    try:
        catalog = parse_catalog({"suites": [suite]}, Path("/repo"), "pyproject.toml")
    except CatalogError as exc:
        assert f"suites[0] (suite 's'): {key} must be " in str(exc)
        return
    (parsed,) = catalog.suites
    timeout, minutes, gpus = (
        parsed.timeout_per_file,
        parsed.job_timeout_minutes,
        parsed.gpus_per_file,
    )
    assert timeout is None or 0 < timeout <= MAX_SECONDS
    assert minutes is None or 0 < minutes <= MAX_MINUTES
    assert gpus == "all" or 0 <= gpus <= MAX_GPUS


NUMERIC_FLAGS = {
    "--timeout-per-file": ("timeout_per_file", (0, MAX_SECONDS), []),
    "--kill-grace-seconds": ("kill_grace_seconds", (0, MAX_SECONDS), []),
    "--retry-wait-seconds": ("retry_wait_seconds", (0, MAX_SECONDS), ["--enable-retry"]),
    "--retry-budget-seconds": ("retry_budget_seconds", (0, MAX_SECONDS), ["--enable-retry"]),
    "--max-attempts": ("max_attempts", (1, MAX_ATTEMPTS), ["--enable-retry"]),
    "--gpus": ("gpus", (1, MAX_GPUS), []),
    "--matrix-target-minutes": ("matrix_target_minutes", (0, MAX_MINUTES), ["--print-matrix"]),
    "--auto-partition-size": ("auto_partition_size", (1, 4096), ["--auto-partition-id", "0"]),
}
FLAG_TEXT = st.one_of(
    NUMBERS.map(lambda v: literal(v) if not isinstance(v, float) else repr(v)),
    st.text(max_size=12),
    st.sampled_from(["nan", "inf", "-inf", "1e308", "1_000", "0x10", " 7 ", "1e-400"]),
)


def parse_flags(argv: list[str]) -> tuple[argparse.Namespace | None, str]:
    """run_suite.py's flag checks, in process: (the arguments, or None on exit 2; stderr)."""
    parser, err = build_parser(), io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            args = parser.parse_args(argv)
            validate_arguments(parser, args)
            shard_options(parser, args)
        except SystemExit as exc:
            assert exc.code == 2
            return None, err.getvalue()
    return args, err.getvalue()


@PROPERTY
@given(st.sampled_from(sorted(NUMERIC_FLAGS)), FLAG_TEXT)
def test_any_numeric_flag_value_is_accepted_in_range_or_names_the_flag(flag, text):
    dest, (low, high), needs = NUMERIC_FLAGS[flag]
    args, err = parse_flags(["--hw", "cpu", "--suite", "s", *needs, f"{flag}={text}"])
    if args is None:
        assert f"{flag}" in err.strip().splitlines()[-1], err
        return
    value = getattr(args, dest)
    assert math.isfinite(value) and low <= value <= high


def value_options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The options of ``parser`` that take a value (``--flag VALUE``)."""
    return [
        action
        for action in parser._actions  # argparse keeps no public list of its options
        if action.option_strings and action.nargs is None and action.dest != "help"
        and not isinstance(action, argparse._StoreConstAction | argparse._AppendAction)
    ]  # fmt: skip


@pytest.mark.parametrize("parser", [build_parser(), init_parser()], ids=["run_suite", "init"])
def test_every_option_with_a_value_is_single_or_joins_its_lists(parser):
    for action in value_options(parser):
        assert isinstance(action, StoreOnce | JoinCommaLists), action.option_strings


SINGLE = [a for a in value_options(build_parser()) if isinstance(a, StoreOnce)]  # not --suite


@pytest.mark.parametrize("action", SINGLE, ids=lambda a: a.dest)
def test_a_repeated_option_is_a_usage_error_naming_it(action):
    flag, value = action.option_strings[0], (action.choices or ["1"])[0]
    args, err = parse_flags(["--hw", "cpu", "--suite", "s", flag, value, flag, value])
    assert args is None
    (line,) = [line for line in err.splitlines() if "error:" in line]
    assert line.startswith(f"run_suite.py: error: {flag} given twice (")
    assert line.endswith("); give it once")


def test_a_repeated_suite_flag_runs_every_suite_named(tmp_path, capsys):
    root = make_repo(
        tmp_path,
        {
            "registered/test_a.py": registered_source('register_cpu_ci(1, suite="unit-cpu")'),
            "registered/test_b.py": registered_source('register_cpu_ci(1, suite="extra-cpu")'),
        },
    )
    argv = ["--root", str(root), "--hw", "cpu", "--suite", "unit-cpu", "--suite", "extra-cpu"]
    assert main([*argv, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "suite=unit-cpu,extra-cpu" in out
    assert "registered/test_a.py" in out and "registered/test_b.py" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["merge-junit", "--plan", "p", "--junit-dir", "a", "--junit-dir", "b"],
        ["update-est-time", "--timings", "t", "--min-samples", "2", "--min-samples", "3"],
        ["check-workflow-dispatch", "--root", "a", "--root", "b"],
        ["check-registered-tests", "--root", "a", "--root", "b"],
        ["check-no-registered-tests-in-package", "--root", "a", "--root", "b"],
    ],
)
def test_maintenance_commands_reject_a_repeated_option(argv, capsys):
    with pytest.raises(SystemExit) as info:
        maintenance(argv)
    assert info.value.code == 2
    flag = argv[-2]
    assert f"error: {flag} given twice" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--min-rel", "nan"], "argument --min-rel: expected a finite number"),
        (["--min-abs", "1e308"], "argument --min-abs: expected at most 604800 seconds"),
        (["--min-samples", "9" * 5000], "argument --min-samples: expected a whole number, got"),
    ],
)
def test_update_est_time_thresholds_are_finite_and_bounded(argv, message, capsys):
    with pytest.raises(SystemExit):
        maintenance(["update-est-time", "--timings", "t", *argv])
    assert message in capsys.readouterr().err


def test_thousands_of_gpu_ids_are_refused_quickly(capsys):
    ids = ",".join(str(i) for i in range(20_000))  # a quadratic duplicate check took minutes
    args, err = parse_flags(["--hw", "cuda", "--suite", "s", "--gpu-ids", ids])
    assert args is None and f"20000 device ids; at most {MAX_GPUS}" in err


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
