"""--record-deps records the code each Python process runs: with ``sys.monitoring`` and no
coverage.py on Python >= 3.12, with coverage.py on older interpreters (and wherever the
package's start-up hook is not installed).

Real Python processes started with the environment the recorder gives an attempt, in a small
tree: what each writes (its notes, its coverage data) shows how it recorded and what.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from coverage import CoverageData

from ci_runner import register_cpu_ci
from ci_runner.execution import dep_recording
from ci_runner.execution.dep_recording import START_HOOK, DepRecorder, start_hook_installed
from ci_runner.execution.record_child import COVERAGE_START, START_VARIABLE

register_cpu_ci(est_time=6, suite="base-a-test-cpu")

# a process reports whether coverage.py was imported in it by the time it exits
REPORT = "import atexit, sys; atexit.register(lambda: print('coverage' in sys.modules))"
SYSMON = hasattr(sys, "monitoring")  # processes record without coverage.py


@pytest.fixture
def tree(tmp_path):
    """(root, scratch, environment): a repository with ``pkg/m.py`` and ``data.txt``."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "m.py").write_text("def f():\n    return 1\n")
    (root / "data.txt").write_text("x\n")
    scratch = tmp_path / "scratch"
    env = DepRecorder(tmp_path / "record", root).environment(scratch, os.environ)
    return root, scratch, env


def run(tree, code: str) -> str:
    root, _, env = tree
    done = subprocess.run(
        [sys.executable, "-c", f"{REPORT}\n{code}"],
        cwd=root, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def data_files(scratch: Path) -> list[CoverageData]:
    found = []
    for path in sorted((scratch / "coverage").iterdir()):
        data = CoverageData(basename=str(path))
        data.read()
        found.append(data)
    return found


def notes(scratch: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((scratch / "notes").glob("*.json"))]


def recorded_lines(scratch: Path) -> dict[str, set[int]]:
    """file -> lines of the code every process recorded running (coverage's data, or the code
    tables of the notes)."""
    lines: dict[str, set[int]] = {}
    for data in data_files(scratch):
        for path in data.measured_files():
            lines.setdefault(path, set()).update(data.lines(path) or ())
    for note in notes(scratch):
        for path, numbers in note.get("executed", {"code": []})["code"]:
            lines.setdefault(path, set()).update(numbers)
    return lines


def test_the_start_hook_is_installed_with_the_package():
    """``pip install`` (editable or not) puts ``a1_ci_runner_record.pth`` in site-packages."""
    assert start_hook_installed()
    assert f'os.environ.get("{START_VARIABLE}")' in START_HOOK.read_text()  # the runner's variable
    import site

    installed = [Path(d) / START_HOOK.name for d in site.getsitepackages()]
    assert [p.read_text() for p in installed if p.is_file()] == [START_HOOK.read_text()]


def test_a_process_records_without_coverage_on_python_3_12(tree):
    _, scratch, env = tree
    assert START_VARIABLE in env and COVERAGE_START not in env
    assert run(tree, "import json, os; os.listdir('.')") == str(not SYSMON)
    assert len(data_files(scratch)) == (0 if SYSMON else 1)
    (only,) = notes(scratch)
    assert only["listed"] == [str(tree[0].resolve())]  # its reads are noted all the same
    assert ("executed" in only) == SYSMON


@pytest.mark.parametrize(
    "code",
    [
        "import pkg.m; pkg.m.f()",
        "import runpy; runpy.run_path('pkg/m.py')['f']()",
        "exec(compile(open('pkg/m.py').read(), 'pkg/m.py', 'exec')); f()",
    ],
)
def test_repository_code_is_recorded_however_it_runs(tree, code):
    root, scratch, _ = tree
    assert run(tree, code) == str(not SYSMON)
    module = str(root.resolve() / "pkg" / "m.py")
    assert recorded_lines(scratch)[module] == {1, 2}  # the def line (module level), f's body


@pytest.mark.parametrize("text", ["", "# a comment only\n"])
def test_a_module_with_no_line_of_its_own_is_recorded_at_line_0(tree, text):
    """An empty ``__init__.py`` that ran ran its module level: line 0, as coverage.py says."""
    root, scratch, _ = tree
    (root / "pkg" / "__init__.py").write_text(text)
    run(tree, "import pkg")
    assert recorded_lines(scratch)[str(root.resolve() / "pkg" / "__init__.py")] == {0}


def test_a_child_process_records_its_own(tree):
    root, scratch, _ = tree
    child = "[sys.executable, '-c', 'import pkg.m']"
    out = run(tree, f"import subprocess, sys; subprocess.run({child}, check=True)")
    assert out == str(not SYSMON)
    assert len(notes(scratch)) == 2 and len(data_files(scratch)) == (0 if SYSMON else 2)
    assert recorded_lines(scratch)[str(root.resolve() / "pkg" / "m.py")] == {1}


def test_a_forked_child_keeps_notes_and_data_of_its_own(tree):
    root, scratch, _ = tree
    code = (
        "import os\npid = os.fork()\n"
        "if pid == 0:\n    import pkg.m; pkg.m.f(); open('data.txt').read(); os._exit(0)\n"
        "os.waitpid(pid, 0)"
    )
    assert run(tree, code) == str(not SYSMON)
    parent, child = sorted(notes(scratch), key=lambda n: len(n["opened"]))
    assert parent["opened"] == [] and child["opened"] == [str(root.resolve() / "data.txt")]
    assert recorded_lines(scratch)[str(root.resolve() / "pkg" / "m.py")] == {1, 2}
    if SYSMON:  # the parent ran no repository code; the child ran it after the fork
        assert parent["executed"]["code"] == []
        assert {path for path, _ in child["executed"]["code"]} == {
            str(root.resolve() / "pkg" / name) for name in ("__init__.py", "m.py")
        }


def test_without_the_start_hook_coverage_starts_in_every_process(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(dep_recording, "start_hook_installed", lambda: False)
    root = tmp_path / "repo"
    root.mkdir()
    recorder = DepRecorder(tmp_path / "record", root)
    assert "a1_ci_runner_record.pth is not installed" in capsys.readouterr().err
    env = recorder.environment(tmp_path / "scratch", os.environ)
    assert COVERAGE_START in env and START_VARIABLE not in env
    done = subprocess.run(
        [sys.executable, "-c", REPORT], cwd=root, env=env, capture_output=True, text=True
    )
    assert done.stdout.strip() == "True"


@pytest.mark.parametrize("config", ["missing", "[run\n", "[other]\nroot = /\n"])
def test_a_configuration_it_cannot_read_records_nothing_and_breaks_nothing(tmp_path, config):
    """A process that outlives its attempt (the scratch directory is gone) or a foreign file."""
    rc = tmp_path / "rc"
    if config != "missing":
        rc.write_text(config)
    env = {**os.environ, START_VARIABLE: str(rc)}
    done = subprocess.run(
        [sys.executable, "-c", REPORT], env=env, capture_output=True, text=True, check=True
    )
    assert (done.stdout.strip(), done.stderr) == ("False", "")


def test_an_outer_recording_s_variables_are_replaced(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    outer = {**os.environ, START_VARIABLE: "/outer/rc", COVERAGE_START: "/outer/rc"}
    env = DepRecorder(tmp_path / "record", root).environment(tmp_path / "scratch", outer)
    assert env[START_VARIABLE] == str(tmp_path / "scratch" / "coveragerc")
    assert COVERAGE_START not in env


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
