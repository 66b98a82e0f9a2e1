"""run_suite.py end to end: flags, dry run (text and JSON), exit codes, real shard runs."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ci_runner
from ci_runner import register_cpu_ci
from ci_runner.cli import main
from ci_runner.env import EnvVarError

sys.path.insert(0, str(Path(__file__).parent))
from helpers_tree import REPO_ROOT, make_repo, ran_files, registered_source, script_file

register_cpu_ci(est_time=5, suite="base-a-test-cpu")


def ok_file(est, suite="unit-cpu", exit_code=0):
    return script_file(f'register_cpu_ci(est_time={est}, suite="{suite}")', exit_code)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """Four passing CPU files (est 40, 30, 20, 10), one disabled, one in extra-cpu."""
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    return make_repo(
        tmp_path / "repo",
        {
            "registered/test_a.py": ok_file(40),
            "registered/test_b.py": ok_file(30),
            "registered/sub/test_c.py": ok_file(20),
            "registered/sub/bench_d.py": ok_file(10),
            "registered/test_off.py": script_file(
                'register_cpu_ci(est_time=5, suite="unit-cpu", disabled="waiting for a fix")'
            ),
            "registered/test_extra.py": ok_file(7, suite="extra-cpu"),
            "registered/helpers.py": "VALUE = 1\n",
        },
    )


def run(repo, *flags):
    return main(["--root", str(repo), "--hw", "cpu", *flags])


# --- argument validation (exit 2, message on stderr) ---------------------------------------------


@pytest.mark.parametrize(
    "flags,message",
    [
        (
            ["--auto-partition-id", "0"],
            "--auto-partition-id and --auto-partition-size must be given together",
        ),
        (
            ["--auto-partition-size", "2"],
            "--auto-partition-id and --auto-partition-size must be given together",
        ),
        (
            ["--auto-partition-id", "0", "--auto-partition-size", "0"],
            "--auto-partition-size must be in [1, 4096], got 0",
        ),
        (
            ["--auto-partition-id", "2", "--auto-partition-size", "2"],
            "--auto-partition-id must be in [0, 2), got 2",
        ),
        (
            ["--auto-partition-id", "-1", "--auto-partition-size", "2"],
            "--auto-partition-id must be in [0, 2), got -1",
        ),
        (["--format", "json"], "--format json needs --dry-run"),
        (
            ["--print-matrix", "--dry-run"],
            "--print-matrix cannot be combined with --dry-run or --auto-partition-*",
        ),
        (["--matrix-target-minutes", "10"], "--matrix-target-minutes needs --print-matrix"),
        (
            ["--print-matrix", "--matrix-target-minutes", "0"],
            "argument --matrix-target-minutes: expected a positive number of minutes, got '0'",
        ),
        (
            ["--auto-partition-id", "x", "--auto-partition-size", "2"],
            "argument --auto-partition-id: expected a whole number, got 'x'",
        ),
    ],
)
def test_bad_flags_exit_2_with_a_message(repo, capsys, flags, message):
    assert run(repo, "--suite", "unit-cpu", *flags) == 2
    assert message in capsys.readouterr().err


def test_hw_and_suite_are_required(capsys):
    assert main(["--suite", "x"]) == 2
    assert "the following arguments are required: --hw" in capsys.readouterr().err


def test_hw_must_be_a_backend_of_the_catalog(repo, capsys):
    assert main(["--root", str(repo), "--hw", "tpu", "--suite", "x"]) == 2
    assert capsys.readouterr().err == (
        "error: --hw 'tpu': not a backend of this catalog; use one of amd, cpu, cuda, musa, npu, "
        "xpu (a new backend needs [tool.ci-runner.extra-markers])\n"
    )


def test_help_exits_0(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for flag in ("--root", "--allow-empty", "--auto-partition-id", "--dry-run", "--print-matrix"):
        assert flag in out


# --- errors before planning (exit 2) --------------------------------------------------------------


def test_registration_problems_exit_2_listing_each_and_a_count(repo, capsys):
    (repo / "registered/test_bad.py").write_text(
        registered_source('register_cpu_ci(est_time=-1, suite="unit-cpu")')
    )
    (repo / "registered/test_none.py").write_text("x = 1\n")
    assert run(repo, "--suite", "unit-cpu") == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("registered/test_bad.py:7:26: est_time must be a finite number")
    assert err[1].startswith("registered/test_none.py:1:1: no register_<backend>_ci(...) call")
    assert err[2] == "2 registration problem(s) in 2 file(s); nothing was run"


def test_missing_catalog_is_a_one_line_error(tmp_path, capsys):
    assert main(["--root", str(tmp_path), "--hw", "cpu", "--suite", "x"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"error: {tmp_path / 'pyproject.toml'}: not found; the suite catalog lives in "
        "[tool.ci-runner] (or in ci-runner.toml)\n"
    )


def test_root_that_is_not_a_directory_is_an_error(tmp_path, capsys):
    assert main(["--root", str(tmp_path / "nope"), "--hw", "cpu", "--suite", "x"]) == 2
    assert capsys.readouterr().err == f"error: --root {tmp_path / 'nope'}: not a directory\n"


def test_no_root_found_from_cwd_is_an_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["--hw", "cpu", "--suite", "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "error: no pyproject.toml with a [tool.ci-runner] table (nor a ci-runner.toml) found in "
    )
    assert err.endswith("run from inside the repository or pass --root DIR\n")


def test_unknown_suite_is_an_error_with_a_suggestion(repo, capsys):
    assert run(repo, "--suite", "unit-cpux") == 2
    assert capsys.readouterr().err == (
        "error: --suite: unknown cpu suite 'unit-cpux'; did you mean 'unit-cpu'?\n"
    )


def test_empty_suite_is_an_error_unless_allowed(repo, capsys):
    assert run(repo, "--suite", "unit-cpu", "--dry-run", "--nightly") == 2
    assert "is a per-commit suite; drop --nightly" in capsys.readouterr().err
    (repo / "registered/test_extra.py").unlink()
    assert run(repo, "--suite", "extra-cpu", "--dry-run") == 2
    assert capsys.readouterr().err == (
        "error: suite 'extra-cpu' selects no enabled file; register files for it, or pass "
        "--allow-empty if that is intended\n"
    )
    assert run(repo, "--suite", "extra-cpu", "--allow-empty") == 0


def test_env_var_error_from_execution_is_a_one_line_error(repo, capsys, monkeypatch):
    def broken(files, ctx, options, listener):
        raise EnvVarError("environment variable SGLANG_IS_IN_CI='maybe' is not a boolean")

    monkeypatch.setattr("ci_runner.execution.execute_shard", broken)
    assert run(repo, "--suite", "unit-cpu") == 2
    assert capsys.readouterr().err == (
        "error: environment variable SGLANG_IS_IN_CI='maybe' is not a boolean\n"
    )


# --- dry run ---------------------------------------------------------------------------------------


def test_dry_run_text_lists_selection_disabled_and_every_shard(repo, capsys):
    assert (
        run(
            repo,
            "--suite",
            "unit-cpu",
            "--dry-run",
            "--auto-partition-id",
            "1",
            "--auto-partition-size",
            "3",
        )
        == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "ci_runner: hw=cpu suite=unit-cpu nightly=no"
    assert out[1] == "selected 4 file(s), est total 100s; 1 disabled"
    assert out[2] == "  disabled: registered/test_off.py [unit-cpu] reason: waiting for a fix"
    assert out[3].startswith("plan: 3 shard(s), predicted makespan 40.0s, lower bound 40.0s")
    assert "ratio 1.000, plan hash " in out[3]
    assert out[4:] == [
        "shard 0/3 (--auto-partition-id 0): 1 file(s), est total 40.0s",
        "  - registered/test_a.py (est 40.0s)",
        "shard 1/3 (--auto-partition-id 1): 1 file(s), est total 30.0s",
        "  - registered/test_b.py (est 30.0s)",
        "shard 2/3 (--auto-partition-id 2): 2 file(s), est total 30.0s",
        "  - registered/sub/test_c.py (est 20.0s)",
        "  - registered/sub/bench_d.py (est 10.0s)",
        "dry run: nothing was run",
    ]


def dry_json(repo, capsys, *flags):
    assert run(repo, "--dry-run", "--format", "json", *flags) == 0
    return json.loads(capsys.readouterr().out)


def test_dry_run_json_schema_and_coverage(repo, capsys):
    doc = dry_json(
        repo,
        capsys,
        "--suite",
        "unit-cpu,extra-cpu",
        "--auto-partition-id",
        "0",
        "--auto-partition-size",
        "4",
    )
    assert doc["hw"] == "cpu" and doc["suites"] == ["unit-cpu", "extra-cpu"]
    assert doc["nightly"] is False and doc["shard_count"] == 4 and doc["auto_partition_id"] == 0
    assert doc["files"][0] == {
        "path": "registered/sub/bench_d.py",
        "est_time": 10.0,
        "suite": "unit-cpu",
        "gpus": 0,
        "all_gpus": False,
        "cases": [],
        "quarantined": None,
    }
    assert [f["path"] for f in doc["files"]] == sorted(f["path"] for f in doc["files"])
    assert doc["disabled"] == [
        {"path": "registered/test_off.py", "suite": "unit-cpu", "reason": "waiting for a fix"}
    ]
    assert [s["id"] for s in doc["shards"]] == [0, 1, 2, 3]
    planned = sorted(p for s in doc["shards"] for p in s["files"])
    assert planned == sorted(f["path"] for f in doc["files"])
    assert len(planned) == 5
    assert doc["makespan"] == max(s["est_total"] for s in doc["shards"]) == 40.0
    assert doc["lower_bound"] == 40.0
    assert len(doc["plan_hash"]) == 16
    for key in ("ratio", "lpt_makespan", "algorithm"):
        assert key in doc


def test_dry_run_warns_of_registrations_inside_a_package(repo, capsys):
    """The runner never collects a test inside an importable package: the dry run says so."""
    (repo / "mypkg").mkdir()
    (repo / "mypkg" / "__init__.py").write_text("")
    (repo / "mypkg" / "test_hidden.py").write_text(
        'from ci_runner import register_cpu_ci\n\nregister_cpu_ci(est_time=3, suite="unit-cpu")\n'
    )
    expected = (
        "mypkg/test_hidden.py:3:1: registers a CI test (cpu, suite 'unit-cpu'), inside the "
        "package mypkg/: run_suite.py never collects it there; move the file under registered/"
    )
    assert run(repo, "--suite", "unit-cpu", "--dry-run") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2:] == [f"warning: {expected}", "dry run: nothing was run"]
    doc = dry_json(repo, capsys, "--suite", "unit-cpu")
    message = expected.split(": ", 1)[1]
    assert doc["warnings"] == [
        {"path": "mypkg/test_hidden.py", "line": 3, "col": 1, "message": message}
    ]
    assert "mypkg/test_hidden.py" not in [f["path"] for f in doc["files"]]


def test_dry_run_without_misplaced_registrations_has_no_warnings(repo, capsys):
    assert dry_json(repo, capsys, "--suite", "unit-cpu")["warnings"] == []
    assert run(repo, "--suite", "unit-cpu", "--dry-run") == 0
    assert "warning:" not in capsys.readouterr().out


def test_plan_is_identical_whichever_shard_asks(repo, capsys):
    plans = [
        dry_json(
            repo,
            capsys,
            "--suite",
            "unit-cpu",
            "--auto-partition-id",
            str(i),
            "--auto-partition-size",
            "3",
        )
        for i in range(3)
    ]
    assert len({(json.dumps(p["shards"]), p["plan_hash"]) for p in plans}) == 1


def test_without_partition_flags_everything_is_shard_0_of_1(repo, capsys):
    doc = dry_json(repo, capsys, "--suite", "unit-cpu")
    assert doc["shard_count"] == 1 and doc["auto_partition_id"] is None
    assert doc["shards"][0]["files"] == [
        "registered/test_a.py",
        "registered/test_b.py",
        "registered/sub/test_c.py",
        "registered/sub/bench_d.py",
    ]


# --- real runs -------------------------------------------------------------------------------------


def test_run_executes_only_the_current_shard_and_exits_0(repo, capfd):
    code = run(
        repo, "--suite", "unit-cpu", "--auto-partition-id", "2", "--auto-partition-size", "3"
    )
    out = capfd.readouterr().out
    assert code == 0
    assert "shard 2/3 (--auto-partition-id 2): 2 file(s), est total 30.0s" in out
    assert "shard 0/3" not in out
    assert ran_files(repo) == ["registered/sub/test_c.py", "registered/sub/bench_d.py"]


def test_failing_file_makes_the_run_exit_1(repo, capfd):
    (repo / "registered/test_b.py").write_text(ok_file(30, exit_code=3))
    assert run(repo, "--suite", "unit-cpu", "--continue-on-error") == 1
    assert len(ran_files(repo)) == 4


def test_empty_shard_succeeds(repo, capfd):
    code = run(
        repo, "--suite", "extra-cpu", "--auto-partition-id", "3", "--auto-partition-size", "4"
    )
    assert code == 0
    out = capfd.readouterr().out
    assert "shard 3/4 (--auto-partition-id 3): 0 file(s), est total 0.0s" in out
    assert ran_files(repo) == []


def test_file_in_two_selected_suites_runs_once(repo, capfd):
    (repo / "registered/test_extra.py").write_text(
        script_file(
            'register_cpu_ci(est_time=7, suite="extra-cpu")\n'
            'register_cpu_ci(est_time=9, suite="unit-cpu")'
        )
    )
    assert run(repo, "--suite", "unit-cpu,extra-cpu", "--dry-run", "--format", "json") == 0
    doc = json.loads(capfd.readouterr().out)
    entry = [f for f in doc["files"] if f["path"] == "registered/test_extra.py"]
    assert entry == [
        {
            "path": "registered/test_extra.py",
            "est_time": 9.0,
            "suite": "unit-cpu",
            "gpus": 0,
            "all_gpus": False,
            "cases": [],
            "quarantined": None,
        }
    ]
    assert run(repo, "--suite", "unit-cpu,extra-cpu") == 0
    ran = ran_files(repo)
    assert len(ran) == 5 and ran.count("registered/test_extra.py") == 1


def test_print_matrix_prints_one_json_line(repo, capsys):
    assert run(repo, "--suite", "unit-cpu", "--print-matrix") == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    matrix = json.loads(out)
    assert isinstance(matrix, dict)


def test_print_matrix_errors_exit_2(repo, capsys):
    assert run(repo, "--suite", "unit-cpu", "--print-matrix", "--matrix-target-minutes", "0.1") == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "unit-cpu" in err


def test_run_suite_script_end_to_end_from_the_repo_cwd(repo):
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "run_suite.py"),
            "--hw",
            "cpu",
            "--suite",
            "unit-cpu",
            "--dry-run",
            "--format",
            "json",
        ],
        cwd=repo / "registered" / "sub",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["files"]) == 4


def test_version_prints_the_packages_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"run-suite {ci_runner.__version__}\n"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
