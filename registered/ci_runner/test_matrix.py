"""GitHub Actions matrices from the plan: shard counts from est_time and the job budget."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci
from ci_runner.catalog import Suite
from ci_runner.model import FileToRun
from ci_runner.plan.matrix import MatrixError, build_matrix, shard_budget_seconds

register_cpu_ci(est_time=4, suite="base-a-test-cpu")

UNIT = Suite(
    name="base-b-kernel-unit-1-gpu-large",
    hw="cuda",
    runner="1-gpu-h100",
    job_timeout_minutes=60,
)
MULTI = Suite(
    name="base-b-kernel-unit-8-gpu-h200",
    hw="cuda",
    gpus_per_file=8,
    runner="8-gpu-h200",
    job_timeout_minutes=90,
)


def files(suite: Suite, *ests: float) -> list[FileToRun]:
    return [
        FileToRun(f"registered/{suite.name}/test_{i}.py", suite.name, e) for i, e in enumerate(ests)
    ]


def test_budget_is_three_quarters_of_the_job():
    assert shard_budget_seconds(60) == 2700.0


def test_shard_count_from_total_est_and_entries_for_fromjson():
    # 10 files x 600 s = 6000 s over a 2700 s budget -> ceil(2.22) = 3 shards (LPT: 4/3/3 files,
    # makespan 2400 s fits).
    result = build_matrix(files(UNIT, *[600] * 10), [UNIT], None)
    assert result["shards"] == {UNIT.name: 3}
    assert result["jobs"] == 3
    assert result["include"] == [
        {
            "suite": UNIT.name,
            "shard": i,
            "shards": 3,
            "runner": "1-gpu-h100",
            "timeout_minutes": 60,
            "name": f"{UNIT.name} {i + 1}/3",
        }
        for i in range(3)
    ]
    assert result["sizing"][UNIT.name]["makespan"] == 2400.0
    json.dumps(result)  # what --print-matrix prints


def test_grows_until_the_plan_fits_the_budget():
    # 3 x 1800 s: ceil(5400 / 2700) = 2, but two 1800 s files cannot share a 2700 s shard.
    result = build_matrix(files(UNIT, 1800, 1800, 1800), [UNIT], None)
    assert result["shards"] == {UNIT.name: 3}
    assert result["sizing"][UNIT.name]["makespan"] == 1800.0


def test_never_more_shards_than_files_and_one_for_an_empty_suite():
    # 3 x 45 s with a 1-minute target (45 s budget): one file per shard, never more.
    assert build_matrix(files(UNIT, 45, 45, 45), [UNIT], 1)["shards"] == {UNIT.name: 3}
    empty = build_matrix([], [UNIT], None)
    assert empty["shards"] == {UNIT.name: 1}
    assert empty["include"][0]["shards"] == 1


def test_target_minutes_overrides_the_catalog_budget():
    result = build_matrix(files(UNIT, *[600] * 10), [UNIT], 20)  # budget 900 s
    assert result["shards"] == {UNIT.name: 10}
    assert result["include"][0]["timeout_minutes"] == 20


def test_several_suites_get_their_own_counts_and_runners():
    result = build_matrix(files(UNIT, 100, 100) + files(MULTI, 4000, 4000), [UNIT, MULTI], None)
    assert result["shards"] == {UNIT.name: 1, MULTI.name: 2}
    assert [(e["suite"], e["runner"], e["timeout_minutes"]) for e in result["include"]] == [
        (UNIT.name, "1-gpu-h100", 60),
        (MULTI.name, "8-gpu-h200", 90),
        (MULTI.name, "8-gpu-h200", 90),
    ]


def test_one_file_over_the_budget_is_an_error_naming_it():
    with pytest.raises(MatrixError) as exc:
        build_matrix(files(UNIT, 100, 2701), [UNIT], None)
    message = str(exc.value)
    assert "registered/base-b-kernel-unit-1-gpu-large/test_1.py (est_time=2701s)" in message
    assert "exceed(s) the shard budget of 2700s (0.75 x 60 min)" in message


def test_over_github_job_limit_is_an_error():
    # Refused before planning: 300 x 40 s need at least ceil(12000 / 45) = 267 shards.
    with pytest.raises(MatrixError, match=r"needs at least 267 jobs .* over GitHub's limit of 256"):
        build_matrix(files(UNIT, *[40] * 300), [UNIT], 1)
    # Refused after planning: 30 s files pack one per 45 s shard, so 150 + 110 = 260 jobs,
    # though by volume 100 + 74 would do.
    with pytest.raises(MatrixError, match=r"needs 260 jobs \(base-b-kernel-unit-1-gpu-large: 150"):
        build_matrix(files(UNIT, *[30] * 150) + files(MULTI, *[30] * 110), [UNIT, MULTI], 1)


def test_bisects_when_stepping_is_not_enough():
    # 20 files of 30 s and a 45 s budget: ceil(600 / 45) = 14 shards do not fit (two files of
    # 30 s share a shard); only 20 do. Found by bisection after 8 single steps.
    result = build_matrix(files(UNIT, *[30] * 20), [UNIT], 1)
    assert result["shards"] == {UNIT.name: 20}
    assert result["sizing"][UNIT.name]["makespan"] == 30.0


def test_long_offender_lists_are_cut():
    with pytest.raises(MatrixError, match=r"test_4.py \(est_time=99s\) and 2 more alone"):
        build_matrix(files(UNIT, *[99] * 7), [UNIT], 1)


def test_missing_budget_runner_or_bad_target_are_errors():
    no_budget = Suite(name="s", hw="cuda", runner="r")
    with pytest.raises(MatrixError, match="suite 's' has no job-timeout-minutes"):
        build_matrix([], [no_budget], None)
    no_runner = Suite(name="s", hw="cuda", job_timeout_minutes=10)
    with pytest.raises(MatrixError, match="suite 's' has no runner label"):
        build_matrix([], [no_runner], None)
    with pytest.raises(MatrixError, match="--matrix-target-minutes must be positive, got 0"):
        build_matrix([], [UNIT], 0)
    with pytest.raises(MatrixError, match="belongs to suite 'other'"):
        build_matrix([FileToRun("a.py", "other", 1)], [UNIT], None)


def test_print_matrix_through_the_cli_is_one_fromjson_ready_line():
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [
            *(sys.executable, str(root / "run_suite.py")),
            *("--hw", "cpu", "--suite", "base-a-test-cpu", "--print-matrix"),
        ],
        capture_output=True,
        text=True,
        cwd=root,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("\n") == 1  # one line, so it fits a $GITHUB_OUTPUT entry
    matrix = json.loads(proc.stdout)
    assert matrix["include"][0]["runner"] == "ubuntu-latest"
    assert matrix["jobs"] == len(matrix["include"]) == matrix["shards"]["base-a-test-cpu"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
