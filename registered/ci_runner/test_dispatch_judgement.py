"""check-workflow-dispatch counts a suite as run only where the workflow is proven to run it:
not behind ``true ||``, in a job or step whose ``if:`` is always false, after ``exit``, in a
comment, heredoc or echo; a call that runs only on a condition the check cannot decide (``cmd
||``, a shell ``if``) is not proof either, and the error names each call and why. A property
test feeds random shell scripts to the reader: never a traceback."""

import sys
import textwrap
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_runner import register_cpu_ci
from ci_runner.maintenance.shell_flow import MAY, NEVER, RUNS, ShellSyntaxError, commands
from ci_runner.maintenance.workflow_coverage import Context, scan_script
from ci_runner.maintenance.workflow_coverage import main as dispatch_main

sys.path.insert(0, str(Path(__file__).parent))
from testing.tree_builder import catalog_toml, suite_toml, write_tree

register_cpu_ci(est_time=6, suite="base-a-test-cpu")

RUN = "python run_suite.py --hw cpu --suite s"
NOT_RUN = (
    "error: suite 's' (hw=cpu) is in the catalog but no workflow is proven to run it (its "
    "calls: {calls}), so its files may never run: add a job running `python run_suite.py --hw "
    "cpu --suite s`, or remove the suite from [tool.ci-runner]"
)


def check(tmp_path: Path, capsys, workflows: dict[str, str]) -> tuple[int, str]:
    files = {f".github/workflows/{name}": textwrap.dedent(text) for name, text in workflows.items()}
    root = write_tree(tmp_path, catalog_toml(suite_toml("s", "cpu")), files)
    code = dispatch_main(["--root", str(root)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def step(script: str, step_keys: str = "", job_keys: str = "") -> str:
    run = textwrap.indent(textwrap.dedent(script), " " * 10)
    return (
        f"on: push\njobs:\n  t:\n    runs-on: x\n{job_keys}    steps:\n"
        f"      - {step_keys}run: |\n{run}"
    )


@pytest.mark.parametrize(
    ("script", "why"),
    [
        (f"true || {RUN}\n", "never runs: after a command that always succeeds, and `||`"),
        (f"false && {RUN}\n", "never runs: after a command that always fails, and `&&`"),
        (f"exit 0\n{RUN}\n", "never runs: after the `exit` on line 1"),
        (f"pip install x || {RUN}\n", "may not run: it runs only if the command before `||` fails"),
        (f'[ -n "$X" ] && {RUN}\n', "may not run: it runs only if the test before `&&` holds"),
        (f'if [ -n "$X" ]; then\n  {RUN}\nfi\n', "may not run: inside a shell if, on a condition not decided here"),
        (f"if false; then\n  {RUN}\nfi\n", "never runs: in the body of a shell if never entered"),
        (f"[ -z \"$X\" ] && exit 0\n{RUN}\n", "may not run: the script may exit before it (line 1)"),
        (f"f() {{\n  {RUN}\n}}\n", "may not run: inside function f, which runs only where it is called"),
    ],
)  # fmt: skip
def test_a_call_not_proven_to_run_does_not_count(tmp_path, capsys, script, why):
    code, out = check(tmp_path, capsys, {"ci.yml": step(script)})
    assert code == 1
    assert NOT_RUN.format(calls=f".github/workflows/ci.yml job 't' step 1 {why}") in out


@pytest.mark.parametrize(
    ("keys", "why"),
    [
        (("", "    if: false\n"), "its `if: false` is always false"),
        (("", "    if: ${{ false }}\n"), "its `if: ${{ false }}` is always false"),
        (("if: ${{ 1 == 2 }}\n        ", ""), "its `if: ${{ 1 == 2 }}` is always false"),
        (("if: 0\n        ", ""), "its `if: 0` is always false"),
    ],
)
def test_a_job_or_step_whose_if_is_always_false_never_runs(tmp_path, capsys, keys, why):
    code, out = check(tmp_path, capsys, {"ci.yml": step(RUN + "\n", *keys)})
    assert code == 1
    calls = f".github/workflows/ci.yml job 't' step 1 never runs: {why}"
    assert NOT_RUN.format(calls=calls) in out


@pytest.mark.parametrize(
    "script",
    [
        f"# {RUN}\n",
        f"echo {RUN}\n",
        f"cat <<EOF\n{RUN}\nEOF\n",
        f"cat > run.sh <<'EOF'\n{RUN}\nEOF\n",
    ],
)
def test_a_comment_an_argument_or_heredoc_data_is_no_call(tmp_path, capsys, script):
    code, out = check(tmp_path, capsys, {"ci.yml": step(script)})
    assert code == 1
    assert "no workflow runs it, so its files never run" in out


@pytest.mark.parametrize(
    "script",
    [
        f"{RUN}\n",
        f"cd test && {RUN}\n",
        f"cd x || exit 1\n{RUN}\n",
        f"{RUN} || true\n",
        f"set -e\n( exit 0 )\n{RUN}\n",
        f"bash <<'EOF'\n{RUN}\nEOF\n",
        f"bash -c '{RUN}'\n",
        f'out="$({RUN})"\n',
        f"if true; then\n  {RUN}\nfi\n",
        f"if false; then\n  echo no\nelse\n  {RUN}\nfi\n",
        f"{RUN} 2>&1 | tee log.txt\n",
        f"exec > >(tee log) 2>&1\n{RUN}\n",
    ],
)
def test_a_call_proven_to_run_counts(tmp_path, capsys, script):
    code, out = check(tmp_path, capsys, {"ci.yml": step(script)})
    assert code == 0, out


def test_a_job_that_needs_one_that_never_runs_never_runs(tmp_path, capsys):
    workflow = f"""\
        on: push
        jobs:
          gate:
            if: false
            runs-on: x
            steps: [{{run: echo}}]
          t:
            needs: gate
            runs-on: x
            steps:
              - run: {RUN}
        """
    code, out = check(tmp_path, capsys, {"ci.yml": workflow})
    assert code == 1
    why = "never runs: it needs job 'gate', which never runs"
    assert NOT_RUN.format(calls=f".github/workflows/ci.yml job 't' step 1 {why}") in out
    always = workflow.replace("needs: gate", "needs: gate\n            if: always()")
    assert check(tmp_path / "always", capsys, {"ci.yml": always})[0] == 0


def test_a_reusable_workflow_runs_only_when_a_running_job_calls_it(tmp_path, capsys):
    called = f"on: workflow_call\njobs:\n  t:\n    runs-on: x\n    steps:\n      - run: {RUN}\n"
    caller = "on: push\njobs:\n  call:\n    if: false\n    uses: ./.github/workflows/called.yml\n"
    _, out = check(tmp_path, capsys, {"called.yml": called, "caller.yml": caller})
    why = (
        "never runs: called by .github/workflows/caller.yml job 'call', which never runs: its "
        "`if: false` is always false"
    )
    assert NOT_RUN.format(calls=f".github/workflows/called.yml job 't' step 1 {why}") in out
    live = caller.replace("    if: false\n", "")
    assert check(tmp_path / "live", capsys, {"called.yml": called, "caller.yml": live})[0] == 0
    alone = check(tmp_path / "alone", capsys, {"called.yml": called})
    why = (
        "may not run: no workflow of this repository calls this reusable workflow (a caller in "
        "another repository cannot be seen)"
    )
    assert NOT_RUN.format(calls=f".github/workflows/called.yml job 't' step 1 {why}") in alone[1]


def test_a_step_in_another_shell_is_not_proof(tmp_path, capsys):
    _, out = check(tmp_path, capsys, {"ci.yml": step(RUN + "\n", "shell: python\n        ")})
    why = "may not run: the step runs in `shell: python`, which this check does not read"
    assert NOT_RUN.format(calls=f".github/workflows/ci.yml job 't' step 1 {why}") in out


def test_a_script_that_is_no_shell_is_one_error(tmp_path, capsys):
    code, out = check(tmp_path, capsys, {"ci.yml": step(f"echo 'unclosed\n{RUN}\n")})
    assert code == 1
    assert (
        "error: .github/workflows/ci.yml job 't' step 1: cannot read the script as shell (an "
        "unclosed ' quote)"
    ) in out


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.lists(
        st.sampled_from(
            ["true", "false", "exit 0", "if", "then", "else", "fi", "case", "in", "esac",
             "while", "do", "done", "for", "f()", "{", "}", "(", ")", "&&", "||", ";", ";;",
             "|", "&", "\n", "#", "'", '"', "`", "$(", "<<EOF", "EOF", "\\\n", "echo", RUN,
             "bash -c", "2>&1", "> x", "!", "[", "]", "${{ matrix.s }}", "${{ env.S }}",
             "__ci_runner_expression0_7__", "$S", "${S}", "--suite", "$(" * 400]
        ),
        max_size=25,
    )
)  # fmt: skip
def test_any_script_reads_as_verdicts_or_one_error(tmp_path, parts):
    script = " ".join(parts)
    try:
        found = commands(script)
    except ShellSyntaxError:
        found = []
    assert all(command.verdict.runs in (RUNS, MAY, NEVER) for command in found)
    assert all(command.verdict.why for command in found if command.verdict.runs != RUNS)
    context = Context(env={"S": "s"}, matrix={"s": ("s", "t")})
    invocations, problems = scan_script(script, context, "ci.yml job 't' step 1", tmp_path)
    assert all(inv.verdict.runs in (RUNS, MAY, NEVER) for inv in invocations)
    assert all(problem.startswith("ci.yml job 't' step 1") for problem in problems)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
