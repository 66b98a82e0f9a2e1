"""The change-impact analysis runs with a raised collector threshold, restored after."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from impact_tree import changed_files, make_impact_repo, run_dry

from ci_runner import register_cpu_ci
from ci_runner.impact import selection
from ci_runner.impact.fewer_collections import ALLOCATIONS, fewer_collections

register_cpu_ci(est_time=2, suite="base-a-test-cpu")


@pytest.fixture
def threshold():
    before = gc.get_threshold()
    gc.set_threshold(700, 11, 12)
    yield
    gc.set_threshold(*before)


def test_raised_inside_and_restored_after(threshold) -> None:
    with fewer_collections():
        assert gc.get_threshold() == (ALLOCATIONS, 11, 12)
    assert gc.get_threshold() == (700, 11, 12)


def test_restored_when_the_analysis_raises(threshold) -> None:
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("analysis failed")
    assert gc.get_threshold() == (700, 11, 12)


def test_cycles_are_still_collected(threshold) -> None:
    """Garbage in cycles is freed inside the block once enough is allocated."""
    collected: list[int] = []
    gc.callbacks.append(lambda phase, info: collected.append(1) if phase == "stop" else None)
    try:
        with fewer_collections():
            for _ in range(3 * ALLOCATIONS):
                cycle: list = []
                cycle.append(cycle)
    finally:
        gc.callbacks.pop()
    assert collected


def test_the_cli_selects_under_the_raised_threshold(tmp_path, monkeypatch, threshold) -> None:
    """``--changed-files`` runs the selection inside the block, and the run ends restored."""
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "cache"))
    seen: list[tuple[int, int, int]] = []
    select = selection.select_changed

    def watched(*args, **kwargs):
        seen.append(gc.get_threshold())
        return select(*args, **kwargs)

    monkeypatch.setattr(selection, "select_changed", watched)
    root = make_impact_repo(tmp_path / "repo")
    code, document = run_dry(root, *changed_files(root, "pkg/util.py"))
    assert code == 0 and document["change_impact"]["kept"]
    assert seen == [(ALLOCATIONS, 11, 12)]
    assert gc.get_threshold() == (700, 11, 12)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
