"""Inputs the runner used to drop or follow without a word: a pyproject.toml that does not parse
on the way up to the catalog (the walk went on to a parent repository's), a directory the change
analysis cannot list (its files were unseen, so a test importing them was dropped), a
changed-files list whose names hold a character ``str.splitlines`` splits at, a GITHUB_RUN_ID
that is a path."""

import os
import sys
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci
from ci_runner.catalog import CatalogError, find_root
from ci_runner.catalog.execution_settings import CudaCoredump
from ci_runner.env import EnvVarError
from ci_runner.execution.cuda_coredump import dump_directory
from ci_runner.impact import index as index_module

sys.path.insert(0, str(Path(__file__).parent))
from impact_tree import GPU_TESTS, make_impact_repo, run_dry

register_cpu_ci(est_time=7, suite="base-a-test-cpu")


def test_a_broken_pyproject_on_the_way_up_is_passed_with_a_notice(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text("[tool.ci-runner]\n")
    inner = tmp_path / "repo"
    inner.mkdir()
    (inner / "pyproject.toml").write_text("[tool\n")
    assert find_root(inner) == tmp_path
    assert capsys.readouterr().err.startswith(
        f"notice: passed {inner / 'pyproject.toml'} (Expected ']' at the end of a table "
    )
    (tmp_path / "pyproject.toml").unlink()
    with pytest.raises(CatalogError) as raised:
        find_root(inner)
    assert f"or any parent (not read: {inner / 'pyproject.toml'} (Expected" in str(raised.value)


def test_a_directory_the_analysis_cannot_list_runs_the_whole_suite(tmp_path, monkeypatch):
    root = make_impact_repo(tmp_path / "repo")
    real = os.scandir

    def scandir(path):
        if Path(path) == root / "pkg" / "sub":
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(index_module.os, "scandir", scandir)
    (root / "changed.txt").write_text("pkg/util.py\n")
    code, document = run_dry(root, "--changed-files", str(root / "changed.txt"))
    assert code == 0
    impact = document["change_impact"]
    assert impact["runs_everything"] and impact["files_after"] == len(GPU_TESTS)
    assert impact["run_everything_reasons"] == [
        "directory pkg/sub/ cannot be listed (Permission denied)"
    ]


def test_a_changed_file_named_with_a_line_separator_is_one_path(tmp_path):
    root = make_impact_repo(tmp_path / "repo", {"pkg/odd\u2028name.py": "X = 1\n"})
    (root / "changed.txt").write_text("pkg/odd\u2028name.py\n", encoding="utf-8")
    code, document = run_dry(root, "--changed-files", str(root / "changed.txt"))
    assert code == 0
    assert [c["path"] for c in document["change_impact"]["changes"]] == ["pkg/odd\u2028name.py"]


@pytest.mark.parametrize(
    ("run_id", "attempt", "bad"),
    [("../../etc", "1", "GITHUB_RUN_ID='../../etc'"), ("77", "2/..", "GITHUB_RUN_ATTEMPT='2/..'")],
)
def test_a_run_id_that_is_no_number_never_becomes_a_path(tmp_path, run_id, attempt, bad):
    settings = CudaCoredump("SW", "SW_DIR", "dumps")
    env = {"SW_DIR": str(tmp_path), "GITHUB_RUN_ID": run_id, "GITHUB_RUN_ATTEMPT": attempt}
    with pytest.raises(EnvVarError) as raised:
        dump_directory(settings, env)
    assert str(raised.value) == (
        f"environment variable {bad} is not a number; GitHub Actions sets it to one"
    )
    assert dump_directory(settings, {**env, "GITHUB_RUN_ID": "77", "GITHUB_RUN_ATTEMPT": "2"}) == (
        tmp_path / "77-2"
    )


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
