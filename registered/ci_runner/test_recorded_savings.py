"""tools/recorded_savings.py: one record, the commits after it, each selected statically and with
the record; the clone ends where it started."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import repo_root

sys.path.insert(0, str(Path(__file__).parent))

from impact_tree import git, git_repo, make_impact_repo

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=8, suite="base-a-test-cpu")


def lab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=repo_root.ROOT, capture_output=True, text=True
    )


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """A repository recorded (synthetically: each file of ``pkg/`` run by one test) on branch
    ``rec``, with two commits after it on ``main``: a function body of ``pkg/loader.py``, then
    a document."""
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "cache"))
    root = git_repo(make_impact_repo(tmp_path / "repo"))
    git(root, "branch", "rec")
    records = tmp_path / "records"
    made = lab("tools.synthetic_records", "--root", str(root), "--hw", "cuda", "--suite",
               "unit-gpu", "--under", "pkg", "--every", "pkg/core.py", "--out", str(records))  # fmt: skip
    assert made.returncode == 0, made.stderr
    loader = root / "pkg" / "loader.py"
    loader.write_text(loader.read_text().replace("return markers", "return tuple(markers)"))
    git(root, "commit", "-qam", "loader body")
    (root / "docs" / "readme.md").write_text("hello again\n")
    git(root, "commit", "-qam", "docs")
    git(root, "checkout", "-q", "rec")
    return root, records


def test_each_later_commit_is_selected_both_ways(recorded, tmp_path):
    root, records = recorded
    out = tmp_path / "rows.jsonl"
    done = lab("tools.recorded_savings", "--root", str(root), "--records", str(records),
               "--hw", "cuda", "--suite", "unit-gpu", "--rev", "main", "--commits", "5",
               "--json", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    later = git(root, "rev-list", "--reverse", "rec..main").split()
    assert [row["commit"] for row in rows] == [c[:10] for c in later]
    assert [row["distance"] for row in rows] == [1, 2]
    body, docs = rows
    # the record of the one test that ran load_jit() keeps it; the static closure keeps both
    # importers of pkg.loader
    assert (body["files_recorded"], body["files_static"]) == (1, 2)
    assert "7 of 7 file(s) decided by their record" in body["records"][0]
    # a document (no ignore rule here) runs every test statically; with the record, only the
    # test whose inputs the first commit changed falls back to its static closure
    assert docs["runs_everything"] and docs["static"] == docs["est_total"]
    assert docs["files_recorded"] == 1 and docs["recorded"] < docs["static"]
    assert "1: pkg/loader.py changed since the recorded commit" in docs["records"][0]
    assert "recorded: median" in done.stdout
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD").strip() == "rec"
    assert git(root, "status", "--porcelain") == ""


def test_rebased_each_change_is_one_change_behind_the_record(recorded, tmp_path):
    """``--rebase``: the document commit applied to the recorded commit alone leaves no record
    stale, so nothing runs; a change that does not apply there is listed and skipped."""
    root, records = recorded
    git(root, "checkout", "-q", "main")
    (root / "pkg" / "loader.py").write_text("def load_jit():\n    return 3\n")
    git(root, "commit", "-qam", "conflicts with nothing but the first change")
    git(root, "checkout", "-q", "rec")
    out = tmp_path / "rows.jsonl"
    done = lab("tools.recorded_savings", "--root", str(root), "--records", str(records),
               "--hw", "cuda", "--suite", "unit-gpu", "--rev", "main", "--rebase",
               "--json", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    body, docs, conflict = [json.loads(line) for line in out.read_text().splitlines()]
    assert (body["files_recorded"], body["files_static"]) == (1, 2)
    assert docs["runs_everything"] and docs["recorded"] == 0
    assert "7 of 7 file(s) decided by their record" in docs["records"][0]
    assert conflict == {"commit": conflict["commit"], "distance": 3, "applies": False}
    assert "does not apply to the recorded commit" in done.stdout
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD").strip() == "rec"
    assert git(root, "status", "--porcelain") == ""


def test_records_of_another_commit_are_refused(recorded):
    root, records = recorded
    git(root, "checkout", "-q", "main")
    done = lab("tools.recorded_savings", "--root", str(root), "--records", str(records),
               "--hw", "cuda", "--suite", "unit-gpu")  # fmt: skip
    assert done.returncode != 0
    assert f"--records {records} were made at" in done.stderr
    empty = records.parent / "empty"
    empty.mkdir()
    none = lab("tools.recorded_savings", "--root", str(root), "--records", str(empty),
               "--hw", "cuda", "--suite", "unit-gpu")  # fmt: skip
    assert none.returncode != 0
    assert f"--records {empty}: no readable record.json" in none.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
