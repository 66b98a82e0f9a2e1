"""est_time maintenance: p90 of passing runs, drift detection, in-place syntax-aware rewrite."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)
from junitparser import JUnitXml, TestSuite

from ci_runner import register_cpu_ci
from ci_runner.maintenance.est_time import find_literals, main, measured_est, p90, rewrite

sys.path.insert(0, str(Path(__file__).parent))

from testing.tree_builder import write_tree

register_cpu_ci(est_time=3, suite="base-a-test-cpu")

ROOT = Path(__file__).resolve().parents[2]
GPU = "base-b-kernel-unit-1-gpu-large"
NIGHTLY = "nightly-kernel-1-gpu"

SOURCE = """\
import sys  # keep me

from ci_runner import register_cuda_ci

register_cuda_ci(est_time=60, suite="base-b-kernel-unit-1-gpu-large")  # PR lane
register_cuda_ci(
    600.0,  # positional, with a comment
    "nightly-kernel-1-gpu",
    nightly=True,
)
est_time = 60  # not a marker: must not change


def test_x():
    register_cuda_ci(est_time=60, suite="base-b-kernel-unit-1-gpu-large")  # not module level
"""


def make_repo(tmp_path: Path, source: str = SOURCE) -> Path:
    write_tree(tmp_path, "[tool.ci-runner]\n", {"registered/test_k.py": source})
    return tmp_path / "registered" / "test_k.py"


def write_timings(path: Path, rows: list[tuple[str, str, float, str]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(
            json.dumps({"path": p, "suite": s, "elapsed": e, "status": st, "est_time": 1}) + "\n"
            for p, s, e, st in rows
        )
    )
    return path


def test_p90_is_nearest_rank_and_rounding_is_ceil_at_least_one():
    assert p90([float(v) for v in range(1, 11)]) == 9.0
    assert p90([5.0, 1.0, 3.0]) == 5.0
    assert measured_est([0.2, 0.3, 0.1]) == 1
    assert measured_est([40.2, 41.0, 39.0]) == 41
    with pytest.raises(ValueError, match="p90 of no samples"):
        p90([])


def test_find_literals_keyword_positional_and_unicode_columns():
    found = find_literals(SOURCE, "registered/test_k.py")
    assert [(lit.suite, lit.value, lit.line, lit.text) for lit in found] == [
        (GPU, 60.0, 5, "60"),
        (NIGHTLY, 600.0, 7, "600.0"),
    ]
    text = 'x = "é"; register_cpu_ci(est_time=7, suite="s")\n'
    (lit,) = find_literals(text, "t.py")
    assert text[lit.col : lit.end_col] == "7"
    assert rewrite(text, [(lit, 12)]) == 'x = "é"; register_cpu_ci(est_time=12, suite="s")\n'


def test_write_rewrites_only_drifted_literals_and_keeps_everything_else(tmp_path, capsys):
    test = make_repo(tmp_path)
    rel = "registered/test_k.py"
    timings = write_timings(
        tmp_path / "runs" / "t.jsonl",
        [(rel, GPU, e, "passed") for e in (410.0, 420.0, 419.5)]
        + [(rel, GPU, 5000.0, "timeout"), (rel, GPU, 1.0, "failed")]  # excluded
        + [(rel, NIGHTLY, e, "passed") for e in (590.0, 610.0, 620.0)],  # within 30 %
    )
    code = main(["--root", str(tmp_path), "--timings", str(timings), "--write"])
    out = capsys.readouterr().out
    assert code == 0
    assert (
        f"drift: {rel} [{GPU}]: declared est_time=60s, measured p90=420s (7.0x, 3 samples)" in out
    )
    assert "rewrote 1 est_time literal(s) in 1 file(s)" in out
    expected = SOURCE.replace(
        'register_cuda_ci(est_time=60, suite="base-b-kernel-unit-1-gpu-large")  # PR lane',
        'register_cuda_ci(est_time=420, suite="base-b-kernel-unit-1-gpu-large")  # PR lane',
    )
    assert test.read_text() == expected


COMPOSED = """\
from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=60, stage="base-b", runner_config="1-gpu-large")  # composed
register_cuda_ci(est_time=60, stage=STAGE, runner_config="1-gpu-large")  # not literal: skipped
"""


def test_composed_suites_are_matched_and_rewritten(tmp_path, capsys):
    write_tree(
        tmp_path,
        '[tool.ci-runner]\nsuite-template = "{stage}-test-{runner_config}"\n',
        {"registered/test_k.py": COMPOSED},
    )
    rel, suite = "registered/test_k.py", "base-b-test-1-gpu-large"
    timings = write_timings(
        tmp_path / "t.jsonl", [(rel, suite, e, "passed") for e in (200, 205, 210)]
    )
    assert main(["--root", str(tmp_path), "--timings", str(timings), "--write"]) == 0
    assert f"drift: {rel} [{suite}]: declared est_time=60s, measured p90=210s" in (
        capsys.readouterr().out
    )
    assert (tmp_path / rel).read_text() == COMPOSED.replace(
        'est_time=60, stage="b', 'est_time=210, stage="b'
    )
    assert [lit.suite for lit in find_literals(COMPOSED, rel)] == []  # no template, no suite


def test_check_exits_1_on_drift_and_0_when_honest(tmp_path, capsys):
    make_repo(tmp_path)
    rel = "registered/test_k.py"
    runs = tmp_path / "runs"
    write_timings(runs / "a.jsonl", [(rel, GPU, 20.0, "passed"), (rel, GPU, 21.0, "flaky")])
    write_timings(runs / "b.jsonl", [(rel, GPU, 22.0, "passed")])
    code = main(["--root", str(tmp_path), "--timings", str(runs), "--check"])
    out = capsys.readouterr().out
    assert code == 1
    assert "measured p90=22s (0.4x, 3 samples)" in out
    assert "update the est_time values" in out
    write_timings(runs / "b.jsonl", [(rel, GPU, 55.0, "passed")])  # 60 vs 55: not significant
    assert main(["--root", str(tmp_path), "--timings", str(runs), "--check"]) == 0


def test_thresholds_min_samples_and_notes(tmp_path, capsys):
    make_repo(tmp_path)
    rel = "registered/test_k.py"
    timings = write_timings(
        tmp_path / "t.jsonl",
        [(rel, GPU, 75.0, "passed")] * 3  # +15 s = 25 %: below 30 %
        + [(rel, NIGHTLY, 9000.0, "passed")] * 2  # too few samples
        + [("registered/gone.py", GPU, 5.0, "passed")] * 3
        + [(rel, "base-b-kernel-unit-1-gpu-b200", 5.0, "passed")] * 3,
    )
    args = ["--root", str(tmp_path), "--timings", str(timings), "--check"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"note: {rel} [{NIGHTLY}]: 2 sample(s) < 3, kept" in out
    assert "registered/gone.py [base-b-kernel-unit-1-gpu-large]: file not found" in out
    assert "[base-b-kernel-unit-1-gpu-b200]: no registration for this suite any more" in out
    assert main([*args, "--min-rel", "0.2"]) == 1
    capsys.readouterr()
    assert main([*args, "--min-samples", "2"]) == 1
    assert f"{rel} [{NIGHTLY}]: declared est_time=600s, measured p90=9000s" in (
        capsys.readouterr().out
    )


def test_junit_input_is_accepted(tmp_path, capsys):
    make_repo(tmp_path)
    xml = JUnitXml()
    for elapsed in ("100", "110", "120"):
        ts = TestSuite("registered/test_k.py")
        for name, value in (
            ("path", "registered/test_k.py"),
            ("suite", GPU),
            ("status", "passed"),
            ("elapsed", elapsed),
        ):
            ts.add_property(name, value)
        xml.add_testsuite(ts)
    xml.write(str(tmp_path / "junit.xml"))
    assert main(["--root", str(tmp_path), "--timings", str(tmp_path / "junit.xml"), "--check"]) == 1
    assert "measured p90=120s" in capsys.readouterr().out


def test_a_directory_with_both_formats_counts_each_run_once(tmp_path, capsys):
    make_repo(tmp_path)
    rel = "registered/test_k.py"
    shard = tmp_path / "reports-x-0"
    write_timings(shard / "timings.jsonl", [(rel, GPU, 200.0, "passed")] * 2)
    xml = JUnitXml()
    ts = TestSuite(rel)
    for name, value in (("path", rel), ("suite", GPU), ("status", "passed"), ("elapsed", "200")):
        ts.add_property(name, value)
    xml.add_testsuite(ts)
    xml.write(str(shard / "junit.xml"))
    assert main(["--root", str(tmp_path), "--timings", str(tmp_path), "--check"]) == 0
    assert f"{rel} [{GPU}]: 2 sample(s) < 3, kept" in capsys.readouterr().out


def test_non_literal_est_time_is_reported_not_rewritten(tmp_path, capsys):
    source = (
        'from ci_runner import register_cuda_ci\nregister_cuda_ci(est_time=6 * 10, suite="s")\n'
    )
    test = make_repo(tmp_path, source)
    timings = write_timings(
        tmp_path / "t.jsonl", [("registered/test_k.py", "s", 500.0, "passed")] * 3
    )
    assert main(["--root", str(tmp_path), "--timings", str(timings), "--write"]) == 0
    assert "registered/test_k.py:2: est_time '6 * 10' is not a number literal" in (
        capsys.readouterr().out
    )
    assert test.read_text() == source


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{oops\n", "t.jsonl:1: expected a JSON object with path, suite, elapsed, status"),
        ('{"path": "a.py"}\n', "t.jsonl:1: expected a JSON object"),
    ],
)
def test_bad_timings_exit_2_with_file_and_line(tmp_path, capsys, content, message):
    make_repo(tmp_path)
    (tmp_path / "t.jsonl").write_text(content)
    assert main(["--root", str(tmp_path), "--timings", str(tmp_path / "t.jsonl")]) == 2
    assert message in capsys.readouterr().err


def test_missing_timings_and_bad_flags(tmp_path, capsys):
    make_repo(tmp_path)
    assert main(["--root", str(tmp_path), "--timings", str(tmp_path / "nope")]) == 2
    assert "nope: timings file or directory not found" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["--root", str(tmp_path), "--timings", str(tmp_path / "empty")]) == 2
    assert "no timings files found" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["--timings", "x", "--min-samples", "0"])
    assert exc.value.code == 2
    assert "--min-samples: expected a whole number from 1 to 1000000, got '0'" in (
        capsys.readouterr().err
    )
    with pytest.raises(SystemExit):
        main(["--timings", "x", "--check", "--write"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_script_entry_point(tmp_path):
    make_repo(tmp_path)
    rel = "registered/test_k.py"
    timings = write_timings(tmp_path / "t.jsonl", [(rel, GPU, 300.0, "passed")] * 3)
    proc = subprocess.run(
        [
            sys.executable,
            *("-m", "ci_runner.maintenance", "update-est-time"),
            *("--check", "--timings", str(timings)),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 1, proc.stderr
    assert "1 registration(s) drifted (>= 30% and >= 10s) over 1 measured" in proc.stdout


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
