"""--changed-since and --changed-files: git diffs, lists, every bad input (exit 2 naming the
flag), the catalog table, and the narrowed selection through a real run and --print-matrix."""

import io
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from impact_tree import GPU_TESTS, git, git_repo, kept, make_impact_repo, registered_file, run_dry

from ci_runner import register_cpu_ci
from ci_runner.cli import main
from ci_runner.impact.changes import OUTSIDE, SUBMODULE, SYMLINK, Change, parse_raw_diff

register_cpu_ci(est_time=15, suite="base-a-test-cpu")


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "impact-cache"))


def run(root: Path, *flags: str, suite: str = "unit-gpu", hw: str = "cuda") -> int:
    return main(["--root", str(root), "--hw", hw, "--suite", suite, *flags])


# ---------------------------------------------------------------- --changed-since


def test_changed_since_diffs_against_the_merge_base(tmp_path):
    root = git_repo(make_impact_repo(tmp_path / "repo"))
    git(root, "checkout", "-q", "-b", "feature")
    (root / "pkg" / "core.py").write_text("from pkg.util import VALUE\nOTHER = 2\n")
    (root / "registered" / "test_new.py").write_text(registered_file("import os", est=3))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    git(root, "checkout", "-q", "main")  # main moves on: its own change is not the branch's
    (root / "pkg" / "util.py").write_text("VALUE = 3\n")
    git(root, "commit", "-q", "-am", "main moves")
    git(root, "checkout", "-q", "feature")
    code, document = run_dry(root, "--changed-since", "main")
    assert code == 0
    assert document["change_impact"]["source"] == "--changed-since main"
    assert document["change_impact"]["changes"] == [
        {"path": "pkg/core.py", "status": "modified", "old_path": None},
        {"path": "registered/test_new.py", "status": "added", "old_path": None},
    ]
    assert kept(document) == ["registered/test_core.py", "registered/test_new.py"]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ("rm", "pkg/util.py was deleted: what used it cannot be traced"),
        ("mv", "pkg/util.py was renamed to pkg/util2.py: what used the old path cannot be traced"),
    ],
)
def test_deleted_and_renamed_files_run_the_whole_suite(tmp_path, change, reason):
    root = git_repo(make_impact_repo(tmp_path / "repo"))
    if change == "rm":
        git(root, "rm", "-q", "pkg/util.py")
    else:
        git(root, "mv", "pkg/util.py", "pkg/util2.py")
    git(root, "commit", "-q", "-m", change)
    code, document = run_dry(root, "--changed-since", "HEAD~1")
    assert code == 0
    assert document["change_impact"]["run_everything_reasons"] == [reason]
    assert [f["path"] for f in document["files"]] == GPU_TESTS


def raw(status: str, *paths: str, modes: str = "100644 100644") -> bytes:
    """One record of ``git diff --raw -z``."""
    sha = "0" * 40
    return f":{modes} {sha} {sha} {status}\0".encode() + b"".join(p.encode() + b"\0" for p in paths)


def test_git_output_is_parsed_with_renames_copies_and_paths_outside_the_root():
    output = (
        raw("M", "pkg/a.py")
        + raw("R087", "pkg/b.py", "pkg/c.py")
        + raw("C100", "pkg/a.py", "pkg/d.py")
        + raw("D", "pkg/e.py", modes="100644 000000")
        + raw("M", "third/lib", modes="160000 160000")
        + raw("A", "kernels/sub", modes="000000 160000")
        + raw("T", "pkg/link.py", modes="100644 120000")
    )
    assert parse_raw_diff(output, "") == [
        Change("pkg/a.py"),
        Change("pkg/c.py", "renamed", "pkg/b.py"),
        Change("pkg/d.py", "added"),
        Change("pkg/e.py", "deleted"),
        Change("third/lib", SUBMODULE),
        Change("kernels/sub", SUBMODULE),
        Change("pkg/link.py", SYMLINK),
    ]
    nested = raw("M", "sub/pkg/a.py") + raw("M", "other/x.py")
    assert parse_raw_diff(nested, "sub/") == [Change("pkg/a.py"), Change("other/x.py", OUTSIDE)]


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        (
            "no-such-branch",
            "error: --changed-since no-such-branch: 'no-such-branch' is not a commit of this "
            "repository (fetch it first",
        ),
        ("-x", "error: --changed-since '-x': expected a commit, branch or tag"),
        ("", "error: --changed-since '': expected a commit, branch or tag"),
    ],
)
def test_an_unknown_ref_is_a_usage_error(tmp_path, capsys, ref, message):
    root = git_repo(make_impact_repo(tmp_path / "repo"))
    assert run(root, "--dry-run", f"--changed-since={ref}") == 2
    err = capsys.readouterr().err
    assert err.startswith(message), err


def test_changed_since_outside_a_git_repository_is_a_usage_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    root = make_impact_repo(tmp_path / "repo")
    assert run(root, "--dry-run", "--changed-since", "main") == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --changed-since main: {root} is not inside a git repository")


# ---------------------------------------------------------------- --changed-files


def test_changed_files_reads_stdin_and_absolute_paths(tmp_path, monkeypatch):
    root = make_impact_repo(tmp_path / "repo")
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"\n{root / 'pkg' / 'core.py'}\n\n"))
    code, document = run_dry(root, "--changed-files", "-")
    assert code == 0
    assert document["change_impact"]["source"] == "--changed-files -"
    assert kept(document) == ["registered/test_core.py"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "error: --changed-files {list}: no such file"),
        (
            "pkg/core.py\n../outside.py\n",
            "error: --changed-files {list} line 2: '../outside.py' is outside the repository",
        ),
        (
            "/etc/passwd\n",
            "error: --changed-files {list} line 1: '/etc/passwd' is outside the repository",
        ),
        (
            "pkg\n",
            "error: --changed-files {list} line 1: 'pkg' is a directory (not a submodule of "
            ".gitmodules); list the changed files",
        ),
        (b"\xff\xfe\n", "error: --changed-files {list}: cannot read: "),
    ],
)
def test_a_bad_list_is_a_usage_error(tmp_path, capsys, content, message):
    root = make_impact_repo(tmp_path / "repo")
    listing = tmp_path / "changed.txt"
    if isinstance(content, bytes):
        listing.write_bytes(content)
    elif content is not None:
        listing.write_text(content)
    assert run(root, "--dry-run", "--changed-files", str(listing)) == 2
    err = capsys.readouterr().err
    assert err.startswith(message.format(list=listing)), err


def test_the_two_flags_exclude_each_other_and_each_is_given_once(tmp_path, capsys):
    root = make_impact_repo(tmp_path / "repo")
    assert run(root, "--dry-run", "--changed-files", "a", "--changed-since", "main") == 2
    assert (
        "argument --changed-since: not allowed with argument --changed-files"
        in capsys.readouterr().err
    )
    assert run(root, "--dry-run", "--changed-files", "a", "--changed-files", "b") == 2
    assert "--changed-files given twice ('a', then 'b')" in capsys.readouterr().err


# ---------------------------------------------------------------- the catalog table


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("colour = 1\n", "unknown key(s) colour; known keys: dynamic-imports, ignore, kernel-"),
        ('python-roots = ["nope"]\n', "python-roots entry 'nope' is not a directory under"),
        (
            'python-roots = ["../up"]\n',
            "python-roots entry '../up' must be a relative path inside the repository",
        ),
        ("python-roots = 3\n", "python-roots must be a list of directories, got 3"),
        (
            'kernel-loaders = [{function = "f"}]\n',
            "kernel-loaders[0] must be a list of tables like",
        ),
        (
            'kernel-loaders = [{function = "f", arguments = [-1]}]\n',
            "kernel-loaders[0]: arguments must be a non-empty list",
        ),
        (
            'kernel-loaders = [{function = "f.g", arguments = [0]}]\n',
            "kernel-loaders[0]: function must be a Python name, got 'f.g'",
        ),
        (
            'dynamic-imports = "trust"\n',
            "dynamic-imports must be one of 'fail-open', 'named-modules', got 'trust'",
        ),
        (
            "run-everything = [1]\n",
            "run-everything must be a list of non-empty .gitignore patterns",
        ),
        ('ignore = ["docs/**", "!"]\n', "ignore entry '!': Invalid git pattern: '!'"),
        ('ignore = "docs"\n', "ignore must be a list of non-empty .gitignore patterns"),
    ],
)
def test_a_bad_change_impact_table_is_a_catalog_error(tmp_path, capsys, table, message):
    root = make_impact_repo(tmp_path / "repo", table="[tool.ci-runner.change-impact]\n" + table)
    (root / "changed.txt").write_text("pkg/core.py\n")
    assert run(root, "--dry-run", "--changed-files", str(root / "changed.txt")) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: pyproject.toml [tool.ci-runner.change-impact]: "), err
    assert message in err


# ---------------------------------------------------------------- the narrowed selection in use


def test_a_real_run_runs_only_the_kept_files(tmp_path, capsys):
    extra = {"registered/test_cpu_other.py": registered_file("import os", est=4, suite="unit-cpu")}
    root = make_impact_repo(tmp_path / "repo", extra)
    (root / "changed.txt").write_text("pkg/util.py\n")
    assert run(root, "--changed-files", str(root / "changed.txt"), hw="cpu", suite="unit-cpu") == 0
    out = capsys.readouterr().out
    assert "change impact (--changed-files" in out and "keeps 1 of 2 file(s)" in out
    assert "registered/test_cpu.py  passed" in out
    assert "test_cpu_other" not in out.split("change impact")[1]
    assert out.rstrip().endswith("summary: 1 passed, 0 failed, 0 skipped")


def test_an_empty_narrowed_selection_runs_nothing_and_succeeds(tmp_path, capsys):
    root = make_impact_repo(tmp_path / "repo")
    (root / "changed.txt").write_text("kernels/include/lib/unused.h\n")
    assert run(root, "--changed-files", str(root / "changed.txt"), hw="cpu", suite="unit-cpu") == 0
    assert capsys.readouterr().out.rstrip().endswith("summary: 0 passed, 0 failed, 0 skipped")


def test_print_matrix_plans_the_kept_files(tmp_path, capsys):
    root = make_impact_repo(tmp_path / "repo")
    (root / "changed.txt").write_text("pkg/util.py\n")
    assert run(root, "--print-matrix", "--changed-files", str(root / "changed.txt")) == 0
    narrowed = json.loads(capsys.readouterr().out)
    assert run(root, "--print-matrix") == 0
    full = json.loads(capsys.readouterr().out)
    assert narrowed["sizing"]["unit-gpu"]["files"] == 3
    assert narrowed["sizing"]["unit-gpu"]["total_est"] == 120.0
    assert full["sizing"]["unit-gpu"]["total_est"] == 280.0


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
