"""--scoped-validation: problems in files that may belong to the selected suites still stop the
run; problems elsewhere become warnings. The default stays strict."""

import sys
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci
from ci_runner.catalog import load_catalog
from ci_runner.cli import main
from ci_runner.collect import collect
from ci_runner.collect.scope import split_by_scope

register_cpu_ci(est_time=6, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from helpers_tree import REPO_ROOT, make_repo, script_file  # noqa: E402

GOOD_UNIT = script_file('register_cpu_ci(est_time=3, suite="unit-cpu")')
BAD_EXTRA = script_file('register_cpu_ci(est_time=EST, suite="extra-cpu")')


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    return make_repo(
        tmp_path / "repo",
        {"registered/test_unit.py": GOOD_UNIT, "registered/test_extra.py": BAD_EXTRA},
    )


def run(repo, suite, *flags):
    return main(["--root", str(repo), "--hw", "cpu", "--suite", suite, *flags])


BAD_LINE = (
    "registered/test_extra.py:6:26: est_time must be a literal (a positive number of seconds), "
    "got `EST`: the runner reads registrations without running the file"
)


def test_default_is_strict_a_problem_anywhere_stops_every_suite(repo, capfd):
    assert run(repo, "unit-cpu") == 2
    err = capfd.readouterr().err
    assert err.splitlines() == [BAD_LINE, "1 registration problem(s) in 1 file(s); nothing was run"]


def test_scoped_problem_elsewhere_is_a_warning_and_the_suite_runs(repo, capfd):
    assert run(repo, "unit-cpu", "--scoped-validation") == 0
    captured = capfd.readouterr()
    assert captured.err.splitlines()[:2] == [
        f"warning: {BAD_LINE}",
        "warning: 1 registration problem(s) in 1 file(s) outside the selected suites; not "
        "blocking this run (--scoped-validation), but check-registered-tests still fails "
        "until they are fixed",
    ]
    assert "registered/test_unit.py  passed" in captured.out


def test_scoped_problem_in_the_selected_suite_still_stops_it(repo, capfd):
    assert run(repo, "extra-cpu", "--scoped-validation", "--dry-run") == 2
    assert capfd.readouterr().err.splitlines() == [
        BAD_LINE,
        "1 registration problem(s) in 1 file(s) that may belong to the selected suites; "
        "nothing was run",
    ]


def test_scoped_with_an_unknown_suite_is_still_a_selection_error(repo, capfd):
    assert run(repo, "unit-cpx", "--scoped-validation") == 2
    assert "error: --suite: unknown cpu suite 'unit-cpx'; did you mean 'unit-cpu'?" in (
        capfd.readouterr().err
    )


# --- which files may belong to a suite -----------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "blocks_unit_cpu"),
    [
        ('register_cpu_ci(est_time=EST, suite="unit-cpu")', True),
        ('register_cpu_ci(est_time=EST, suite="extra-cpu")', False),
        ('register_cpu_ci(1, "unit-cpu")\nregister_cpu_ci(est_time=X, suite="extra-cpu")', True),
        ("register_cpu_ci(est_time=1, suite=SUITE)", True),  # cannot tell: blocks
        ("register_cpu_ci(est_time=1)", True),  # no suite at all: cannot tell
        ("wrap = register_cpu_ci", True),  # indirect use: cannot tell
        ('register_cpu_ci(est_time=1, suite="unit-cpx")', True),  # a typo of the selected suite
        ('register_cpu_ci(est_time=1, suite="old-unit-cpu")', True),  # its old name
        ('register_cpu_ci(est_time=1, suite="nightly-1-gpu")', False),  # another real suite
        ('if X:\n    register_cpu_ci(1, "unit-cpu")', True),  # hidden, but names it
        ('if X:\n    register_cpu_ci(1, "extra-cpu")', False),
        ("VALUE = 1", False),  # registers nothing, so belongs to no suite
        ('from ci_runner import register_cpu_ci as r\nr(est_time=X, suite="unit-cpu")', True),
        # a syntax error before the marker (one after the last marker is not read)
        ('def broken(:\nregister_cpu_ci(est_time=1, suite="unit-cpu")', True),  # text fallback
        ('def broken(:\nregister_cpu_ci(est_time=1, suite="extra-cpu")', False),
    ],
)
def test_which_problem_files_block_a_scoped_run(tmp_path, source, blocks_unit_cpu):
    root = make_repo(tmp_path, {"registered/test_x.py": script_file(source)})
    catalog = load_catalog(root)
    problems = collect(catalog).problems
    assert problems, "the case must have a problem"
    scoped = split_by_scope(problems, catalog, [catalog.get("unit-cpu")])
    assert bool(scoped.blocking) is blocks_unit_cpu
    assert len(scoped.blocking) + len(scoped.warnings) == len(problems)


def test_text_fallback_knows_composed_suite_names(tmp_path):
    source = 'def broken(:\nregister_cuda_ci(est_time=1, stage="unit", runner_config="1-gpu")\n'
    root = make_repo(tmp_path, {"registered/test_x.py": script_file(source)})
    text = (root / "pyproject.toml").read_text()
    text = text.replace(
        'registered-dir = "registered"\n',
        'registered-dir = "registered"\nsuite-template = "{stage}-{runner_config}"\n',
    )
    (root / "pyproject.toml").write_text(text)
    catalog = load_catalog(root)
    problems = collect(catalog).problems
    assert problems, "the case must have a problem"
    assert split_by_scope(problems, catalog, [catalog.get("unit-1-gpu")]).blocking == problems
    assert split_by_scope(problems, catalog, [catalog.get("unit-8-gpu")]).blocking == []


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
