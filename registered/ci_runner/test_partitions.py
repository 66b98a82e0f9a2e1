"""run_suite.py partitions: a workflow's stage suites sized as the repository's partition script
sizes them (SGLang's compute_partitions.py), from [tool.ci-runner.partitions], which init drafts
by parsing that script (issue 48); and --print-matrix with the same rule and runner keys.

The partition script here is a stand-in of our own in the shape init reads (literal sets and
dicts, ``with_[...]``, ``0.75 *``, ``size // 3``); the expected sizes are worked out by hand.
"""

import json
import sys
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci
from ci_runner.cli import main

register_cpu_ci(est_time=12, suite="base-a-test-cpu")

HEAD = "import sys\n\nimport pytest\n\nfrom ci_runner import *  # noqa\n\n"
MAIN = '\nif __name__ == "__main__":\n    sys.exit(pytest.main([__file__]))\n'
SCRIPT = """
_TARGET_BACKENDS = {HWBackend.CUDA, HWBackend.CPU}
_PINNED = {"pinned-gpu": 1}
_STAGES = {"./.github/workflows/_stage.yml"}


def budgets(wf):
    out = {}
    for job_id, job in wf["jobs"].items():
        with_ = job.get("with") or {}
        out[with_.get("self_name", job_id)] = int(with_["run_timeout_minutes"])
    return out


def size(total, minutes, group):
    size = -(-total // (0.75 * minutes * 60))
    unthrottled = all(t.backend == HWBackend.CPU for t in group)
    return size, size if unthrottled else max(size // 3, 1)
"""
PR = """\
on: pull_request
jobs:
  check:
    runs-on: ubuntu-latest
    steps:
      - run: python3 scripts/ci/compute_partitions.py --pr-test-yml .github/workflows/pr.yml
  gpu-a:
    uses: ./.github/workflows/_stage.yml
    with:
      self_name: gpu-a
      runner_config: 1-gpu-h100
      runs_on_map: ${{ needs.check.outputs.runs_on_map }}
      run_timeout_minutes: '10'
  cpu-b:
    uses: ./.github/workflows/_stage.yml
    with:
      self_name: cpu-b
      run_timeout_minutes: '10'
  gpu-long:
    uses: ./.github/workflows/_stage.yml
    with:
      self_name: gpu-long
      run_timeout_minutes: '10'
"""
STAGE = """\
on:
  workflow_call:
    inputs:
      self_name: {type: string, required: true}
      runner_config: {type: string, default: 1-gpu-h100}
      run_timeout_minutes: {type: string, required: true}
      runs_on_map: {type: string, default: '{"1-gpu-h100": "h100"}'}
jobs:
  run:
    runs-on: ${{ fromJson(inputs.runs_on_map)[inputs.runner_config] }}
    timeout-minutes: ${{ fromJson(inputs.run_timeout_minutes) }}
    steps:
      - run: python3 run_suite.py --hw cuda --suite ${{ inputs.self_name }}
"""


def reg(name: str, call: str) -> tuple[str, str]:
    return f"registered/{name}.py", HEAD + call + "\n" + MAIN


FILES = dict(
    [
        reg("test_a1", 'register_cuda_ci(est_time=200, suite="gpu-a")'),
        reg("test_a2", 'register_cuda_ci(est_time=200, suite="gpu-a")'),
        reg("test_a3", 'register_cuda_ci(est_time=200, suite="gpu-a")'),
        reg("test_a4", 'register_cuda_ci(est_time=100, suite="gpu-a")'),
        reg("test_a_nightly", 'register_cuda_ci(est_time=1000, suite="gpu-a", nightly=True)'),
        reg("test_a_off", 'register_cuda_ci(est_time=1000, suite="gpu-a", disabled="flaky")'),
        reg("test_a_amd", 'register_amd_ci(est_time=1000, suite="gpu-a")'),
        reg("test_b1", 'register_cpu_ci(est_time=300, suite="cpu-b")'),
        reg("test_b2", 'register_cpu_ci(est_time=300, suite="cpu-b")'),
        reg("test_b3", 'register_cpu_ci(est_time=300, suite="cpu-b")'),
        reg("test_p1", 'register_cuda_ci(est_time=900, suite="pinned-gpu")'),
        reg("test_p2", 'register_cuda_ci(est_time=900, suite="pinned-gpu")'),
        reg("test_long", 'register_cuda_ci(est_time=1000, suite="gpu-long")'),
    ]
)


def tree(root: Path, long_file: bool = False) -> Path:
    files = {
        **FILES,
        "pyproject.toml": '[project]\nname = "x"\n',
        "scripts/ci/compute_partitions.py": SCRIPT,
        ".github/workflows/pr.yml": PR,
        ".github/workflows/_stage.yml": STAGE,
    }
    if not long_file:
        del files["registered/test_long.py"]
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    assert main(["init", "--root", str(root)]) == 0
    with (root / "pyproject.toml").open("a") as catalog:  # the tree mixes cadences and backends
        catalog.write(
            '\n[tool.ci-runner.policy]\nnightly = "registration"\nsuite-names = "per-backend"\n'
            '\n[[tool.ci-runner.suites]]\nname = "gpu-a"\nhw = "amd"\n'
        )
    return root


def partitions(root: Path, capsys, *flags: str) -> tuple[int, str, str]:
    rc = main(["partitions", "--root", str(root), "--workflow", ".github/workflows/pr.yml", *flags])
    out = capsys.readouterr()
    return rc, out.out.strip(), out.err


def test_init_drafts_the_rule_from_the_script(tmp_path, capsys):
    root = tree(tmp_path)
    out = capsys.readouterr().out
    assert "[partitions]: the rule of scripts/ci/compute_partitions.py" in out
    text = (root / "pyproject.toml").read_text()
    assert (
        "[tool.ci-runner.partitions]\n"
        'backends = ["cpu", "cuda"]\n'
        'stage-workflows = ["./.github/workflows/_stage.yml"]\n'
        'suite-input = "self_name"\n'
        'budget-input = "run_timeout_minutes"\n'
        "budget-fraction = 0.75\n"
        "pinned = { pinned-gpu = 1 }\n"
        "max-parallel-divisor = 3\n"
        'unthrottled-backends = ["cpu"]\n'
    ) in text


def test_sizes_arrays_and_parallelism_as_the_script_prints_them(tmp_path, capsys):
    root = tree(tmp_path)
    capsys.readouterr()
    rc, out, _ = partitions(root, capsys)
    # gpu-a: 200+200+200+100 = 700 s over 0.75 x 10 min = 450 s: 2 shards, 2 // 3 -> 1 parallel
    # (its nightly, disabled and amd registrations do not count); cpu-b: 900 / 450 = 2 shards,
    # all cpu: unthrottled; pinned-gpu: 1, whatever its est (not even in this workflow)
    assert rc == 0 and out == (
        '{"cpu-b":{"arr":[0,1],"max_parallel":2,"size":2},'
        '"gpu-a":{"arr":[0,1],"max_parallel":1,"size":2},'
        '"pinned-gpu":{"arr":[0],"max_parallel":1,"size":1}}'
    )
    rc, full, _ = partitions(root, capsys, "--full-parallel", "true")
    assert json.loads(full)["gpu-a"]["max_parallel"] == 2
    rc, gha, _ = partitions(root, capsys, "--output-format", "gha")
    assert gha == f"partitions={out}"


def test_a_model_file_replaces_est_and_fits_each_suite(tmp_path, capsys):
    root = tree(tmp_path)
    capsys.readouterr()
    model = tmp_path / "model.json"
    model.write_text(
        json.dumps(
            {
                "est": {"gpu-a": {"registered/test_a1.py": 500}},
                "fit": {"cpu-b": {"coeff": 1.0, "bias": 150}, "gpu-a": {"coeff": -1, "bias": 9}},
            }
        )
    )
    rc, out, err = partitions(root, capsys, "--partition-model-file", str(model))
    sized = json.loads(out)
    # gpu-a: 500+200+200+100 = 1000 / 450 -> 3 (a coeff <= 0 falls back to 1, 0);
    # cpu-b: 900 / (450 - 150) -> 3
    assert rc == 0 and sized["gpu-a"]["size"] == 3 and sized["cpu-b"]["size"] == 3
    assert "partition model" in err
    rc, out, err = partitions(root, capsys, "--partition-model-file", str(tmp_path / "none.json"))
    assert rc == 0 and "not found; packing with est_time" in err


def test_a_file_longer_than_a_shard_is_an_error_naming_the_suite(tmp_path, capsys):
    root = tree(tmp_path, long_file=True)
    capsys.readouterr()
    rc, out, err = partitions(root, capsys)
    assert rc == 2 and out == ""
    assert "suite 'gpu-long': needs 3 shards but has only 1 registration(s)" in err


def test_print_matrix_uses_the_rule_and_emits_the_runner_key(tmp_path, capsys):
    root = tree(tmp_path)
    capsys.readouterr()
    assert main(["--root", str(root), "--hw", "cuda", "--suite", "gpu-a", "--print-matrix"]) == 0
    matrix = json.loads(capsys.readouterr().out)
    assert matrix["shards"] == {"gpu-a": 2} and matrix["max_parallel"] == {"gpu-a": 1}
    assert matrix["include"][0]["runner"] is None
    assert matrix["include"][0]["runner_key"] == "1-gpu-h100"
    assert (
        main(["--root", str(root), "--hw", "cuda", "--suite", "pinned-gpu", "--print-matrix"]) == 2
    )
    assert "has no runner label" in capsys.readouterr().err  # strict policy: no runner, no key


def test_without_a_rule_the_command_says_how_to_get_one(tmp_path, capsys):
    (tmp_path / "registered").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ci-runner]\n[[tool.ci-runner.suites]]\nname = "a"\nhw = "cpu"\n'
    )
    (tmp_path / "w.yml").write_text("jobs: {}\n")
    rc = main(["partitions", "--root", str(tmp_path), "--workflow", "w.yml"])
    assert rc == 2 and "no partitions table; run_suite.py init drafts it" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("budget-fraction = 2", "budget-fraction must be a number in (0, 1], got 2"),
        ("pinned = { a = 0 }", "pinned must be a table of suite = shard count"),
        ("max-parallel-divisor = 0", "max-parallel-divisor must be a positive integer, got 0"),
        ("typo = 1", "unknown key(s) typo"),
    ],
)
def test_a_bad_rule_names_the_key(tmp_path, capsys, line, message):
    (tmp_path / "registered").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ci-runner]\n[tool.ci-runner.partitions]\nbackends = ["cpu"]\n'
        'stage-workflows = ["x"]\nbudget-input = "m"\n'
        f"{line}\n"
        '[[tool.ci-runner.suites]]\nname = "a"\nhw = "cpu"\n'
    )
    assert main(["--root", str(tmp_path), "--hw", "cpu", "--suite", "a", "--dry-run"]) == 2
    assert f"pyproject.toml [tool.ci-runner] partitions: {message}" in capsys.readouterr().err


def test_plan_upstream_packs_as_auto_partition_and_default_stays_ours(tmp_path, capsys):
    root = tree(tmp_path)
    capsys.readouterr()
    argv = ["--root", str(root), "--hw", "cuda", "--suite", "gpu-a", "--dry-run", "--format"]
    argv += ["json", "--auto-partition-id", "0", "--auto-partition-size", "2"]
    assert main(argv) == 0
    ours = json.loads(capsys.readouterr().out)
    text = (root / "pyproject.toml").read_text()
    (root / "pyproject.toml").write_text(
        text.replace("[tool.ci-runner]\n", '[tool.ci-runner]\nplan = "upstream"\n', 1)
    )
    assert main(argv) == 0
    upstream = json.loads(capsys.readouterr().out)
    shards = [[p.removeprefix("registered/") for p in s["files"]] for s in upstream["shards"]]
    # 200, 200, 200, 100 by (-est, path): a1 -> 0, a2 -> 1, a3 -> 0 (400), a4 -> 1 (300)
    assert shards == [["test_a1.py", "test_a3.py"], ["test_a2.py", "test_a4.py"]]
    assert upstream["algorithm"] == "upstream" and ours["algorithm"] != "upstream"
    (root / "pyproject.toml").write_text(
        text.replace("[tool.ci-runner]\n", '[tool.ci-runner]\nplan = "lpt"\n', 1)
    )
    assert main(argv) == 2
    assert "plan must be 'best' or 'upstream'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("runs_on", "key"),
    [
        ("${{ fromJson(fromJson(inputs.cc).map)[inputs.config] }}", "4-gpu-b200"),
        ("${{ fromJson(inputs.map)[format('{0}-x', inputs.config)] }}", "4-gpu-b200-x"),
        ("${{ fromJson(inputs.map)[needs.a.outputs.key] }}", None),  # the key depends on the run
        ("${{ inputs.label }}", None),  # no lookup
        ("ubuntu-latest", None),
        (["self-hosted", "x"], None),
    ],
)
def test_the_runner_key_of_a_computed_runs_on(runs_on, key):
    from ci_runner.workflows.runner_key import runner_key

    assert runner_key(runs_on, {"inputs": {"config": "4-gpu-b200"}}) == key


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
