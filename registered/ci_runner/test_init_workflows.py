"""run_suite.py init reads .github/workflows: each suite's runner label, job budget and partition
sizes (matrix rows, reusable workflows with their with: inputs), suites only workflows run, and
a report naming every value it could not resolve. Also: init parses each file once."""

import ast
import json
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci
from ci_runner.cli import main

register_cpu_ci(est_time=5, suite="base-a-test-cpu")

MAIN = '\nif __name__ == "__main__":\n    sys.exit(pytest.main([__file__]))\n'
HEAD = "import sys\n\nimport pytest\n\nfrom ci_runner import *  # noqa\n\n"
FILES = {
    "test/registered/test_cpu_a.py": HEAD + 'register_cpu_ci(est_time=30, suite="unit-cpu")\n',
    "test/registered/test_cpu_b.py": HEAD + 'register_cpu_ci(est_time=50, suite="unit-cpu")\n',
    "test/registered/test_gpu.py": HEAD + 'register_cuda_ci(est_time=600, suite="kernel-1-gpu")\n',
    "test/registered/test_late.py": HEAD + 'register_cpu_ci(est_time=9, suite="late-cpu")\n',
}
WORKFLOWS = {
    "ci.yml": """
        on: [push]
        jobs:
          cpu:
            runs-on: ubuntu-22.04
            timeout-minutes: 30
            steps:
              - timeout-minutes: 20
                run: |
                  cd test
                  python3 run_suite.py --hw cpu --suite unit-cpu --auto-partition-size 2
          late:
            runs-on: ubuntu-latest
            steps:
              - run: python run_suite.py --hw cpu --suite late-cpu
        """,
    "_stage.yml": """
        on:
          workflow_call:
            inputs:
              suite: {type: string, required: true}
              label: {type: string, default: "1-gpu-runner"}
              minutes: {type: string, default: "90"}
        jobs:
          run:
            runs-on: ${{ inputs.label }}
            timeout-minutes: ${{ fromJson(inputs.minutes) }}
            strategy:
              matrix:
                part: [0, 1, 2]
                include:
                  - size: 3
            steps:
              - run: >-
                  python3 run_suite.py --hw cuda --suite ${{ inputs.suite }}
                  --auto-partition-id ${{ matrix.part }} --auto-partition-size ${{ matrix.size }}
        """,
    "pr.yml": """
        on: pull_request
        jobs:
          kernels:
            uses: ./.github/workflows/_stage.yml
            with:
              suite: kernel-1-gpu
              label: h100-1
              minutes: "45"
          new-suite:
            uses: ./.github/workflows/_stage.yml
            with:
              suite: kernel-2-gpu
        """,
    "dynamic.yml": """
        on: workflow_dispatch
        jobs:
          plan:
            runs-on: ubuntu-latest
            outputs: {suite: "${{ steps.x.outputs.suite }}"}
            steps:
              - id: x
                run: echo suite=unit-cpu >> $GITHUB_OUTPUT
          picked:
            needs: plan
            runs-on: ${{ github.event.inputs.runner }}
            steps:
              - run: python run_suite.py --hw cpu --suite late-cpu
              - run: python run_suite.py --hw cpu --suite ${{ needs.plan.outputs.suite }}
        """,
}


def make(root: Path) -> Path:
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text + MAIN)
    workflows = root / ".github" / "workflows"
    workflows.mkdir(parents=True)
    for name, text in WORKFLOWS.items():
        (workflows / name).write_text(textwrap.dedent(text).lstrip())
    return root


def suites_of(root: Path) -> dict[str, dict]:
    table = tomllib.loads((root / "ci-runner.toml").read_text())  # the root has no pyproject.toml
    return {suite["name"]: suite for suite in table["suites"]}


@pytest.fixture
def adopted(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "cache"))
    root = make(tmp_path / "repo")
    assert main(["init", "--root", str(root)]) == 0
    return root, capsys.readouterr().out


def test_runner_and_budget_come_from_the_job(adopted):
    root, _ = adopted
    suites = suites_of(root)
    assert suites["unit-cpu"]["runner"] == "ubuntu-22.04"
    # the step that runs the suite has 20 of the job's 30 minutes: shards are sized for 20
    assert suites["unit-cpu"]["job-timeout-minutes"] == 20
    assert "= 20  # the timeout-minutes of the step" in (root / "ci-runner.toml").read_text()


def test_reusable_workflow_inputs_and_matrix_rows_resolve(adopted):
    root, _ = adopted
    kernel = suites_of(root)["kernel-1-gpu"]
    assert kernel["runner"] == "h100-1"  # the caller's with:, not the input's default
    assert kernel["job-timeout-minutes"] == 45
    text = (root / "ci-runner.toml").read_text()
    assert "_stage.yml:" in text and "--auto-partition-size there: 3" in text


def test_job_without_timeout_gets_githubs_default_and_says_so(adopted):
    root, _ = adopted
    assert suites_of(root)["late-cpu"]["job-timeout-minutes"] == 360
    line = next(
        line
        for line in (root / "ci-runner.toml").read_text().splitlines()
        if line.startswith("job-timeout-minutes = 360")
    )
    assert "GitHub's default" in line


def test_suite_only_in_workflows_is_added_with_a_note(adopted):
    root, out = adopted
    added = suites_of(root)["kernel-2-gpu"]
    assert added["hw"] == "cuda" and added["runner"] == "1-gpu-runner"
    assert added["job-timeout-minutes"] == 90
    assert "registration(s) in 0 file(s)" in (root / "ci-runner.toml").read_text()
    assert "suite 'kernel-2-gpu' (cuda) is run by .github/workflows/_stage.yml:18 job 'run'" in out
    assert "no file registers it yet" in out


def test_unresolved_values_are_reported_by_file_and_job_never_guessed(adopted):
    root, out = adopted
    assert ".github/workflows/dynamic.yml:" in out
    runs_on = [line for line in out.splitlines() if "runs-on" in line]
    assert any("dynamic.yml" in line and "job 'picked'" in line for line in runs_on), out
    assert any("github.event.inputs.runner" in line for line in runs_on)
    assert any(
        "dynamic.yml" in line and "not resolved" in line and "needs.plan.outputs.suite" in line
        for line in out.splitlines()
    ), out
    # late-cpu's runner comes from ci.yml only; the dynamic job contributes no label
    assert suites_of(root)["late-cpu"]["runner"] == "ubuntu-latest"


def test_print_matrix_works_on_the_drafted_catalog(adopted, capsys):
    root, _ = adopted
    code = main(["--root", str(root), "--hw", "cuda", "--suite", "kernel-1-gpu", "--print-matrix"])
    matrix = json.loads(capsys.readouterr().out)
    assert code == 0
    assert {entry["runner"] for entry in matrix["include"]} == {"h100-1"}
    assert {entry["timeout_minutes"] for entry in matrix["include"]} == {45}


def test_no_workflow_directory_changes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "cache"))
    root = make(tmp_path / "repo")
    for path in (root / ".github" / "workflows").iterdir():
        path.unlink()
    assert main(["init", "--root", str(root)]) == 0
    suites = suites_of(root)
    assert "runner" not in suites["unit-cpu"] and "kernel-2-gpu" not in suites


def test_invalid_workflow_yaml_is_a_note_not_a_traceback(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "cache"))
    root = make(tmp_path / "repo")
    (root / ".github" / "workflows" / "broken.yml").write_text("jobs: [unclosed\n")
    assert main(["init", "--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert "broken.yml: invalid YAML" in out
    assert suites_of(root)["unit-cpu"]["runner"] == "ubuntu-22.04"


def test_init_parses_each_file_once(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "cache"))
    root = make(tmp_path / "repo")
    parsed: dict[str, int] = {}  # file -> bytes parsed (discovery parses a file's parts)
    real_parse = ast.parse

    def counting_parse(source, filename="<unknown>", *args, **kwargs):
        parsed[str(filename)] = parsed.get(str(filename), 0) + len(source)
        return real_parse(source, filename, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counting_parse)
    assert main(["init", "--root", str(root)]) == 0
    assert sorted(parsed) == sorted(FILES)  # every registered file, nothing else
    for rel_path, size in parsed.items():  # no part of a file twice
        assert 0 < size <= len((root / rel_path).read_bytes()), rel_path


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
