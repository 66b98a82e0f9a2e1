"""Reading workflows is bounded and says what it left out: init on a 500-byte workflow whose
matrix axes alias one YAML anchor (1.28 billion rows) ends at once, naming the matrix; a wrong
YAML type anywhere (``strategy: [1]``) is a note naming the file and key, never a traceback;
alias bombs, self-referring aliases, huge files, deep reusable-workflow chains, fan-out and
hostile expressions are each bounded. A property test feeds random workflow YAML (shapes, types,
anchors and aliases, large matrices) into init and into the dispatch check."""

import os
import resource
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_runner import register_cpu_ci
from ci_runner.adoption.workflow_suites import read_workflows
from ci_runner.cli import main
from ci_runner.maintenance.workflow_coverage import main as dispatch_main
from ci_runner.workflows.expressions import ExpressionError, evaluate
from ci_runner.workflows.invocations import scan_workflows
from ci_runner.workflows.yaml_file import MAX_BYTES

sys.path.insert(0, str(Path(__file__).parent))
from helpers_tree import REPO_ROOT, make_repo, registered_source

register_cpu_ci(est_time=13, suite="base-a-test-cpu")

FILES = {"registered/test_a.py": registered_source('register_cpu_ci(est_time=5, suite="unit-cpu")')}
RUN = "python run_suite.py --hw cpu --suite unit-cpu"
BOMB = """\
on: push
jobs:
  a:
    runs-on: x
    strategy:
      matrix:
        a: &v [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19]
        b: *v
        c: *v
        d: *v
        e: *v
        f: *v
        g: *v
    steps:
      - run: python run_suite.py --hw cpu --suite unit-cpu --auto-partition-size ${{ matrix.a }}
"""


def repo(tmp_path: Path, workflows: dict[str, str]) -> Path:
    root = make_repo(tmp_path / "repo", FILES)
    directory = root / ".github" / "workflows"
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in workflows.items():
        (directory / name).write_text(textwrap.dedent(text))
    return root


def notes(root: Path) -> list[str]:
    scan = scan_workflows(root, lambda _yml: None)
    return scan.errors + scan.notes


def test_the_aliased_matrix_of_the_issue_is_not_expanded_and_init_ends_at_once(tmp_path):
    root = repo(tmp_path, {"bomb.yml": BOMB})
    assert len(BOMB) < 520
    limit = 1 << 30  # 1 GiB of address space: the campaign saw 7.3 GB after 60 s

    def bounded() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    started = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "run_suite.py"),
            "init",
            "--root",
            str(root),
            "--output",
            "-",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=bounded,
        env={**os.environ, "CI_RUNNER_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 60
    assert (
        "workflow partly read: .github/workflows/bomb.yml: jobs.a.strategy.matrix: "
        "20 x 20 x 20 x 20 x 20 x 20 x 20 = 1,280,000,000 combinations, more than the 256 jobs "
        "GitHub runs from one matrix; not expanded"
    ) in proc.stdout + proc.stderr
    assert "--auto-partition-size depends on matrix.a" in proc.stdout + proc.stderr


def test_a_strategy_that_is_a_list_is_a_note_naming_file_and_key(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "cache"))
    workflow = f"on: push\njobs:\n  b:\n    runs-on: x\n    strategy: [1]\n    steps:\n      - run: {RUN}\n"  # fmt: skip
    root = repo(tmp_path, {"ci.yml": workflow})
    assert main(["init", "--root", str(root), "--output", "-"]) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    assert (
        "workflow partly read: .github/workflows/ci.yml: jobs.b.strategy must be a map, got a "
        "list; not read"
    ) in out.out + out.err


@pytest.mark.parametrize(
    ("text", "note"),
    [
        ("on: push\njobs: [1]\n", "ci.yml: jobs must be a map, got a list; not read"),
        ("on: push\njobs:\n  a: 5\n", "ci.yml: jobs.a must be a map, got a number; not read"),
        ("on: push\njobs:\n  a:\n    steps: {}\n", "ci.yml: jobs.a.steps must be a list, got a map"),
        ("on: push\njobs:\n  a:\n    steps: [5]\n", "ci.yml: jobs.a.steps[1] must be a map, got a number"),
        ("on: push\njobs:\n  a:\n    steps:\n      - run: [1]\n", "ci.yml: jobs.a.steps[1].run must be a string, got a list"),
        (f"on: push\nenv: [1]\njobs:\n  a:\n    steps:\n      - run: {RUN}\n", "ci.yml: env must be a map, got a list"),
        (f"on: push\nenv:\n  X: [1]\njobs:\n  a:\n    steps:\n      - run: {RUN}\n", "ci.yml: env.X must be a string, number or boolean, got a list"),
        (f"on: push\njobs:\n  a:\n    strategy: {{matrix: [1]}}\n    steps:\n      - run: {RUN}\n", "ci.yml: jobs.a.strategy.matrix must be a map, got a list"),
        (f"on: push\njobs:\n  a:\n    strategy: {{matrix: {{x: 5}}}}\n    steps:\n      - run: {RUN}\n", "ci.yml: jobs.a.strategy.matrix.x must be a list, got a number"),
        (f"on: push\njobs:\n  a:\n    strategy: {{matrix: {{include: 5}}}}\n    steps:\n      - run: {RUN}\n", "ci.yml: jobs.a.strategy.matrix.include must be a list, got a number"),
        (f"on: push\njobs:\n  a:\n    strategy: {{matrix: {{include: [5]}}}}\n    steps:\n      - run: {RUN}\n", "ci.yml: jobs.a.strategy.matrix.include[0] must be a map, got a number"),
        (f"on:\n  workflow_dispatch: {{inputs: [1]}}\njobs:\n  a:\n    steps:\n      - run: {RUN}\n", "ci.yml: on.workflow_dispatch.inputs must be a map, got a list"),
        ("[1, 2]\n", "ci.yml: a workflow must be a map, got a list"),
        ("&a [*a]\n", "ci.yml: a YAML alias refers to a node that contains it"),
    ],
)  # fmt: skip
def test_every_wrong_type_is_a_note_naming_the_file_and_key(tmp_path, text, note):
    root = repo(tmp_path, {"ci.yml": text})
    assert any(line.endswith(note) or note in line for line in notes(root)), notes(root)
    read_workflows(root)  # and init's reader ends without a traceback


def test_an_alias_bomb_and_a_huge_file_are_not_read(tmp_path):
    laughs = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    laughs += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    root = repo(
        tmp_path,
        {"laughs.yml": "\n".join(laughs) + "\n", "huge.yml": "x: " + "y" * MAX_BYTES + "\n"},
    )
    assert notes(root) == [
        f".github/workflows/huge.yml: {MAX_BYTES + 4:,} bytes, more than the {MAX_BYTES:,} a "
        "workflow is read up to",
        ".github/workflows/laughs.yml: its YAML aliases expand to more than 200,000 values; "
        "not read",
    ]


def called_by(name: str, target: str, matrix: str = "") -> str:
    strategy = f"    strategy: {{matrix: {{n: [{matrix}]}}}}\n" if matrix else ""
    return f"on: workflow_call\njobs:\n  call:\n{strategy}    uses: ./.github/workflows/{target}\n"


def test_reusable_workflow_depth_and_fan_out_are_bounded(tmp_path):
    chain = {f"w{i}.yml": called_by(f"w{i}", f"w{i + 1}.yml") for i in range(12)}
    chain["w0.yml"] = chain["w0.yml"].replace("on: workflow_call", "on: push")
    chain["w12.yml"] = f"on: workflow_call\njobs:\n  run:\n    steps:\n      - run: {RUN}\n"
    fan = {
        "fan.yml": f"on: workflow_call\njobs:\n  run:\n    steps:\n      - run: {RUN}\n",
        **{
            f"caller{i}.yml": called_by(
                f"c{i}", "fan.yml", ", ".join(map(str, range(200)))
            ).replace("on: workflow_call", "on: push")
            for i in range(2)
        },
    }
    root = repo(tmp_path, {**chain, **fan})
    found = notes(root)
    assert (
        ".github/workflows/w2.yml: reached through more than 10 levels of reusable workflows "
        "(w12.yml <- w11.yml <- w10.yml <- w9.yml <- w8.yml <- w7.yml <- w6.yml <- w5.yml <- "
        "w4.yml <- w3.yml <- w2.yml <- ...); its callers are not read"
    ) in found
    assert (
        ".github/workflows/fan.yml: called in more than 256 ways (callers and their matrix "
        "rows); the others are not read"
    ) in found


def test_a_large_workflow_is_read_in_linear_time(tmp_path):
    lines = ["on: push", "jobs:", "  a:", "    runs-on: x", "    steps:", "      - run: |"]
    lines += [f"          X{i}=1; {RUN}" for i in range(8000)]  # 0.45 MB, 8,000 calls
    root = repo(tmp_path, {"big.yml": "\n".join(lines) + "\n"})
    started = time.process_time()
    scan = scan_workflows(root, lambda _yml: None)
    assert time.process_time() - started < 10  # under 1 s; placing each call was quadratic
    assert [call.line for call in scan.invocations[:2]] == [7, 8]
    assert scan.invocations[-1].line == 8006


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("format('{3}', 'a')", "format() has no argument {3} (1 given)"),
        ("format()", "format() takes 1 to any number of argument(s), got 0"),
        ("contains('a')", "contains() takes 2 argument(s), got 1"),
        ("(" * 200 + "1" + ")" * 200, "an expression nested more than 50 deep"),
        ("'" + "a" * 30_000 + "'", "an expression of 30,002 characters, more than 20,000"),
        ("format('{0}{0}{0}{0}{0}{0}{0}{0}{0}{0}', format('{0}{0}{0}{0}{0}{0}{0}{0}{0}{0}', "
         "format('{0}{0}{0}{0}{0}{0}{0}{0}{0}{0}', format('{0}{0}{0}{0}{0}{0}{0}{0}{0}{0}', "
         "format('{0}{0}{0}{0}{0}{0}{0}{0}{0}{0}', format('{0}{0}{0}{0}{0}{0}{0}{0}{0}{0}', "
         "'xxxxxxxxxx')))))))", "a value of more than 1,000,000 characters"),
    ],
)  # fmt: skip
def test_hostile_expressions_are_one_error_each(expression, error):
    with pytest.raises(ExpressionError) as raised:
        evaluate(expression, {})
    assert str(raised.value) == error


def test_numbers_and_indexes_that_are_no_numbers_do_not_crash():
    assert evaluate("9" * 5000, {}) == float("inf")
    assert evaluate("fromJSON('[1,2]')[" + "9" * 400 + "]", {}) is None
    assert evaluate("fromJSON('[1,2]')[fromJSON('1e999')]", {}) is None
    assert evaluate("format('{{0}} {0}', 'a')", {}) == "{0} a"


# ---------------------------------------------------------------------------- property

PROPERTY = settings(
    max_examples=40,
    deadline=10_000,  # ms per example, generous on a loaded machine; the bomb took forever
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
KEYS = [
    "on", "jobs", "steps", "run", "strategy", "matrix", "include", "exclude", "env", "with",
    "uses", "runs-on", "timeout-minutes", "if", "needs", "inputs", "workflow_call", "default",
    "push", "shell", "defaults", "a", "b",
]  # fmt: skip
TEXTS = [
    f"{RUN} --auto-partition-size ${{{{ matrix.a }}}}",
    f"true || {RUN}",
    "python run_suite.py --hw ${{ inputs.hw }} --suite ${{ matrix.s }}",
    "${{ fromJSON('[1, 2, 3]') }}",
    "${{ format('{0}{0}', matrix.a) }}",
    "./.github/workflows/b.yml",
    "${{ false }}",
    "ubuntu-latest",
]
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats()
    | st.text(max_size=10)
    | st.sampled_from(TEXTS)
)


@st.composite
def workflows(draw) -> str:
    """A workflow-shaped document of random shapes and types; values drawn from a shared pool,
    so YAML writes repeated ones as anchors and aliases (a matrix of many aliased axes too)."""
    pool = draw(
        st.lists(
            st.recursive(
                SCALARS,
                lambda inner: (
                    st.lists(inner, max_size=4)
                    | st.dictionaries(
                        st.sampled_from(KEYS) | st.text(max_size=4), inner, max_size=4
                    )
                ),
                max_leaves=10,
            ),
            min_size=1,
            max_size=6,
        )
    )
    pick = st.sampled_from(pool)
    axis = draw(st.lists(st.integers(0, 9), min_size=1, max_size=draw(st.integers(1, 30))))
    matrix = {f"m{i}": axis for i in range(draw(st.integers(0, 9)))}  # one list, aliased
    matrix.update(draw(st.dictionaries(st.sampled_from(["include", "exclude", "a"]), pick)))
    step = {"run": draw(st.sampled_from(TEXTS) | pick), **draw(st.dictionaries(st.sampled_from(KEYS), pick, max_size=2))}  # fmt: skip
    job = {
        "runs-on": draw(pick),
        "strategy": draw(st.sampled_from([{"matrix": matrix}, matrix, [matrix], None])),
        "steps": draw(st.sampled_from([[step], [step, step], step, None])),
        **draw(st.dictionaries(st.sampled_from(KEYS), pick, max_size=3)),
    }
    document = {
        "on": draw(
            st.sampled_from(["push", "workflow_call", ["push"], {"workflow_call": draw(pick)}])
            | pick
        ),
        "jobs": draw(st.sampled_from([{"a": job}, {"a": job, "b": job}, [job]]) | pick),
        **draw(st.dictionaries(st.sampled_from(KEYS), pick, max_size=2)),
    }
    return yaml.safe_dump(document, allow_unicode=True)


@PROPERTY
@given(first=workflows(), second=workflows())
def test_random_workflows_into_init_and_the_dispatch_check(tmp_path_factory, capsys, first, second):
    base = tmp_path_factory.mktemp("random")
    root = repo(base, {"a.yml": first, "b.yml": second})
    os.environ["CI_RUNNER_CACHE_DIR"] = str(base / "cache")
    try:
        assert main(["init", "--root", str(root), "--output", "-"]) == 0
        assert dispatch_main(["--root", str(root)]) in (0, 1, 2)
    finally:
        del os.environ["CI_RUNNER_CACHE_DIR"]
    assert "Traceback" not in capsys.readouterr().err


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
