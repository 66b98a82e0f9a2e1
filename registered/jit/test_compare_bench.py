"""verification/compare_bench.py: old vs new kernel benchmark rows, on made-up JSON files."""

import json
import sys

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cpu_ci
from verification.compare_bench import main

register_cpu_ci(est_time=3, suite="base-a-test-cpu")


def write(path, rows):
    path.write_text(
        json.dumps({"rows": [{"kernel": k, "shape": s, "ours_us": us} for k, s, us in rows]})
    )
    return str(path)


def test_mean_of_the_new_runs_within_the_limit_passes(tmp_path, capsys):
    old = write(tmp_path / "old.json", [("rmsnorm", "a", 10.0), ("rope", "b", 20.0)])
    new1 = write(tmp_path / "n1.json", [("rmsnorm", "a", 10.3), ("rope", "b", 19.0)])
    new2 = write(tmp_path / "n2.json", [("rmsnorm", "a", 10.0), ("rope", "b", 19.5)])
    assert main([old, new1, new2]) == 0  # rmsnorm: mean 10.15, 1.5% slower
    assert "no row slower than old by more than 2% (2 rows)" in capsys.readouterr().out


def test_a_slower_row_or_a_missing_row_fails(tmp_path, capsys):
    old = write(tmp_path / "old.json", [("rmsnorm", "a", 10.0), ("rope", "b", 20.0)])
    new = write(tmp_path / "new.json", [("rmsnorm", "a", 10.5)])
    assert main([old, new, "--max-slowdown", "0.02"]) == 1
    out = capsys.readouterr().out
    assert "rmsnorm a: 1.050x the old time" in out
    assert "rope b: missing from a new run" in out


def test_unreadable_file_is_a_usage_error(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main([str(bad), str(bad)]) == 2
    assert "compare_bench: cannot read the benchmark JSON" in capsys.readouterr().err


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
