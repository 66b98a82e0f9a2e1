"""The catalog's ignore rules (paths that affect no test, with .gitignore semantics), what
overrides them (a test known to read the path), and how a selection is shown: one summary line
for a real run, the reasons for a dry run. Generated trees (registered/ci_runner/impact_tree.py)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from impact_tree import (
    IMPACT_TABLE,
    changed_files,
    dry_changed,
    kept,
    make_impact_repo,
    registered_file,
    run_dry,
)

from ci_runner import register_cpu_ci
from ci_runner.catalog import load_catalog
from ci_runner.cli import main
from ci_runner.collect import collect
from ci_runner.impact import ChangeSet, Reason, select_changed
from ci_runner.impact.changes import Change
from ci_runner.impact.path_rules import matching_pattern
from ci_runner.select import select

register_cpu_ci(est_time=8, suite="base-a-test-cpu")

IGNORE = IMPACT_TABLE + 'ignore = ["docs/**", "*.md", "!keep/*.md", "/notes.txt"]\n'


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "impact-cache"))


listed = changed_files


def impact_of(root: Path, *paths: str) -> dict:
    return dry_changed(root, *paths)["change_impact"]


@pytest.mark.parametrize(
    ("path", "pattern"),
    [
        ("docs/guide/index.rst", "docs/**"),
        ("README.md", "*.md"),
        ("pkg/deep/NOTES.md", "*.md"),  # no slash: any depth, as in .gitignore
        ("notes.txt", "/notes.txt"),  # a leading slash: the root only
        ("keep/x.md", None),  # taken back by !keep/*.md
        ("sub/notes.txt", None),
    ],
)
def test_ignore_patterns_follow_gitignore(path, pattern):
    patterns = ("docs/**", "*.md", "!keep/*.md", "/notes.txt")
    assert matching_pattern(patterns, path) == pattern


def test_ignored_changes_affect_no_test(tmp_path):
    files = {"README.md": "x\n", "docs/guide.rst": "x\n", "notes.txt": "x\n"}
    root = make_impact_repo(tmp_path / "repo", files, table=IGNORE)
    impact = impact_of(root, "README.md", "docs/guide.rst", "notes.txt")
    assert impact["runs_everything"] is False
    assert impact["kept"] == []
    assert impact["ignored"] == [
        {"path": "README.md", "pattern": "*.md"},
        {"path": "docs/guide.rst", "pattern": "docs/**"},
        {"path": "notes.txt", "pattern": "/notes.txt"},
    ]
    # beside a real change, an ignored file does not make the whole suite run
    impact = impact_of(root, "README.md", "pkg/core.py")
    assert [entry["path"] for entry in impact["kept"]] == ["registered/test_core.py"]
    # a deleted documentation file is ignored too: nothing used it
    assert impact_of(root, "docs/gone.md")["kept"] == []


def test_a_path_no_rule_matches_still_fails_open(tmp_path):
    root = make_impact_repo(tmp_path / "repo", {"keep/x.md": "x\n"}, table=IGNORE)
    impact = impact_of(root, "keep/x.md")
    assert impact["runs_everything"] is True
    assert impact["ignored"] == []


def test_an_ignored_path_a_test_reaches_is_not_ignored(tmp_path):
    files = {
        "docs/conf.py": "VALUE = 1\n",
        "registered/test_docs.py": registered_file("import docs.conf"),
    }
    root = make_impact_repo(tmp_path / "repo", files, table=IGNORE)
    impact = impact_of(root, "docs/conf.py")
    assert [entry["path"] for entry in impact["kept"]] == ["registered/test_docs.py"]
    assert impact["ignored"] == []
    assert impact["not_ignored"] == [
        "docs/conf.py matches ignore 'docs/**', but registered/test_docs.py reaches it "
        "(docs/conf.py -> registered/test_docs.py [imports]): not ignored"
    ]


class Recorded:
    """A recorded layer that decides nothing and reports the paths its tests read."""

    def __init__(self, opened: set[str], decided: dict[str, bool] | None = None) -> None:
        self.opened, self.decided = opened, decided or {}

    def read_paths(self) -> set[str]:
        return self.opened

    def decides(self, test: str) -> bool:
        return test in self.decided

    def reason(self, test: str, changes: tuple[Change, ...]) -> Reason | None:
        from ci_runner.impact import Link

        if not self.decided[test]:
            return None
        return Reason((Link(changes[0].path, "changed"), Link(test, "opened it when recorded")))


def selection_of(root: Path):
    catalog = load_catalog(root)
    registrations = collect(catalog).registrations
    return catalog, select(registrations, catalog, "cuda", ["unit-gpu"], False)


def test_an_ignored_path_a_recorded_test_opened_is_not_ignored(tmp_path):
    root = make_impact_repo(tmp_path / "repo", {"docs/table.rst": "x\n"}, table=IGNORE)
    catalog, selection = selection_of(root)
    changes = ChangeSet("t", (Change("docs/table.rst"),))
    impact = select_changed(selection, catalog, changes, Recorded({"docs/table.rst"}))
    assert impact.ignored == ()
    assert impact.not_ignored == (
        "docs/table.rst matches ignore 'docs/**', but a recorded test read it: not ignored",
    )
    assert impact.run_everything  # no test has a record: what reads it cannot be traced
    # with records, the tests that have one are decided by them; the others fail open
    decided = {"registered/test_core.py": True, "registered/test_kern.py": False}
    impact = select_changed(selection, catalog, changes, Recorded({"docs/table.rst"}, decided))
    assert impact.run_everything == ()
    assert "registered/test_kern.py" not in impact.reasons
    assert impact.reasons["registered/test_core.py"].chain[-1].how == "opened it when recorded"
    assert "what reads it cannot be traced" in impact.reasons["registered/test_pos.py"].note


# ---------------------------------------------------------------- how the selection is shown


def test_a_real_run_prints_one_summary_line_and_a_dry_run_the_reasons(tmp_path, capsys):
    extra = {
        "registered/test_cpu_other.py": registered_file("import os", est=4, suite="unit-cpu"),
        "README.md": "x\n",
    }
    root = make_impact_repo(tmp_path / "repo", extra, table=IGNORE)
    flags = ["--root", str(root), "--hw", "cpu", "--suite", "unit-cpu"]
    assert main([*flags, *listed(root, "pkg/util.py", "README.md")]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if "change impact" in line]
    assert lines == [
        f"change impact (--changed-files {root / 'changed.txt'}): 2 changed file(s), 1 ignored; "
        f"keeps 1 of 2 file(s), drops 1, est 5.0s of 9.0s (56%), saves 4.0s; analysis "
        + lines[0].rsplit("analysis ", 1)[1]
    ]
    assert "pkg/util.py ->" not in out and "ignored: README.md" not in out
    assert main([*flags, "--dry-run", *listed(root, "pkg/util.py", "README.md")]) == 0
    out = capsys.readouterr().out
    assert "  ignored: README.md (ignore *.md)" in out
    assert "  registered/test_cpu.py: pkg/util.py -> pkg/core.py [imports] -> " in out


def test_the_summary_says_why_it_failed_open(tmp_path, capsys):
    files = {"registered/test_dyn.py": registered_file("def f(d):\n    sys.path.insert(0, d)")}
    root = make_impact_repo(tmp_path / "repo", files)
    flags = ["--root", str(root), "--hw", "cuda", "--suite", "unit-gpu", "--dry-run"]
    assert main([*flags, *listed(root, "pkg/core.py")]) == 0
    assert "; 1 kept for what the analysis cannot bound;" in capsys.readouterr().out
    assert main([*flags, *listed(root, "pkg/gone.py", "docs/readme.md")]) == 0
    assert "; fails open: pkg/gone.py was deleted: what used it cannot be traced;" in (
        capsys.readouterr().out
    )


def test_kept_files_are_the_static_reasons_in_json(tmp_path):
    root = make_impact_repo(tmp_path / "repo")
    code, document = run_dry(root, *listed(root, "pkg/core.py"))
    assert code == 0 and kept(document) == ["registered/test_core.py"]
    assert document["change_impact"]["ignored"] == []
    assert document["change_impact"]["not_ignored"] == []


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
