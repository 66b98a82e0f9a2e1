"""``update-est-time --model-out``: measured seconds, merged over shards and runs, written as the
file ``--partition-model-file`` reads, so measured times plan the shards (a generated tree)."""

import json
import sys
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci
from ci_runner.cli import main as run_suite_main
from ci_runner.maintenance.est_time import main

register_cpu_ci(est_time=2, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from execution_tree import make_tree, pytest_file  # noqa: E402

FILES = {f"test_{name}.py": pytest_file("def test_x():\n    pass\n", est=10) for name in "abcd"}


def shard_rows(path: Path, rows: list[tuple[str, float, str]], shard: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(
            json.dumps({"path": f"registered/{name}", "suite": "cpu-suite", "elapsed": elapsed,
                        "status": status, "shard": shard, "plan_hash": "h"}) + "\n"
            for name, elapsed, status in rows
        )
    )  # fmt: skip


@pytest.fixture
def runs(tmp_path):
    root = make_tree(tmp_path / "repo", FILES)
    for run in ("1", "2", "3"):  # three runs of two shards each
        shard_rows(
            tmp_path / f"runs/{run}/reports-0/timings.jsonl",
            [("test_a.py", 40.0 + int(run), "passed"), ("test_b.py", 5.0, "flaky")],
            "0/2",
        )
        shard_rows(tmp_path / f"runs/{run}/reports-1/timings.jsonl",
                   [("test_c.py", 30.2, "passed"), ("test_d.py", 900.0, "timeout")], "1/2")  # fmt: skip
    resumed = tmp_path / "runs/4/reports-0/timings.jsonl"
    shard_rows(resumed, [("test_a.py", 1.0, "passed")], "0/2")
    resumed.write_text(resumed.read_text().replace("}", ', "resumed": true}'))
    return root, tmp_path / "runs"


def test_the_model_holds_every_file_with_enough_passing_samples(runs, capsys):
    root, timings = runs
    model = root / "model.json"
    code = main(["--root", str(root), "--timings", str(timings), "--model-out", str(model)])
    assert code == 0
    assert (
        f"wrote {model}: measured seconds of 3 file(s) in 1 suite(s) (those with at least 3 "
        "passing sample(s))"
    ) in capsys.readouterr().out
    assert json.loads(model.read_text()) == {
        "est": {"cpu-suite": {
            "registered/test_a.py": 43,  # p90 of 41, 42, 43 (the resumed row is no sample)
            "registered/test_b.py": 5,  # flaky runs pass
            "registered/test_c.py": 31,  # rounded up
        }}  # test_d only timed out: it keeps its est_time
    }  # fmt: skip


def test_the_planner_packs_with_the_written_model(runs, capsys):
    root, timings = runs
    model = root / "model.json"
    assert main(["--root", str(root), "--timings", str(timings), "--model-out", str(model)]) == 0
    capsys.readouterr()
    flags = ["--root", str(root), "--hw", "cpu", "--suite", "cpu-suite", "--dry-run",
             "--format", "json", "--auto-partition-id", "0", "--auto-partition-size", "2"]  # fmt: skip
    assert run_suite_main([*flags, "--partition-model-file", str(model)]) == 0
    measured = json.loads(capsys.readouterr().out)
    # est_time alone: four files of 10s, two per shard; measured: test_a (43s) alone
    assert measured["shards"][0]["files"] == ["registered/test_a.py"]
    assert measured["makespan"] == 46.0  # test_b + test_c + test_d (10s: no measurement)
    assert run_suite_main(flags) == 0
    assert [len(s["files"]) for s in json.loads(capsys.readouterr().out)["shards"]] == [2, 2]


@pytest.mark.parametrize(
    "existing, message",
    [
        ("[tool.ci-runner]\n", "exists and is not a JSON model file"),
        (None, "is a symbolic link"),
    ],
)
def test_the_model_never_replaces_what_is_not_one(runs, capsys, existing, message):
    root, timings = runs
    target = root / "model.json"
    if existing is None:
        (root / "real.json").write_text("{}")
        target.symlink_to(root / "real.json")
    else:
        target.write_text(existing)
    code = main(["--root", str(root), "--timings", str(timings), "--model-out", str(target)])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"update-est-time: error: --model-out {target}: ") and message in err
    assert existing is None or target.read_text() == existing


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
