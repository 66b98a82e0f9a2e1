"""The include-scan cache (ci_runner/impact/include_scans.py): a later run takes each kernel
file's ``#include`` scan from it instead of scanning again, a changed file is scanned again, a
file whose stat changed but not its content is only hashed, and a damaged entry is one notice
and a rescan. Generated tree: registered/ci_runner/impact_tree.py."""

import json
import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from impact_tree import dry_changed, kept, make_impact_repo

from ci_runner import register_cpu_ci
from cpp_includes import closure

register_cpu_ci(est_time=4, suite="base-a-test-cpu")


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "cache"))
    root = make_impact_repo(tmp_path / "repo")
    # every file counts as settled (its change time is not settable): its scan may be kept
    monkeypatch.setattr(closure, "FRESH_NS", -(10**15))
    monkeypatch.setattr(closure, "_scan_memo", {})  # this process has scanned nothing
    return root


def fresh_process(monkeypatch, scanned: list[bytes]) -> None:
    """Forget this process's scans, as a new run would, and note each file scanned."""
    monkeypatch.setattr(closure, "_scan_memo", {})
    real = closure.scan_source

    def counting(data: bytes):
        scanned.append(data)
        return real(data)

    monkeypatch.setattr(closure, "scan_source", counting)


def cache_file(tmp_path: Path) -> Path:
    (found,) = (tmp_path / "cache").glob("includes-*.json")
    return found


def test_a_later_run_takes_the_scans_from_the_cache(repo, tmp_path, monkeypatch, capsys):
    first = kept(dry_changed(repo, "kernels/include/lib/deep.h"))
    assert first == ["registered/test_kern.py"]
    stored = json.loads(cache_file(tmp_path).read_text())["entries"]
    assert "kernels/csrc/k/a.cuh" in stored
    scanned: list[bytes] = []
    fresh_process(monkeypatch, scanned)
    assert kept(dry_changed(repo, "kernels/include/lib/deep.h")) == first
    assert scanned == []
    assert "include-scan cache" not in capsys.readouterr().err


def test_a_changed_file_is_scanned_again(repo, monkeypatch):
    assert kept(dry_changed(repo, "kernels/include/lib/unused.h")) == []
    source = repo / "kernels" / "csrc" / "k" / "b.cuh"
    source.write_text(source.read_text() + "#include <lib/unused.h>  // For unused\n")
    scanned: list[bytes] = []
    fresh_process(monkeypatch, scanned)
    assert kept(dry_changed(repo, "kernels/include/lib/unused.h")) == ["registered/test_pos.py"]
    assert [data for data in scanned if b"lib/unused.h" in data]


def test_a_touched_file_is_hashed_not_scanned(repo, monkeypatch):
    dry_changed(repo, "kernels/include/lib/deep.h")
    header = repo / "kernels" / "include" / "lib" / "common.h"
    os.utime(header, (time.time() - 50, time.time() - 50))  # a new stat, the same content
    scanned: list[bytes] = []
    fresh_process(monkeypatch, scanned)
    assert kept(dry_changed(repo, "kernels/include/lib/deep.h")) == ["registered/test_kern.py"]
    assert scanned == []


def test_a_deleted_file_leaves_the_cache(repo, tmp_path, monkeypatch):
    dry_changed(repo, "kernels/include/lib/deep.h")
    (repo / "kernels" / "include" / "lib" / "only_b.h").unlink()
    fresh_process(monkeypatch, [])
    dry_changed(repo, "kernels/include/lib/deep.h")
    stored = json.loads(cache_file(tmp_path).read_text())["entries"]
    assert "kernels/include/lib/only_b.h" not in stored
    assert "kernels/include/lib/deep.h" in stored


def test_a_damaged_entry_is_one_notice_and_a_rescan(repo, tmp_path, monkeypatch, capsys):
    dry_changed(repo, "kernels/include/lib/deep.h")
    path = cache_file(tmp_path)
    data = json.loads(path.read_text())
    data["entries"]["kernels/include/lib/common.h"][2] = [["include", "?", "x", 1]]
    path.write_text(json.dumps(data))
    capsys.readouterr()
    scanned: list[bytes] = []
    fresh_process(monkeypatch, scanned)
    assert kept(dry_changed(repo, "kernels/include/lib/deep.h")) == ["registered/test_kern.py"]
    err = capsys.readouterr().err
    assert "include-scan cache" in err and "kernels/include/lib/common.h" in err
    assert len(scanned) == 1  # the damaged entry's file alone


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
