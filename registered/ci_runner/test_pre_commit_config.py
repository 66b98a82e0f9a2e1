"""pre-commit wiring: both files validate, hooks install from PyPI alone, entries exist and pass.

Running `pre-commit run --all-files` itself needs hook environments built from PyPI (minutes, and
network), so this test checks the configuration and runs the repository lints' entries directly;
the lint workflow runs the real thing.
"""

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ci_runner import register_cpu_ci
from ci_runner.maintenance.__main__ import COMMANDS
from ci_runner.maintenance.__main__ import main as maintenance_main

register_cpu_ci(est_time=5, suite="base-a-test-cpu")

ROOT = Path(__file__).resolve().parents[2]
CONFIG = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
MANIFEST = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
LOCAL_HOOKS = [hook for repo in CONFIG["repos"] for hook in repo["hooks"]]


@pytest.mark.skipif(shutil.which("pre-commit") is None, reason="pre-commit is not installed")
@pytest.mark.parametrize(
    ("command", "path"),
    [
        ("validate-config", ".pre-commit-config.yaml"),
        ("validate-manifest", ".pre-commit-hooks.yaml"),
    ],
)
def test_pre_commit_accepts_both_files(command, path):
    proc = subprocess.run(["pre-commit", command, path], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_only_local_hooks_installable_from_pypi():
    assert [repo["repo"] for repo in CONFIG["repos"]] == ["local"]
    for hook in LOCAL_HOOKS:
        assert hook["language"] == "python", hook["id"]
        for requirement in hook.get("additional_dependencies", []):
            assert not requirement.startswith(("git+", "http")), requirement


def test_expected_hooks_are_configured():
    ids = {hook["id"] for hook in LOCAL_HOOKS}
    assert {
        "ruff",
        "ruff-format",
        "clang-format",
        "check-no-registered-tests-in-package",
        "check-registered-tests",
        "check-workflow-dispatch",
        "actionlint",
        "zizmor",
    } <= ids
    clang = next(h for h in LOCAL_HOOKS if h["id"] == "clang-format")
    assert "cuh" in clang["files"] and "|h|" in clang["files"]


@pytest.mark.parametrize(
    "hook", [h for h in LOCAL_HOOKS if h["entry"].startswith("python ")], ids=lambda h: h["id"]
)
def test_repository_lint_entries_exist_and_pass_here(hook):
    argv = shlex.split(hook["entry"])
    assert argv[1:3] == ["-m", "ci_runner.maintenance"], f"{hook['id']}: runs {argv[1:3]}"
    assert argv[3] == hook["id"] and argv[3] in COMMANDS, f"{hook['id']}: runs {argv[3]}"
    proc = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, f"{hook['id']}: {proc.stdout}{proc.stderr}"


def test_manifest_hooks_run_the_installed_package():
    assert {h["id"] for h in MANIFEST} == {
        "check-no-registered-tests-in-package",
        "check-registered-tests",
        "check-workflow-dispatch",
    }
    for hook in MANIFEST:
        argv = shlex.split(hook["entry"])
        assert argv[:3] == ["python", "-m", "ci_runner.maintenance"]
        assert argv[3] == hook["id"] and argv[3] in COMMANDS
        assert hook["language"] == "python"


def test_maintenance_module_dispatch(capsys):
    assert maintenance_main(["check-registered-tests", "--root", str(ROOT)]) == 0
    capsys.readouterr()
    assert maintenance_main(["bogus"]) == 2
    err = capsys.readouterr().err
    assert "unknown command 'bogus'; commands: check-no-registered-tests-in-package" in err
    assert maintenance_main(["--help"]) == 0


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
