"""tools/compare_sglang: workflow calls resolved, cases enumerated, selections compared, and a whole
comparison on a tiny generated SGLang-like tree (our own stand-in for upstream's run_suite.py;
CI has neither the network nor an SGLang checkout)."""

import json
import re
import sys
import textwrap
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cpu_ci
from ci_runner.workflows.expressions import UNKNOWN, evaluate
from ci_runner.workflows.invocations import Invocation, scan_workflows
from tools.compare_sglang.__main__ import main as compare_main
from tools.compare_sglang.cases import Case, enumerate_cases
from tools.compare_sglang.compare import compare, template
from tools.compare_sglang.comparison import OursSetup, our_problem_lines, run_comparison
from tools.compare_sglang.ours import DEFAULT_RUNNER, OursResult
from tools.compare_sglang.staging import StagingError, stage
from tools.compare_sglang.upstream import Registration, Selection, Upstream, UpstreamError

register_cpu_ci(est_time=22, suite="base-a-test-cpu")


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return root


# ------------------------------------------------------------------ expressions and workflows


def test_expressions_resolve_inputs_and_matrix_and_leave_run_state_unknown():
    contexts = {
        "inputs": {"partitions": '{"s": {"size": 3}}', "self_name": "s", "scheduled": False},
        "matrix": {"suite": "x"},
    }
    assert evaluate("fromJson(inputs.partitions)[inputs.self_name].size", contexts) == 3
    assert evaluate("inputs.scheduled && '--flag' || ''", contexts) == ""
    assert evaluate("format('--t {0}', matrix.suite)", contexts) == "--t x"
    assert evaluate("github.event_name == 'schedule' && 'a' || 'b'", contexts) is UNKNOWN
    assert evaluate("fromJson(inputs.partitions).missing", contexts) is None


CALLER = """\
    on: {pull_request: {}}
    jobs:
      check:
        uses: ./.github/workflows/_check.yml
      base-b-test-1-gpu:
        uses: ./.github/workflows/_stage.yml
        with:
          self_name: base-b-test-1-gpu
          partitions: ${{ needs.check.outputs.partitions }}
"""
CHECK = """\
    on:
      workflow_call:
        inputs:
          pr_test_yml: {type: string, default: .github/workflows/pr.yml}
    jobs:
      compute:
        runs-on: ubuntu-latest
        steps:
          - run: python3 scripts/ci/utils/compute_partitions.py --pr-test-yml ${{ inputs.pr_test_yml }}
"""
STAGE = """\
    on:
      workflow_call:
        inputs:
          self_name: {type: string, required: true}
          partitions: {type: string, required: true}
    jobs:
      run:
        runs-on: x
        strategy:
          matrix:
            partition: ${{ fromJson(inputs.partitions)[inputs.self_name].arr }}
        env:
          FLAG: ${{ github.event_name == 'schedule' && '--continue-on-error' || '' }}
        steps:
          - run: |
              # the comment mentions run_suite.py --suite nothing
              cd test
              python3 run_suite.py --hw cuda --suite ${{ inputs.self_name }} \\
                --auto-partition-id ${{ matrix.partition }} \\
                --auto-partition-size ${{ fromJson(inputs.partitions)[inputs.self_name].size }} \\
                $FLAG
"""
DIRECT = """\
    on:
      workflow_dispatch:
        inputs:
          which: {type: string, default: nightly-1-gpu}
    jobs:
      matrix-job:
        runs-on: x
        strategy:
          matrix:
            include:
              - suite: base-a-test-cpu
                partition_args: "--auto-partition-id 0 --auto-partition-size 2"
              - suite: base-b-test-cpu
                partition_args: ""
        steps:
          - run: docker exec c bash -c "cd ./test && python3 run_suite.py --hw cpu --suite ${{ matrix.suite }} ${{ matrix.partition_args }}"
      shell-variable:
        runs-on: x
        steps:
          - run: |
              suite="${{ inputs.which }}"
              python3 run_suite.py --hw=cuda --suite ${suite} --nightly --auto-partition-size=3 --auto-partition-id=0 2>&1 | tee log
      unknown:
        runs-on: x
        steps:
          - run: python3 run_suite.py --hw amd --suite ${{ github.event.inputs.suite }}
          - run: |
              python3 sglang/multimodal_gen/test/run_suite.py --suite 1-gpu
              cd test/srt && python3 run_suite.py --suite per-commit
"""


def test_workflow_calls_resolve_through_callers_matrices_partitions_and_shell_variables(tmp_path):
    root = write(
        tmp_path,
        {
            ".github/workflows/pr.yml": CALLER,
            ".github/workflows/_check.yml": CHECK,
            ".github/workflows/_stage.yml": STAGE,
            ".github/workflows/direct.yml": DIRECT,
        },
    )
    asked = []

    def partitions_for(yml: str):
        asked.append(yml)
        return json.dumps({"base-b-test-1-gpu": {"size": 4, "arr": [0, 1, 2, 3]}})

    scan = scan_workflows(root, partitions_for)
    found = {(i.workflow, i.hw, i.suite, i.nightly, i.size) for i in scan.invocations}
    assert found == {
        (".github/workflows/_stage.yml", "cuda", "base-b-test-1-gpu", False, 4),
        (".github/workflows/direct.yml", "cpu", "base-a-test-cpu", False, 2),
        (".github/workflows/direct.yml", "cpu", "base-b-test-cpu", False, None),
        (".github/workflows/direct.yml", "cuda", "nightly-1-gpu", True, 3),
    }
    assert asked == [".github/workflows/pr.yml"]
    stage_call = next(i for i in scan.invocations if i.suite == "base-b-test-1-gpu")
    assert stage_call.line == 18 and "pr.yml job base-b-test-1-gpu" in stage_call.via
    assert [(u.where, u.reason.split(" (")[0]) for u in scan.unresolved] == [
        (".github/workflows/direct.yml:26", "--suite depends on github.event.inputs.suite")
    ]
    assert scan.other_scripts == [
        ".github/workflows/direct.yml:28: sglang/multimodal_gen/test/run_suite.py",
        ".github/workflows/direct.yml:29: run_suite.py without --hw",
    ]


def test_a_shard_count_the_partitions_do_not_give_is_unresolved(tmp_path):
    root = write(
        tmp_path,
        {
            ".github/workflows/pr.yml": CALLER,
            ".github/workflows/_check.yml": CHECK,
            ".github/workflows/_stage.yml": STAGE,
        },
    )
    scan = scan_workflows(root, lambda yml: UNKNOWN)
    assert scan.invocations == []
    assert len(scan.unresolved) == 1
    assert scan.unresolved[0].reason.startswith(
        "--auto-partition-size depends on fromJson(inputs.partitions)[inputs.self_name].size"
    )


# ------------------------------------------------------------------ cases and comparison


def registration(path: str, hw: str, suite: str, nightly: bool = False) -> Registration:
    return Registration(path, hw, hw, suite, nightly, None, 10.0)


def test_cases_cover_tables_registrations_and_workflows_with_and_without_nightly():
    cases = enumerate_cases(
        {"PER_COMMIT_SUITES": {"cpu": ["a"]}},
        [registration("t.py", "cuda", "b"), registration("u.py", "cpu", "a", nightly=True)],
        [
            Invocation("w.yml", 3, "cuda", "b", False, 2, "direct"),
            Invocation("w.yml", 9, "amd", "c", True, None, "direct"),
        ],
    )
    assert {case: sources for case, sources in cases.items()} == {
        Case("amd", "c", False): [],
        Case("amd", "c", True): ["w.yml:9"],
        Case("cpu", "a", False): ["PER_COMMIT_SUITES", "registered"],
        Case("cpu", "a", True): ["PER_COMMIT_SUITES", "registered"],
        Case("cuda", "b", False): ["registered"],
        Case("cuda", "b", False, 2): ["w.yml:3"],
        Case("cuda", "b", True): ["registered"],
    }
    assert next(iter(cases)) == Case("amd", "c", False)


def selection(
    *files: str, rc: int = 0, disabled: tuple[str, ...] = (), est: float = 10.0
) -> Selection:
    return Selection(rc, files, dict.fromkeys(files, est), disabled, "")


def ours(*files: str, rc: int = 0, shards=None, stderr: str = "", makespan=None) -> OursResult:
    shards = shards if shards is not None else (files,)
    return OursResult(
        rc, files, dict.fromkeys(files, 10.0), (), tuple(shards), makespan, "h", stderr, ()
    )


def test_same_files_and_same_failure_class_are_identical():
    case = Case("cpu", "a", False)
    assert compare(case, [], [selection("x", "y")], [ours("y", "x")]).identical
    both = compare(case, [], [selection(rc=1)], [ours(rc=2, stderr="error: bad")])
    assert both.identical and both.both_fail


def test_differences_are_named_and_grouped_by_template():
    case = Case("cpu", "a", False)
    blocked = compare(
        case,
        [],
        [selection("x")],
        [
            ours(
                rc=2,
                stderr="p.py:3:1: m\n1 registration problem(s) in 1 file(s); nothing was run\n",
            )
        ],
    )
    assert blocked.reasons == [
        "ours exit 2: 1 registration problem(s) in 1 file(s); nothing was run"
    ]
    assert blocked.groups == [
        "ours exit 2: N registration problem(s) in N file(s); nothing was run"
    ]
    upstream_fails = compare(case, [], [selection(rc=1)], [ours("x")])
    assert upstream_fails.groups == ["upstream exit 1: "]
    files = compare(case, [], [selection("x", "x", "y", disabled=("d",))], [ours("y", "z")])
    assert files.groups == [
        "upstream selects a file more than once (registered twice for one hw/suite/nightly)",
        "upstream selects files ours does not",
        "ours selects files upstream does not",
        "disabled files differ",
    ]
    assert files.reasons[1] == "1 enabled file(s) only upstream selects: x"
    assert template("suite 'base-a' at t/x.py:12: got 0") == "suite '…' at <file> got N"


def test_sharded_case_compares_union_placement_and_makespan():
    case = Case("cuda", "b", False, 2)
    upstream = [selection("a", "b", est=30.0), selection("c", est=50.0)]
    good = compare(
        case, [], upstream, [ours("a", "b", "c", shards=(("c",), ("a", "b")), makespan=45.0)]
    )
    assert good.identical
    assert (good.upstream_makespan, good.ours_makespan) == (60.0, 45.0)
    overlap = compare(
        case, [], upstream, [ours("a", "b", "c", shards=(("a", "c"), ("a", "b")), makespan=45.0)]
    )
    assert overlap.groups == ["a file is in more than one of our shards"]


def test_our_problem_lines_group_by_message():
    stderr = "a.py:1:1: suite 'x' bad\nb.py:2:1: suite 'y' bad\nc.py:3: est 0\nsummary line\n"
    assert our_problem_lines(stderr) == [
        {
            "message": "suite '…' bad",
            "count": 2,
            "examples": ["a.py:1:1: suite 'x' bad", "b.py:2:1: suite 'y' bad"],
        },
        {"message": "est N", "count": 1, "examples": ["c.py:3: est 0"]},
    ]


# ------------------------------------------------------------------ a whole run on a tiny tree

STAND_IN_REGISTER = '''\
    """Stand-in for upstream's ci_register.py: AST-parsed top-level register_*_ci(...) calls."""
    import ast
    from dataclasses import dataclass
    from enum import Enum, auto


    class HWBackend(Enum):
        CPU = auto()
        CUDA = auto()


    @dataclass
    class CIRegistry:
        backend: HWBackend
        filename: str
        est_time: float
        suite: str
        nightly: bool = False
        disabled: str | None = None


    REGISTER_MAPPING = {"register_cpu_ci": HWBackend.CPU, "register_cuda_ci": HWBackend.CUDA}


    def register_cpu_ci(**kwargs):
        return None


    def register_cuda_ci(**kwargs):
        return None


    def collect_tests(files, sanity_check=True):
        found = []
        for path in files:
            with open(path) as handle:
                tree = ast.parse(handle.read())
            calls = [
                s.value
                for s in tree.body
                if isinstance(s, ast.Expr)
                and isinstance(s.value, ast.Call)
                and getattr(s.value.func, "id", None) in REGISTER_MAPPING
            ]
            if not calls and sanity_check:
                raise ValueError(f"No CI registry found in {path}")
            for call in calls:
                kw = {k.arg: k.value.value for k in call.keywords}
                found.append(
                    CIRegistry(
                        REGISTER_MAPPING[call.func.id], path, float(kw["est_time"]), kw["suite"],
                        kw.get("nightly", False), kw.get("disabled"),
                    )
                )
        return found
'''
STAND_IN_RUN_SUITE = '''\
    """Stand-in for upstream's test/run_suite.py: select by (hw, suite, nightly), LPT shards."""
    import argparse
    import glob
    import os
    import sys

    import tabulate

    from sglang.test.ci.ci_register import HWBackend, collect_tests
    from sglang.test.ci.ci_utils import run_unittest_files

    HW_MAPPING = {"cpu": HWBackend.CPU, "cuda": HWBackend.CUDA}
    PER_COMMIT_SUITES = {
        HWBackend.CPU: ["base-a-test-cpu"],
        HWBackend.CUDA: ["base-b-test-1-gpu", "base-b-empty"],
    }
    NIGHTLY_SUITES = {HWBackend.CUDA: ["nightly-1-gpu"]}


    def filter_tests(tests, hw, suite, nightly):
        chosen = [t for t in tests if t.backend == hw and t.suite == suite and t.nightly == nightly]
        return [t for t in chosen if t.disabled is None], [t for t in chosen if t.disabled]


    def partition(tests, rank, size):
        parts, sums = [[] for _ in range(size)], [0.0] * size
        for t in sorted(tests, key=lambda t: (-t.est_time, t.filename)):
            i = sums.index(min(sums))
            parts[i].append(t)
            sums[i] += t.est_time
        return parts[rank]


    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--hw", choices=HW_MAPPING, required=True)
        parser.add_argument("--suite", required=True)
        parser.add_argument("--nightly", action="store_true")
        parser.add_argument("--auto-partition-id", type=int)
        parser.add_argument("--auto-partition-size", type=int)
        args = parser.parse_args()
        here = os.path.dirname(os.path.abspath(__file__))
        files = glob.glob(os.path.join(here, "registered", "**", "*.py"), recursive=True)
        tests = collect_tests([f for f in files if os.path.basename(f) != "__init__.py"])
        enabled, skipped = filter_tests(tests, HW_MAPPING[args.hw], args.suite, args.nightly)
        if args.auto_partition_size:
            enabled = partition(enabled, args.auto_partition_id, args.auto_partition_size)
        print(tabulate.tabulate([[args.hw, args.suite]], headers=["hw", "suite"]))
        sys.exit(run_unittest_files(enabled))
'''


def source_with(*registrations: str) -> str:
    calls = "\n".join(registrations)
    return (
        "from sglang.test.ci.ci_register import register_cpu_ci, register_cuda_ci\n\n"
        f"{calls}\n\nif __name__ == '__main__':\n    print('ran')\n"
    )


TINY_TREE = {
    "python/sglang/test/ci/ci_register.py": STAND_IN_REGISTER,
    "test/run_suite.py": STAND_IN_RUN_SUITE,
    "test/registered/a/test_cpu_one.py": source_with(
        'register_cpu_ci(est_time=10, suite="base-a-test-cpu")'
    ),
    "test/registered/a/test_cpu_two.py": source_with(
        'register_cpu_ci(est_time=20, suite="base-a-test-cpu")'
    ),
    "test/registered/b/test_gpu_one.py": source_with(
        'register_cuda_ci(est_time=30, suite="base-b-test-1-gpu")',
        'register_cuda_ci(est_time=40, suite="nightly-1-gpu", nightly=True)',
    ),
    "test/registered/b/test_gpu_two.py": source_with(
        'register_cuda_ci(est_time=50, suite="base-b-test-1-gpu")'
    ),
    "test/registered/b/test_gpu_three.py": source_with(
        'register_cuda_ci(est_time=60, suite="base-b-test-1-gpu")'
    ),
    ".github/workflows/pr.yml": """\
        on: {pull_request: {}}
        jobs:
          gpu:
            runs-on: x
            strategy: {matrix: {part: [0, 1]}}
            steps:
              - run: cd test && python3 run_suite.py --hw cuda --suite base-b-test-1-gpu --auto-partition-id ${{ matrix.part }} --auto-partition-size 2
    """,
}


def test_whole_comparison_on_a_tiny_tree(tmp_path):
    checkout = write(tmp_path / "checkout", TINY_TREE)
    before = sorted(p.relative_to(checkout) for p in checkout.rglob("*"))
    report = run_comparison(checkout, DEFAULT_RUNNER, jobs=2)
    assert sorted(p.relative_to(checkout) for p in checkout.rglob("*")) == before
    outcomes = {o.case.label: o for o in report.outcomes}
    # init on the unchanged tree writes the compatible policy: every case is identical
    assert sorted(outcomes) == [
        "cpu:'base-a-test-cpu'",
        "cpu:'base-a-test-cpu' --nightly",
        "cuda:'base-b-empty'",
        "cuda:'base-b-empty' --nightly",
        "cuda:'base-b-test-1-gpu'",
        "cuda:'base-b-test-1-gpu' --nightly",
        "cuda:'base-b-test-1-gpu' [2 shard(s)]",
        "cuda:'nightly-1-gpu'",
        "cuda:'nightly-1-gpu' --nightly",
    ]
    assert [label for label, o in outcomes.items() if not o.identical] == []
    assert report.mode == "in-process"
    sharded = outcomes["cuda:'base-b-test-1-gpu' [2 shard(s)]"]
    assert (
        sharded.upstream_files
        == sharded.ours_files
        == [
            "test/registered/b/test_gpu_one.py",
            "test/registered/b/test_gpu_three.py",
            "test/registered/b/test_gpu_two.py",
        ]
    )
    assert (sharded.upstream_makespan, sharded.ours_makespan) == (80.0, 80.0)
    assert report.init_rc == 0 and report.workflows.unresolved == []


def test_a_suite_holding_both_cadences_is_identical_after_init(tmp_path, capsys):
    tree = dict(TINY_TREE)
    tree["test/registered/a/test_cpu_nightly.py"] = source_with(
        'register_cpu_ci(est_time=5, suite="base-a-test-cpu", nightly=True)'
    )
    tree["test/registered/a/__init__.py"] = ""
    checkout = write(tmp_path / "checkout", tree)
    out = tmp_path / "result.json"
    argv = [str(checkout), "--only", "cpu:*", "--json", str(out), "--cli-sample", "2"]
    assert compare_main(argv) == 0
    printed = capsys.readouterr().out
    assert "cases: 2 (2 whole-suite, 0 sharded" in printed
    assert "identical: 2" in printed and "differing: 0" in printed
    assert "cli sample: 2 case(s) also run through the real CLI, 0 differ" in printed
    assert (
        "1  suites holding nightly=True and nightly=False registrations: cpu:'base-a-test-cpu'"
        in printed
    )
    assert (
        "1  *.py files under test/registered/ that upstream does not collect: "
        "test/registered/a/__init__.py" in printed
    )
    document = json.loads(out.read_text())
    nightly = next(o for o in document["outcomes"] if o["case"]["nightly"])
    assert nightly["upstream_files"] == nightly["ours_files"]
    assert nightly["ours_files"] == ["test/registered/a/test_cpu_nightly.py"]
    assert document["our_problems"] == []


def test_subprocess_mode_runs_the_real_cli_per_case_with_the_same_result(tmp_path):
    checkout = write(tmp_path / "checkout", TINY_TREE)
    only = lambda case: case.hw == "cuda"  # noqa: E731
    fast = run_comparison(checkout, DEFAULT_RUNNER, jobs=2, only=only)
    slow = run_comparison(checkout, DEFAULT_RUNNER, jobs=2, only=only, subprocesses=True)
    assert slow.mode == "subprocess"
    assert [(o.case, o.ours_rc, o.ours_files, o.ours_shards) for o in fast.outcomes] == [
        (o.case, o.ours_rc, o.ours_files, o.ours_shards) for o in slow.outcomes
    ]


def test_an_older_catalog_updated_selects_as_upstream_with_a_new_suite_and_its_shards(tmp_path):
    """Issue 48's migration check on the tiny tree: a catalog written before a file with a
    brand-new suite name appeared, run through init --update, with plan = "upstream": every case
    is identical, sharded ones shard for shard, file for file."""
    checkout = write(tmp_path / "checkout", TINY_TREE)
    older = tmp_path / "older" / "ci-runner.toml"
    older.parent.mkdir()
    from ci_runner.cli import main as runner_main

    assert runner_main(["init", "--root", str(checkout), "--output", str(older)]) == 0
    overlay = write(
        tmp_path / "overlay",
        {
            "test/registered/c/test_new.py": source_with(
                'register_cuda_ci(est_time=5, suite="brand-new")'
            )
        },
    )
    setup = OursSetup(catalog=older, update=True, upstream_plan=True, overlay=overlay)
    report = run_comparison(checkout, DEFAULT_RUNNER, jobs=2, setup=setup)
    outcomes = {o.case.label: o for o in report.outcomes}
    assert "cuda:'brand-new'" in outcomes and outcomes["cuda:'brand-new'"].ours_files == [
        "test/registered/c/test_new.py"
    ]
    assert [label for label, o in outcomes.items() if not o.identical] == []
    assert report.catalog == f"given ({older}) + init --update" and report.upstream_plan
    sharded = outcomes["cuda:'base-b-test-1-gpu' [2 shard(s)]"]
    assert (
        sharded.ours_shards
        == sharded.upstream_shards
        == [
            ["test/registered/b/test_gpu_three.py"],
            ["test/registered/b/test_gpu_two.py", "test/registered/b/test_gpu_one.py"],
        ]
    )
    assert report.partitions.skipped  # the tiny tree has no partition script


def test_not_an_sglang_tree_is_refused_with_what_is_missing(tmp_path, capsys):
    with pytest.raises(StagingError, match=re.escape("missing test/run_suite.py, test/registered")):
        stage(write(tmp_path / "x", {"python/sglang/test/ci/ci_register.py": ""}))
    assert compare_main([str(tmp_path / "nowhere")]) == 2
    assert "nowhere: not a directory" in capsys.readouterr().err
    root = write(tmp_path / "y", {**TINY_TREE, "test/run_suite.py": "HW_MAPPING = {}\n"})
    with pytest.raises(UpstreamError, match=re.escape("test/run_suite.py: no main")):
        Upstream(root)
    root = write(tmp_path / "z", {**TINY_TREE, "test/run_suite.py": "import sglang.srt.server\n"})
    with pytest.raises(
        UpstreamError, match=re.escape("loading test/run_suite.py: ModuleNotFoundError")
    ):
        Upstream(root)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
