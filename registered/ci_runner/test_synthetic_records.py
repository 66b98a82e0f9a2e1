"""tools/synthetic_records.py: the record directory it writes (to time ``--deps-from`` on a tree
whose tests cannot run here) is valid for every test of the suite, together runs every Python
file under ``--under``, and decides the selection as records do."""

import subprocess
import sys
from pathlib import Path

import pytest
import repo_root

sys.path.insert(0, str(Path(__file__).parent))

from impact_tree import git_repo, make_impact_repo, run_dry

from ci_runner import register_cpu_ci
from ci_runner.impact.blocks import MODULE
from ci_runner.impact.record_format import read_records

register_cpu_ci(est_time=6, suite="base-a-test-cpu")


def synthetic(root: Path, out: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tools.synthetic_records", "--root", str(root), *flags,
         "--out", str(out)],
        cwd=repo_root.ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_every_test_gets_a_valid_record_and_every_file_is_run(tmp_path, monkeypatch):
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "cache"))
    root = git_repo(make_impact_repo(tmp_path / "repo"))
    out = tmp_path / "records"
    flags = ("--hw", "cuda", "--suite", "unit-gpu", "--under", "pkg", "--every", "pkg/core.py")
    result = synthetic(root, out, *flags)
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    head = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert records.commit == head and records.tests and not records.damaged
    assert all(MODULE in r.code["pkg/core.py"] for r in records.tests.values())
    ran = {path for r in records.tests.values() for path in r.code}
    assert {p.relative_to(root).as_posix() for p in (root / "pkg").rglob("*.py")} <= ran
    (root / "pkg" / "core.py").write_text((root / "pkg" / "core.py").read_text() + "\nX = 1\n")
    listing = tmp_path / "changed.txt"
    listing.write_text("pkg/core.py\n")
    code, document = run_dry(root, "--changed-files", str(listing), "--deps-from", str(out))
    assert code == 0
    lines = " ".join(document["change_impact"]["records"])
    assert f"{len(records.tests)} of {len(records.tests)} file(s) decided by their record" in lines


def test_a_dirty_tree_or_an_empty_suite_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "cache"))
    root = git_repo(make_impact_repo(tmp_path / "repo"))
    empty = synthetic(root, tmp_path / "r1", "--hw", "cpu", "--suite", "no-such-suite")
    assert empty.returncode == 2 and "--suite no-such-suite" in empty.stderr
    (root / "pkg" / "core.py").write_text("X = 2\n")
    dirty = synthetic(root, tmp_path / "r2", "--hw", "cuda", "--suite", "unit-gpu")
    assert dirty.returncode != 0 and "uncommitted changes" in dirty.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
