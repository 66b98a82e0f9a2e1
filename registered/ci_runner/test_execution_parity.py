"""Parity with SGLang's run_suite.py: the [tool.ci-runner.execution] table, its flags, and each
behaviour it switches on, through the real CLI on generated trees."""

import itertools
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cpu_ci
from ci_runner.catalog import CatalogError, load_catalog
from ci_runner.catalog.execution_settings import (
    DEFAULT_EXECUTION_SETTINGS,
    CudaCoredump,
    ExecutionSettings,
)
from ci_runner.execution.retry_patterns import output_retry_verdict
from ci_runner.execution.timeouts import timeout_for, timeout_from_est

register_cpu_ci(est_time=25, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from execution_tree import run_suite, script_file  # noqa: E402

from testing.tree_builder import REPO_ROOT, catalog_toml, suite_toml, write_tree  # noqa: E402

SUITES = (
    suite_toml("cpu-suite", "cpu", gpus_per_file=0, timeout_per_file=60),
    suite_toml("gpu-suite", "cuda", gpus_per_file=1, timeout_per_file=60),
    suite_toml("gpu2-suite", "cuda", gpus_per_file=2, timeout_per_file=60),
)
SGLANG_TABLE = """
[tool.ci-runner.execution]
est-timeout = "sglang"
retry-timeout-increase = 600
retry-wait-seconds = 0
retry-on = "output-patterns"
retry-timeouts = true
working-directory = "test"
file-arguments = ["-f"]
timings-block = true
one-file-at-a-time = true
"""
W = "pyproject.toml [tool.ci-runner].execution"
SGLANG_SETTINGS = ExecutionSettings(  # what init writes beside SGLang's run_suite.py
    est_timeout="sglang",
    retry_timeout_increase=600.0,
    retry_wait_seconds=60.0,
    retry_on="output-patterns",
    retry_timeouts=True,
    working_directory="test",
    file_arguments=("-f",),
    timings_block=True,
    timings_stream="stderr",
    one_file_at_a_time=True,
    cuda_coredump=CudaCoredump(
        "SGLANG_CUDA_COREDUMP", "SGLANG_CUDA_COREDUMP_DIR", "sglang_cuda_coredumps"
    ),
    failure_exit_status=255,
)


def tree(root: Path, files: dict[str, str], table: str = SGLANG_TABLE) -> Path:
    """A repository with SGLang's layout: the catalog, then ``files`` under test/registered/."""
    catalog = catalog_toml(*SUITES, registered_dir="test/registered") + table
    return write_tree(root, catalog, files, under="test/registered")


def failing(message: str, passes_on_attempt: int = 0, est: float = 1) -> str:
    """A script that prints ``message`` and exits 1 (exit 0 from attempt ``passes_on_attempt``)."""
    body = (
        "import os\n\n\ndef main():\n"
        f"    if {passes_on_attempt} and int(os.environ['CI_RUNNER_ATTEMPT']) >= "
        f"{passes_on_attempt}:\n        return 0\n"
        f"    print({message!r})\n    return 1\n"
    )
    return script_file(body, est=est)


def timings_of(stdout: str) -> list[dict]:
    """The JSON records between the TIMINGS BEGIN and END lines, read back as a scraper does."""
    lines = stdout.splitlines()
    begin = lines.index("========== TIMINGS BEGIN ==========")
    end = lines.index("========== TIMINGS END ==========")
    return [json.loads(line) for line in lines[begin + 1 : end]]


def attempts_of(report: Path) -> dict[str, dict]:
    return {Path(r["path"]).name: r for r in map(json.loads, report.read_text().splitlines())}


# --- the table ---------------------------------------------------------------------------------


def test_no_table_is_this_runners_behaviour(tmp_path):
    catalog = load_catalog(tree(tmp_path, {}, table=""))
    assert catalog.execution == DEFAULT_EXECUTION_SETTINGS
    assert catalog.execution.retry_wait_seconds == 30.0


def test_every_key_parses(tmp_path):
    table = SGLANG_TABLE.replace("timings-block = true", 'timings-block = "stderr"') + (
        'cuda-coredump = { switch-variable = "SW", dir-variable = "SW_DIR", dir-name = "dumps" }\n'
        "failure-exit-status = 255\n"
    )
    assert load_catalog(tree(tmp_path, {}, table)).execution == replace(
        SGLANG_SETTINGS, retry_wait_seconds=0.0, cuda_coredump=CudaCoredump("SW", "SW_DIR", "dumps")
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("est-timeout = 'fast'", "est-timeout must be one of 'ci-runner', 'sglang', got 'fast'"),
        ("retry-on = 1", "retry-on must be one of 'any-failure', 'output-patterns', got 1"),
        ("retry-wait-seconds = -1", "retry-wait-seconds must be a number of seconds from 0"),
        ("retry-timeout-increase = nan", "retry-timeout-increase must be a number of seconds"),
        ("retry-timeout-increase = true", "retry-timeout-increase must be a number of seconds"),
        ("retry-timeouts = 'yes'", "retry-timeouts must be true or false, got 'yes'"),
        ("working-directory = '../up'", "working-directory must be a directory relative to"),
        ("working-directory = '/abs'", "working-directory must be a directory relative to"),
        ("file-arguments = '-f'", "file-arguments must be a list of non-empty strings"),
        ("file-arguments = ['']", "file-arguments must be a list of non-empty strings"),
        ("timings-block = 1", 'timings-block must be true, false, "stdout" or "stderr", got 1'),
        ("failure-exit-status = 0", "failure-exit-status must be an exit status from 1 to 255"),
        ("retry-count = 2", "unknown key(s) retry-count; known keys: est-timeout"),
        ("cuda-coredump = true", ".cuda-coredump: must be a table with switch-variable"),
        (
            "cuda-coredump = { switch-variable = 'A B', dir-variable = 'D', dir-name = 'd' }",
            ".cuda-coredump: switch-variable must be an environment variable name",
        ),
        (
            "cuda-coredump = { switch-variable = 'A', dir-variable = 'D', dir-name = '..' }",
            ".cuda-coredump: dir-name must be a directory name",
        ),
        (
            "cuda-coredump = { switch-variable = 'A', dir-variable = 'D' }",
            ".cuda-coredump: dir-name must be a directory name",
        ),
    ],
)
def test_every_bad_value_names_file_key_and_expectation(tmp_path, line, message):
    with pytest.raises(CatalogError) as info:
        load_catalog(tree(tmp_path, {}, "[tool.ci-runner.execution]\n" + line + "\n"))
    assert str(info.value).startswith(W), info.value
    assert message in str(info.value)


def test_a_bad_table_is_exit_2_from_the_cli(tmp_path):
    root = tree(
        tmp_path, {"test_a.py": failing("x")}, "[tool.ci-runner.execution]\nretry-on = 'x'\n"
    )
    result = run_suite(root)
    assert result.returncode == 2
    assert "retry-on must be one of" in result.stderr


# --- time limits -------------------------------------------------------------------------------


@pytest.mark.parametrize(("est", "limit"), [(0, 1800), (100, 1900), (3600, 5400), (10000, 15000)])
def test_sglang_est_timeout_is_uncapped(est, limit):
    assert timeout_from_est(est, None, "sglang") == limit
    assert timeout_from_est(est, 30, "sglang") == limit  # upstream ignores --timeout-per-file
    assert timeout_from_est(100, None, "ci-runner") == 360  # ours, unchanged


def test_retry_increase_applies_to_flat_limits_only():
    suites = {"a": 600.0}
    flat = {"flag_timeout": None, "from_est": False, "suite_timeouts": suites}
    assert timeout_for("a", 5, **flat, retry_increase=600) == 1200
    assert timeout_for("b", 5, **flat, retry_increase=600) == 1800
    assert timeout_for("a", 5, **{**flat, "flag_timeout": 30}, retry_increase=600) == 630
    from_est = {**flat, "from_est": True, "est_rule": "sglang"}
    assert timeout_for("a", 100, **from_est, retry_increase=600) == 1900


# --- retry classification ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "retry"),
    [
        ("AssertionError: 0.61 not greater than 0.65", True),
        ("gsm8k accuracy=0.2", True),
        ("AssertionError: values differ", True),
        ("XPU out of memory while loading", True),
        ("XPU out of memory\nRuntimeError: boom", True),  # device flakes come first
        ("RuntimeError: boom, accuracy 0.1", False),  # code errors before symptoms
        ("ModuleNotFoundError: No module named 'x'", False),
        ("it broke", False),
        ("", False),
    ],
)
def test_output_verdicts(output, retry):
    assert output_retry_verdict(output)[0] is retry


def test_accuracy_failure_is_retried_a_plain_failure_is_not(tmp_path):
    root = tree(
        tmp_path,
        {
            "test_accuracy.py": failing("AssertionError: 0.61 not greater than 0.65", 2),
            "test_plain.py": failing("it broke"),
        },
    )
    report = tmp_path / "timings.jsonl"
    result = run_suite(root, "--enable-retry", "--continue-on-error", "--timings-out", str(report))
    assert result.returncode == 1, result.stdout + result.stderr
    records = attempts_of(report)
    assert records["test_accuracy.py"]["status"] == "flaky"
    assert records["test_accuracy.py"]["attempts"] == 2
    assert records["test_plain.py"]["status"] == "failed"
    assert records["test_plain.py"]["attempts"] == 1
    assert "output matches no retriable pattern" in records["test_plain.py"]["reason"]
    assert "its output shows no retriable symptom" in result.stdout


def test_without_the_table_any_failure_is_retried(tmp_path):
    root = tree(tmp_path, {"test_plain.py": failing("it broke", 2)}, table="")
    report = tmp_path / "timings.jsonl"
    result = run_suite(
        root, "--enable-retry", "--retry-wait-seconds", "0", "--timings-out", str(report)
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert attempts_of(report)["test_plain.py"]["status"] == "flaky"


def test_a_timeout_is_retried_once_with_the_increased_limit(tmp_path):
    hang = script_file("import time\n\n\ndef main():\n    time.sleep(60)\n    return 0\n")
    root = tree(tmp_path, {"test_hang.py": hang})
    report = tmp_path / "timings.jsonl"
    result = run_suite(
        root, "--enable-retry", "--timeout-per-file", "0.5", "--retry-timeout-increase", "0.5",
        "--timings-out", str(report),
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    record = attempts_of(report)["test_hang.py"]
    assert record["status"] == "timeout"
    assert record["attempts"] == 2  # max-attempts 2: one retry
    assert record["timeout"] == 1.0  # 0.5 + the increase, on every attempt
    assert timings_of(result.stdout) == [
        {"file": "test/registered/test_hang.py", "passed": False, "elapsed": 1}
    ]


def test_retry_timeout_increase_needs_enable_retry(tmp_path):
    root = tree(tmp_path, {"test_a.py": failing("x")})
    result = run_suite(root, "--retry-timeout-increase", "5")
    assert result.returncode == 2
    assert "--retry-timeout-increase need(s) --enable-retry" in result.stderr


# --- how a file runs, and the TIMINGS block ----------------------------------------------------

RECORDER = script_file(
    "import json\nimport os\n\n\ndef main():\n"
    "    record = {'argv': sys.argv, 'cwd': os.getcwd(), 'env': {k: v for k, v in os.environ.items()"
    " if k.startswith('CUDA_')}}\n"
    "    with open(os.environ['RECORD'], 'a') as out:\n"
    "        out.write(json.dumps(record) + '\\n')\n"
    "    return int(os.environ.get('RECORDER_EXIT', '0'))\n",
    est=3,
)


def test_file_runs_from_the_working_directory_with_file_arguments(tmp_path):
    root = tree(tmp_path / "repo", {"sub/test_rec.py": RECORDER, "test_fail.py": failing("no")})
    record = tmp_path / "record.jsonl"
    result = run_suite(root, "--continue-on-error", env={"RECORD": str(record)})
    assert result.returncode == 1, result.stdout + result.stderr
    seen = json.loads(record.read_text())
    assert seen["cwd"] == str((root / "test").resolve())
    assert seen["argv"] == [str(root.resolve() / "test/registered/sub/test_rec.py"), "-f"]
    timings = sorted(timings_of(result.stdout), key=lambda r: r["file"])
    assert [(r["file"], r["passed"]) for r in timings] == [
        ("test/registered/sub/test_rec.py", True),
        ("test/registered/test_fail.py", False),
    ]
    assert all(type(r["elapsed"]) is int and 0 <= r["elapsed"] < 30 for r in timings)
    assert result.stdout.rstrip().splitlines()[-1].startswith("summary: ")


def test_sglang_exit_status_and_timings_stream(tmp_path):
    """failure-exit-status = 255 and timings-block = "stderr": a failing shard exits 255, as
    sys.exit(-1) does in SGLang's runner, and the TIMINGS block is on stderr (its logger's
    stream); the summary stays the last line of stdout."""
    table = SGLANG_TABLE.replace("timings-block = true", 'timings-block = "stderr"')
    root = tree(tmp_path, {"test_fail.py": failing("no")}, table + "failure-exit-status = 255\n")
    result = run_suite(root)
    assert result.returncode == 255, result.stdout + result.stderr
    assert "TIMINGS BEGIN" not in result.stdout
    timings = timings_of(result.stderr)
    assert [(r["file"], r["passed"]) for r in timings] == [("test/registered/test_fail.py", False)]
    assert result.stdout.rstrip().splitlines()[-1].startswith("summary: 0 passed, 1 failed")
    passing = tree(tmp_path / "ok", {"test_ok.py": RECORDER}, table + "failure-exit-status = 255\n")
    record = tmp_path / "record.jsonl"
    assert run_suite(passing, env={"RECORD": str(record)}).returncode == 0


def test_default_runs_from_the_root_without_arguments_or_timings(tmp_path):
    root = tree(tmp_path / "repo", {"test_rec.py": RECORDER}, table="")
    record = tmp_path / "record.jsonl"
    result = run_suite(root, env={"RECORD": str(record)})
    assert result.returncode == 0, result.stdout + result.stderr
    seen = json.loads(record.read_text())
    assert seen["cwd"] == str(root.resolve())
    assert seen["argv"] == ["test/registered/test_rec.py"]
    assert "TIMINGS BEGIN" not in result.stdout


def test_a_missing_working_directory_is_exit_2(tmp_path):
    table = SGLANG_TABLE.replace('"test"', '"nowhere"')
    result = run_suite(tree(tmp_path, {"test_a.py": RECORDER}, table))
    assert result.returncode == 2
    assert "working-directory 'nowhere'" in result.stderr and "is not a directory" in result.stderr


def test_fail_fast_leaves_unstarted_files_out_of_the_timings(tmp_path):
    root = tree(tmp_path, {"test_a.py": failing("no", est=5), "test_b.py": failing("no", est=1)})
    result = run_suite(root)
    assert result.returncode == 1
    assert [r["file"] for r in timings_of(result.stdout)] == ["test/registered/test_a.py"]


# --- one file at a time on cuda ----------------------------------------------------------------


def _sleeper(est: float, suite: str) -> str:
    body = (
        "import json\nimport os\n\n\ndef main():\n    start = time.time()\n    time.sleep(0.6)\n"
        "    with open(os.environ['RECORD'], 'a') as out:\n"
        "        out.write(json.dumps({'gpus': os.environ.get('CUDA_VISIBLE_DEVICES'), "
        "'start': start, 'end': time.time()}) + '\\n')\n    return 0\n"
    )
    return script_file("import time\n" + body, est=est, suite=suite, marker="cuda")


def _overlap(record: Path) -> bool:
    runs = sorted((r["start"], r["end"]) for r in map(json.loads, record.read_text().splitlines()))
    return any(later[0] < earlier[1] for earlier, later in itertools.pairwise(runs))


def test_cuda_runs_one_file_at_a_time_with_every_gpu_visible(tmp_path):
    files = {"test_g1.py": _sleeper(2, "gpu-suite"), "test_g2.py": _sleeper(1, "gpu-suite")}
    root = tree(tmp_path / "repo", files)
    record = tmp_path / "record.jsonl"
    env = {"RECORD": str(record), "CUDA_VISIBLE_DEVICES": "0,1"}
    result = run_suite(root, hw="cuda", suite="gpu-suite", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "one file at a time" in result.stdout
    assert {r["gpus"] for r in map(json.loads, record.read_text().splitlines())} == {"0,1"}
    assert not _overlap(record)
    record.unlink()
    result = run_suite(root, "--gpus", "2", hw="cuda", suite="gpu-suite", env=env)  # opt in
    assert result.returncode == 0, result.stdout + result.stderr
    assert {r["gpus"] for r in map(json.loads, record.read_text().splitlines())} == {"0", "1"}
    assert _overlap(record)


def test_one_file_at_a_time_never_skips_a_multi_gpu_file(tmp_path):
    root = tree(tmp_path / "repo", {"test_g.py": _sleeper(1, "gpu2-suite")})
    record = tmp_path / "record.jsonl"
    env = {"RECORD": str(record), "CUDA_VISIBLE_DEVICES": "0"}
    result = run_suite(root, hw="cuda", suite="gpu2-suite", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert record.exists()


# --- CUDA coredumps ----------------------------------------------------------------------------

COREDUMP_TABLE = SGLANG_TABLE + (
    'cuda-coredump = { switch-variable = "SW_COREDUMP", dir-variable = "SW_COREDUMP_DIR", '
    'dir-name = "sw_dumps" }\n'
)


def test_coredump_variables_stale_dumps_and_the_report(tmp_path):
    dumps = tmp_path / "dumps"
    run_dir = dumps / "77-2"
    run_dir.mkdir(parents=True)
    (run_dir / "cuda_coredump_stale").write_text("old")
    dumper = script_file(
        "import os\n\n\ndef main():\n    path = os.environ['CUDA_COREDUMP_FILE']\n"
        "    open(path.replace('%h.%p.%t', 'host.1.2'), 'w').write('x' * 2048)\n    return 1\n"
    )
    root = tree(
        tmp_path / "repo", {"test_rec.py": RECORDER, "test_dump.py": dumper}, COREDUMP_TABLE
    )
    record = tmp_path / "record.jsonl"
    env = {
        "RECORD": str(record), "SW_COREDUMP": "1", "SW_COREDUMP_DIR": str(dumps),
        "GITHUB_RUN_ID": "77", "GITHUB_RUN_ATTEMPT": "2", "CUDA_COREDUMP_SHOW_PROGRESS": "0",
    }  # fmt: skip
    result = run_suite(root, "--continue-on-error", env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    seen = json.loads(record.read_text())["env"]
    assert seen["CUDA_ENABLE_COREDUMP_ON_EXCEPTION"] == "1"
    assert seen["CUDA_COREDUMP_FILE"] == f"{run_dir}/cuda_coredump_%h.%p.%t"
    assert seen["CUDA_COREDUMP_GENERATION_FLAGS"].startswith("skip_nonrelocated_elf_images,")
    assert seen["CUDA_COREDUMP_SHOW_PROGRESS"] == "0"  # a variable already set is kept
    assert "kept the environment's CUDA_COREDUMP_SHOW_PROGRESS" in result.stdout
    assert not (run_dir / "cuda_coredump_stale").exists()
    assert f"{run_dir}/cuda_coredump_host.1.2 (0.0 MB)" in result.stdout
    assert "gh run download 77" in result.stdout


def test_coredumps_off_unless_the_switch_is_true(tmp_path):
    root = tree(tmp_path / "repo", {"test_rec.py": RECORDER}, COREDUMP_TABLE)
    record = tmp_path / "record.jsonl"
    result = run_suite(root, env={"RECORD": str(record), "SW_COREDUMP": "0"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "CUDA_COREDUMP_FILE" not in json.loads(record.read_text())["env"]
    result = run_suite(root, env={"RECORD": str(record), "SW_COREDUMP": "maybe"})
    assert result.returncode == 2
    assert "SW_COREDUMP='maybe' is not a boolean" in result.stderr


# --- --partition-model-file --------------------------------------------------------------------


def _shards(stdout: str) -> list[list[str]]:
    document = json.loads(stdout)
    return [sorted(Path(f).name for f in shard["files"]) for shard in document["shards"]]


def test_partition_model_file_replaces_est_time_for_packing(tmp_path):
    files = {f"test_{n}.py": failing("x", est=est) for n, est in (("a", 10), ("b", 9), ("c", 2))}
    root = tree(tmp_path / "repo", files)
    model = tmp_path / "model.json"
    args = (
        "--dry-run",
        "--format",
        "json",
        "--auto-partition-id",
        "0",
        "--auto-partition-size",
        "2",
    )
    plain = run_suite(root, *args)
    assert plain.returncode == 0, plain.stderr
    assert _shards(plain.stdout) == [["test_a.py"], ["test_b.py", "test_c.py"]]
    measured = {"test/registered/test_c.py": 30, "test/registered/test_a.py": 1}
    model.write_text(json.dumps({"est": {"cpu-suite": measured, "other": {}}, "fit": {}}))
    live = run_suite(root, *args, "--partition-model-file", str(model))
    assert live.returncode == 0, live.stderr
    assert _shards(live.stdout) == [["test_c.py"], ["test_a.py", "test_b.py"]]
    assert "2 measured file time(s)" in live.stderr
    missing = run_suite(root, *args, "--partition-model-file", str(tmp_path / "absent.json"))
    assert missing.returncode == 0, missing.stderr
    assert _shards(missing.stdout) == _shards(plain.stdout)
    assert "absent.json: not found; packing with est_time" in missing.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object with an 'est' key"),
        ('{"fit": {}}', "key 'est' must be an object of suite -> {path: seconds}, got None"),
        ('{"est": {"cpu-suite": [1]}}', "key est.cpu-suite must be an object of path -> seconds"),
        (
            '{"est": {"cpu-suite": {"test/registered/test_a.py": "fast"}}}',
            "key est.cpu-suite.test/registered/test_a.py must be a number of seconds",
        ),
        (
            '{"est": {"cpu-suite": {"test/registered/test_a.py": -4}}}',
            "key est.cpu-suite.test/registered/test_a.py must be a number of seconds",
        ),
    ],
)
def test_a_bad_partition_model_file_is_exit_2_naming_file_and_key(tmp_path, content, message):
    root = tree(tmp_path / "repo", {"test_a.py": failing("x")})
    model = tmp_path / "model.json"
    model.write_text(content)
    result = run_suite(
        root, "--dry-run", "--auto-partition-id", "0", "--auto-partition-size", "2",
        "--partition-model-file", str(model),
    )  # fmt: skip
    assert result.returncode == 2
    assert f"--partition-model-file {model}: " in result.stderr
    assert message in result.stderr


def test_partition_model_file_needs_the_partition_flags(tmp_path):
    root = tree(tmp_path / "repo", {"test_a.py": failing("x")})
    result = run_suite(root, "--dry-run", "--partition-model-file", "m.json")
    assert result.returncode == 2
    assert "--partition-model-file needs --auto-partition-id" in result.stderr


# --- init ----------------------------------------------------------------------------------------

SGLANG_RUNNER = "from sglang.test.ci.ci_register import collect_tests\n\n\ndef main():\n    pass\n"
REGISTERED = {
    "test/registered/test_k.py": "from sglang.test.ci.ci_register import register_cuda_ci\n"
    'register_cuda_ci(est_time=5, suite="kernel-1-gpu")\n'
    'if __name__ == "__main__":\n    print("runs")\n',
}


def _init(root: Path) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "ci_runner", "init", "--root", str(root)],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_init_beside_sglangs_runner_writes_the_table_that_reproduces_it(tmp_path):
    root = write_tree(tmp_path, "", {**REGISTERED, "test/run_suite.py": SGLANG_RUNNER})
    (root / "pyproject.toml").unlink()
    result = _init(root)
    assert "[tool.ci-runner.execution]: reproduces the run_suite.py" in result.stdout
    settings = load_catalog(root).execution
    assert settings == SGLANG_SETTINGS


def test_init_without_sglangs_runner_keeps_this_runners_defaults(tmp_path):
    other_runner = "from ci_runner.cli import main\n"
    root = write_tree(tmp_path, "", {**REGISTERED, "test/run_suite.py": other_runner})
    (root / "pyproject.toml").unlink()
    _init(root)
    assert load_catalog(root).execution == DEFAULT_EXECUTION_SETTINGS
    assert "[execution]" not in (root / "ci-runner.toml").read_text()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
