"""Numbers read from timings files and reports: update-est-time takes an elapsed time only when it
is a number of seconds from 0 to a week (``"elapsed": true`` is no second), and says which line
and key it left out; merge-junit shows a time it cannot read as unknown and never counts a report
whose counts are not counts as passed. A property test feeds timings rows of random JSON values:
the samples counted are exactly the valid ones."""

import json
import math
import sys
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_runner import register_cpu_ci
from ci_runner.maintenance.__main__ import main as maintenance
from ci_runner.maintenance.est_time import main as update_est_time
from ci_runner.plan.live_estimates import LiveEstimateError, load_live_estimates

sys.path.insert(0, str(Path(__file__).parent))
from testing.tree_builder import write_tree

register_cpu_ci(est_time=4, suite="base-a-test-cpu")

SOURCE = 'from ci_runner import register_cpu_ci\n\nregister_cpu_ci(est_time=100, suite="s")\n'
PATH = "registered/test_k.py"
PROPERTY = settings(
    max_examples=60,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def repo(tmp_path: Path) -> Path:
    write_tree(tmp_path, "[tool.ci-runner]\n", {PATH: SOURCE})
    return tmp_path


def rows_file(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_elapsed_true_is_not_one_second_and_est_time_stays(tmp_path, capsys):
    root = repo(tmp_path)
    row = {"path": PATH, "suite": "s", "elapsed": True, "status": "passed"}
    timings = rows_file(tmp_path / "t.jsonl", [row] * 3)
    assert update_est_time(["--root", str(root), "--timings", str(timings), "--write"]) == 0
    out = capsys.readouterr().out
    assert (
        f"note: {timings}:1: elapsed must be a number of seconds from 0 to 604800, got True "
        "(bool); this sample is left out"
    ) in out
    assert f"{timings}:3: elapsed" in out
    assert "rewrote 0 est_time literal(s) in 0 file(s)" in out
    assert (root / PATH).read_text() == SOURCE  # was rewritten to est_time=1


@pytest.mark.parametrize(
    ("elapsed", "shown"),
    [
        ("NaN", "nan (float)"),
        ("Infinity", "inf (float)"),
        ("-5", "-5 (int)"),
        ("1e308", "1e+308 (float)"),
        ('"300"', "'300' (str)"),
        ("null", "None (NoneType)"),
        ("[300]", "[300] (list)"),
    ],
)
def test_an_elapsed_that_is_no_number_of_seconds_is_left_out_by_line_and_key(
    tmp_path, capsys, elapsed, shown
):
    root = repo(tmp_path)
    good = json.dumps({"path": PATH, "suite": "s", "elapsed": 300, "status": "passed"})
    bad = f'{{"path": "{PATH}", "suite": "s", "elapsed": {elapsed}, "status": "passed"}}'
    (tmp_path / "t.jsonl").write_text(f"{good}\n{bad}\n{good}\n")
    argv = ["--root", str(root), "--timings", str(tmp_path / "t.jsonl"), "--check"]
    assert update_est_time(argv) == 0  # two samples left: fewer than --min-samples
    out = capsys.readouterr().out
    assert f"t.jsonl:2: elapsed must be a number of seconds from 0 to 604800, got {shown}" in out
    assert f"{PATH} [s]: 2 sample(s) < 3, kept" in out


def test_an_unknown_status_is_left_out_not_counted_as_a_failure(tmp_path, capsys):
    root = repo(tmp_path)
    rows = [{"path": PATH, "suite": "s", "elapsed": 300, "status": "PASSED"}]
    timings = rows_file(tmp_path / "t.jsonl", rows)
    assert update_est_time(["--root", str(root), "--timings", str(timings)]) == 0
    assert "t.jsonl:1: status must be one of passed, failed, timeout, crashed, flaky" in (
        capsys.readouterr().out
    )


def junit(suites: str) -> str:
    return f"<testsuites>{suites}</testsuites>"


def junit_suite(name: str, props: dict[str, str], attributes: str = "") -> str:
    listed = "".join(f'<property name="{k}" value="{v}"/>' for k, v in props.items())
    return f'<testsuite name="{name}"{attributes}><properties>{listed}</properties></testsuite>'


def test_junit_samples_left_out_are_named(tmp_path, capsys):
    root = repo(tmp_path)
    ok = {"path": PATH, "suite": "s", "status": "passed", "elapsed": "300"}
    suites = [
        junit_suite(PATH, {**ok, "elapsed": "nan"}),
        junit_suite(PATH, {k: v for k, v in ok.items() if k != "elapsed"}),
        junit_suite(PATH, {k: v for k, v in ok.items() if k != "elapsed"}, ' time="301"'),
        junit_suite("pytest-own", {}),
        junit_suite(PATH, ok),
    ]
    (tmp_path / "r.xml").write_text(junit("".join(suites)))
    argv = ["--root", str(root), "--timings", str(tmp_path / "r.xml"), "--min-samples", "2"]
    assert update_est_time(argv) == 0
    out = capsys.readouterr().out
    where = f"{tmp_path / 'r.xml'}: testsuite '{PATH}'"
    assert f"{where}: elapsed must be a number of seconds from 0 to 604800, got 'nan' (str)" in out
    assert f"{where}: it has neither an elapsed property nor a time attribute" in out
    assert "1 testsuite(s) without a suite property (not written by run_suite.py) left out" in out
    assert "measured p90=301s" in out  # the time attribute of the third, and the fifth


def test_merge_junit_shows_an_elapsed_it_cannot_read_as_unknown(tmp_path, capsys):
    (tmp_path / "plan.json").write_text('{"files": [{"path": "a.py", "suite": "s"}]}')
    (tmp_path / "reports").mkdir()
    props = {"path": "a.py", "suite": "s", "status": "failed", "elapsed": "-1e308"}
    (tmp_path / "reports" / "r.xml").write_text(junit(junit_suite("a.py", props)))
    argv = ["merge-junit", "--plan", str(tmp_path / "plan.json")]
    assert maintenance([*argv, "--junit-dir", str(tmp_path / "reports")]) == 1
    out, err = capsys.readouterr()
    assert "  a.py [s]: failed (shard ?, elapsed unknown)" in out
    assert (
        "r.xml: testsuite 'a.py': elapsed '-1e308' is not a number of seconds from 0 to 604800; "
        "shown as unknown"
    ) in err


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [("true", "True"), ("NaN", "nan"), ("Infinity", "inf"), ("1e308", "1e+308")],
)
def test_a_partition_model_time_that_is_no_number_of_seconds_is_exit_2(tmp_path, seconds, shown):
    model = tmp_path / "model.json"
    model.write_text(f'{{"est": {{"s": {{"registered/test_k.py": {seconds}}}}}}}')
    with pytest.raises(LiveEstimateError) as raised:
        load_live_estimates(model, ["s"])
    assert str(raised.value) == (
        f"--partition-model-file {model}: key est.s.registered/test_k.py must be a number of "
        f"seconds from 0 to 604800, got {shown}"
    )


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.lists(st.integers(), max_size=2),
    st.sampled_from(["passed", "flaky", "failed", "s", PATH, 0, 250, 604800, 604801]),
)
ROWS = st.lists(
    st.fixed_dictionaries(
        {
            "path": st.sampled_from([PATH]),
            "suite": st.sampled_from(["s"]),
            "elapsed": VALUES,
            "status": VALUES,
        }
    ),
    min_size=1,
    max_size=8,
)


def is_sample(row: dict) -> bool:
    """The oracle: a passing run with an elapsed time that is a number of seconds in range."""
    elapsed = row["elapsed"]
    number = isinstance(elapsed, int | float) and not isinstance(elapsed, bool)
    in_range = number and math.isfinite(elapsed) and 0 <= elapsed <= 604800
    return in_range and row["status"] in ("passed", "flaky")


@PROPERTY
@given(ROWS)
def test_random_timings_rows_count_exactly_the_valid_samples(tmp_path, capsys, rows):
    root = repo(tmp_path)
    timings = rows_file(tmp_path / "t.jsonl", rows)
    argv = ["--root", str(root), "--timings", str(timings), "--min-samples", "1", "--write"]
    capsys.readouterr()
    assert update_est_time(argv) == 0
    out = capsys.readouterr().out
    samples = [row["elapsed"] for row in rows if is_sample(row)]
    left_out = [i for i, row in enumerate(rows, 1) if not is_sample(row)]
    for number in left_out:  # a valid run that did not pass is not said: it is no sample
        row = rows[number - 1]
        said = f"{timings}:{number}: " in out
        assert said or row["status"] in ("failed", "timeout", "crashed", "not_run", "disabled", "skipped")  # fmt: skip
    source = (root / PATH).read_text()
    if samples:
        measured = max(1, math.ceil(sorted(samples)[max(0, math.ceil(0.9 * len(samples)) - 1)]))
        expected = measured if abs(measured - 100) >= max(10, 30) else 100
        assert f"est_time={expected}," in source
    else:
        assert source == SOURCE
    (root / PATH).write_text(SOURCE)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
