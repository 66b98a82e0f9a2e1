"""Lint: the registered tree validates exactly as run_suite.py would (same collector)."""

import subprocess
import sys
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cpu_ci
from ci_runner.maintenance.registration_lints import main_registered_tests as main

sys.path.insert(0, str(Path(__file__).parent))

from testing.tree_builder import catalog_toml, run_script, suite_toml, write_tree

register_cpu_ci(est_time=4, suite="base-a-test-cpu")

ROOT = Path(__file__).resolve().parents[2]
CATALOG = catalog_toml(suite_toml("cpu-suite", "cpu", renamed_from=["old-cpu-suite"]))
GOOD = """\
import sys

import pytest

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=5, suite="cpu-suite")


def test_ok():
    pass


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
"""


def make_repo(tmp_path: Path, files: dict[str, str]) -> Path:
    return write_tree(tmp_path, CATALOG, files, under="registered")


def test_this_repository_validates(capsys):
    assert main(["--root", str(ROOT)]) == 0
    assert "registered file(s) OK" in capsys.readouterr().out


def test_valid_tree_passes(tmp_path, capsys):
    make_repo(tmp_path, {"a/test_a.py": GOOD, "a/helpers.py": "X = 1\n"})
    assert main(["--root", str(tmp_path)]) == 0
    assert "1 registered file(s) OK" in capsys.readouterr().out


def test_every_problem_is_listed_like_the_runner_does(tmp_path, capsys):
    make_repo(
        tmp_path,
        {
            "test_good.py": GOOD,
            "test_unregistered.py": "def test_x():\n    pass\n",
            "test_renamed.py": GOOD.replace('"cpu-suite"', '"old-cpu-suite"'),
            "test_unknown.py": GOOD.replace('"cpu-suite"', '"nope"'),
        },
    )
    assert main(["--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "registered/test_unregistered.py:1:1: no register_<backend>_ci(...) call" in err
    assert "registered/test_renamed.py:7:" in err and "cpu-suite" in err
    assert "registered/test_unknown.py:7:" in err and "'nope'" in err
    assert "problem(s) in 3 of 4 file(s); run_suite.py would refuse to run any suite" in err
    # Exactly what the runner reports: the same collector, the same messages.
    runner = subprocess.run(
        [sys.executable, str(ROOT / "run_suite.py"), "--hw", "cpu", "--suite", "cpu-suite"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert runner.returncode == 2
    lint_lines = [line for line in err.splitlines() if line.startswith("registered/")]
    runner_lines = [line for line in runner.stderr.splitlines() if line.startswith("registered/")]
    assert lint_lines == runner_lines


def test_catalog_error_exits_2(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text("[tool.ci-runner]\n")
    assert main(["--root", str(tmp_path)]) == 2
    assert "define at least one [[tool.ci-runner.suites]] entry" in capsys.readouterr().err


def test_script_entry_point(tmp_path):
    make_repo(tmp_path, {"test_bad.py": "x = 1\n"})
    proc = run_script("check_registered_tests.py", tmp_path)
    assert proc.returncode == 1
    assert "registered/test_bad.py:1:1: no register_<backend>_ci(...) call" in proc.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
