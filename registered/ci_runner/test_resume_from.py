"""``--resume-from TIMINGS``: a re-run of a shard skips what its previous attempt passed, for the
same plan and shard only (a generated tree; counters the test files keep)."""

import json
import sys
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cpu_ci
from ci_runner.maintenance.est_time import load_samples
from ci_runner.model import FileToRun
from ci_runner.plan.resume import ResumeError, load_resume

register_cpu_ci(est_time=5, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from execution_tree import make_tree, pytest_file, run_suite  # noqa: E402

from testing.tree_builder import run_maintenance  # noqa: E402

COUNTED = """
from pathlib import Path

def count():
    counter = Path(__file__).with_suffix(".count")
    runs = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(runs))
    return runs
"""
FILES = {
    "test_a.py": pytest_file(COUNTED + "\ndef test_a():\n    count()\n", est=3),
    "test_fixed.py": pytest_file(
        COUNTED + "\ndef test_b():\n    assert count() > 1, 'broken on the first attempt'\n", est=2
    ),
    "test_c.py": pytest_file(COUNTED + "\ndef test_c():\n    count()\n", est=1),
}


def runs(root: Path, name: str) -> int:
    counter = root / "registered" / name.replace(".py", ".count")
    return int(counter.read_text()) if counter.exists() else 0


def test_a_rerun_runs_only_what_the_previous_attempt_did_not_pass(tmp_path):
    root = make_tree(tmp_path, FILES)
    first = run_suite(root, "--continue-on-error", "--timings-out", str(root / "t1.jsonl"))
    assert first.returncode == 1, first.stdout + first.stderr
    second = run_suite(
        root, "--resume-from", str(root / "t1.jsonl"), "--junit-xml", str(root / "j2.xml"),
        "--timings-out", str(root / "t2.jsonl"),
    )  # fmt: skip
    out = second.stdout
    assert second.returncode == 0, out + second.stderr
    assert (runs(root, "test_a.py"), runs(root, "test_fixed.py"), runs(root, "test_c.py")) == (
        1, 2, 1,
    )  # fmt: skip
    assert (
        f"notice: --resume-from {root / 't1.jsonl'}: 2 of 3 file(s) of shard 0/1 passed in the "
        "previous attempt (plan "
    ) in out
    assert "executing 1 file(s) of shard 0/1" in out
    assert "[resumed] registered/test_a.py  passed  [passed in a previous attempt" in out
    assert out.rstrip().splitlines()[-1] == "summary: 1 passed, 0 failed, 2 skipped"
    rows = {r["path"]: r for r in map(json.loads, (root / "t2.jsonl").read_text().splitlines())}
    assert rows["registered/test_a.py"]["resumed"] is True
    assert rows["registered/test_a.py"]["status"] == "passed"
    assert "resumed" not in rows["registered/test_fixed.py"]
    # the merged check sees every planned file once, from the re-run's reports alone
    plan = root / "plan.json"
    plan.write_text(run_suite(root, "--dry-run", "--format", "json").stdout)
    reports = root / "reports"
    reports.mkdir()
    (root / "j2.xml").rename(reports / "junit.xml")
    merge = run_maintenance("merge-junit", "--plan", str(plan), "--junit-dir", str(reports))
    assert merge.returncode == 0, merge.stdout + merge.stderr
    # carried rows are no new samples: est_time counts the attempt that ran the file
    samples = load_samples([root / "t2.jsonl"])
    assert list(samples) == [("registered/test_fixed.py", "cpu-suite")]
    # a third attempt of a green shard runs nothing
    third = run_suite(root, "--resume-from", str(root / "t2.jsonl"))
    assert third.returncode == 0 and "executing 0 file(s)" in third.stdout
    assert runs(root, "test_fixed.py") == 2


FILE = FileToRun(path="registered/test_a.py", suite="s", est_time=3)
ROW = {"path": FILE.path, "suite": "s", "status": "passed", "elapsed": 2.5, "plan_hash": "h1",
       "shard": "0/2"}  # fmt: skip


def timings(tmp_path: Path, *rows: dict) -> Path:
    path = tmp_path / "timings.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_carried_files_keep_their_status_and_time(tmp_path):
    resume = load_resume(timings(tmp_path, ROW), "h1", "0/2", [FILE], fail_on_flaky=False)
    (carried,) = resume.carried
    assert (carried.path, carried.status, carried.elapsed, carried.resumed) == (
        FILE.path, "passed", 2.5, True,
    )  # fmt: skip
    assert carried.attempts == ()
    assert [c.outcome for c in carried.cases] == ["skipped"]


@pytest.mark.parametrize(
    "row, plan, shard, fail_on_flaky, notice",
    [
        (ROW, "h2", "0/2", False, "written for plan h1, this run's plan is h2"),
        (ROW, "h1", "1/2", False, "written for shard 0/2, this is shard 1/2"),
        ({**ROW, "status": "failed"}, "h1", "0/2", False, "0 of 1 file(s) of shard 0/2 passed"),
        ({**ROW, "status": "flaky"}, "h1", "0/2", True, "0 of 1 file(s)"),
        ({**ROW, "status": "flaky"}, "h1", "0/2", False, "1 of 1 file(s)"),
        ({**ROW, "suite": "other"}, "h1", "0/2", False, "0 of 1 file(s)"),
    ],
)
def test_only_a_pass_of_the_same_plan_and_shard_is_carried(
    tmp_path, row, plan, shard, fail_on_flaky, notice
):
    resume = load_resume(timings(tmp_path, row), plan, shard, [FILE], fail_on_flaky)
    assert notice in resume.notice
    assert len(resume.carried) == int(notice.startswith("1 of 1"))


def test_a_missing_file_runs_everything_with_a_notice(tmp_path):
    resume = load_resume(tmp_path / "none.jsonl", "h1", "0/2", [FILE], False)
    assert resume.carried == ()
    assert resume.notice.endswith(
        "not found (no previous attempt); running every file of shard 0/2"
    )


@pytest.mark.parametrize(
    "text, message",
    [
        ("not json\n", ":1: not a JSON line"),
        ("[1]\n", ":1: expected a JSON object written by --timings-out"),
        (json.dumps({**ROW, "plan_hash": 7}) + "\n", ":1: key 'plan_hash' must be a string"),
        ("\n" + json.dumps({**ROW, "elapsed": -1}) + "\n", ":2: key 'elapsed' must be a number"),
        (json.dumps({**ROW, "elapsed": True}) + "\n", ":1: key 'elapsed' must be a number"),
    ],
)
def test_a_malformed_timings_file_is_an_error_naming_file_and_line(tmp_path, text, message):
    path = tmp_path / "t.jsonl"
    path.write_text(text)
    with pytest.raises(ResumeError, match="--resume-from") as error:
        load_resume(path, "h1", "0/2", [FILE], False)
    assert f"{path}{message}" in str(error.value)


def test_a_timings_path_that_is_no_regular_file_is_an_error(tmp_path):
    with pytest.raises(ResumeError, match="cannot read it"):
        load_resume(tmp_path, "h1", "0/2", [FILE], False)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
