"""``python -m ci_runner.maintenance COMMAND`` on hostile inputs: FIFOs, nesting too deep for a
recursive parser, XML that is no JUnit or whose counts are not numbers, an entity bomb, a
package outside the root. Each ends in exit 2 (or the lint's 1) with a message naming the file,
never a hang or a traceback."""

import json
import os
import sys
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cpu_ci
from ci_runner.maintenance.__main__ import main as maintenance

sys.path.insert(0, str(Path(__file__).parent))
from testing.tree_builder import catalog_toml, suite_toml, write_tree

register_cpu_ci(est_time=4, suite="base-a-test-cpu")

DEEP_JSON = "[" * 100_000 + "]" * 100_000  # json.loads recurses once per level
BOMB = (
    '<?xml version="1.0"?><!DOCTYPE t [<!ENTITY a "aaaaaaaaaa">'
    + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(8))
    + "]><testsuites><testsuite name='&i;'/></testsuites>"
)


def merge(tmp_path: Path, report: str | None, plan: str = '{"files": [{"path": "a.py"}]}'):
    (tmp_path / "plan.json").write_text(plan)
    (tmp_path / "reports").mkdir(exist_ok=True)
    if report is not None:
        (tmp_path / "reports" / "r.xml").write_text(report)
    argv = ["merge-junit", "--plan", str(tmp_path / "plan.json")]
    return maintenance([*argv, "--junit-dir", str(tmp_path / "reports")])


def err_line(capsys) -> str:
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_merge_a_plan_nested_too_deeply(tmp_path, capsys):
    assert merge(tmp_path, None, plan=DEEP_JSON) == 2
    assert err_line(capsys).endswith("plan.json: not a dry-run plan (nested too deeply)")


@pytest.mark.parametrize(
    ("report", "message"),
    [
        ("<foo/>", "r.xml: not a readable JUnit XML file (Invalid format.)"),
        ("<testsuites><testsuite", "r.xml: not a readable JUnit XML file (unclosed token"),
        (BOMB, "r.xml: not a readable JUnit XML file (limit on input amplification factor"),
    ],
)
def test_merge_a_report_that_is_no_junit(tmp_path, capsys, report, message):
    assert merge(tmp_path, report) == 2
    assert message in err_line(capsys)


def test_merge_counts_that_are_not_numbers_make_the_outcome_unreadable(tmp_path, capsys):
    report = (
        '<testsuites><testsuite name="a.py" tests="x" errors="lots" failures="-" time="n/a">'
        '<testcase name="t"/></testsuite></testsuites>'
    )
    assert merge(tmp_path, report) == 1  # never counted as passed
    out, err = capsys.readouterr()
    assert (
        "  a.py: unreadable (shard ?, elapsed unknown): tests='x', errors='lots', failures='-' "
        "is not a count: its outcome cannot be told"
    ) in out
    assert err.strip().endswith(
        "r.xml: testsuite 'a.py': time 'n/a' is not a number of seconds from 0 to 604800; "
        "shown as unknown"
    )


def test_merge_a_report_that_is_a_fifo(tmp_path, capsys):
    (tmp_path / "reports").mkdir()
    os.mkfifo(tmp_path / "reports" / "shard.xml")
    assert merge(tmp_path, None) == 2
    assert "shard.xml: cannot read it (is a FIFO (named pipe), not a regular file)" in err_line(
        capsys
    )


def test_update_est_time_rows_nested_too_deeply_or_not_objects(tmp_path, capsys):
    (tmp_path / "deep.jsonl").write_text(DEEP_JSON + "\n")
    assert maintenance(["update-est-time", "--timings", str(tmp_path / "deep.jsonl")]) == 2
    assert "deep.jsonl:1: expected a JSON object with path, suite, elapsed, status (RecursionError" in err_line(capsys)  # fmt: skip
    (tmp_path / "list.jsonl").write_text(json.dumps([1, 2]) + "\n")
    assert maintenance(["update-est-time", "--timings", str(tmp_path / "list.jsonl")]) == 2
    assert "list.jsonl:1: expected a JSON object with path, suite, elapsed, status" in err_line(
        capsys
    )


def test_update_est_time_junit_with_a_path_out_of_the_repository(tmp_path, capsys):
    report = (
        '<testsuites><testsuite name="x" tests="1"><properties>'
        '<property name="path" value="../../etc/passwd"/><property name="suite" value="s"/>'
        '<property name="elapsed" value="5"/></properties></testsuite></testsuites>'
    )
    (tmp_path / "r.xml").write_text(report)
    assert maintenance(["update-est-time", "--timings", str(tmp_path / "r.xml")]) == 2
    assert "path '../../etc/passwd' is not a path inside the repository" in err_line(capsys)


def workflow_repo(tmp_path: Path, workflow_name: str, text: str | None) -> Path:
    files = {} if text is None else {f".github/workflows/{workflow_name}": text}
    root = write_tree(tmp_path, catalog_toml(suite_toml("s", "cpu")), files)
    (root / ".github" / "workflows").mkdir(parents=True, exist_ok=True)
    return root


def test_dispatch_check_a_workflow_nested_too_deeply(tmp_path, capsys):
    root = workflow_repo(tmp_path, "deep.yml", "a: " + DEEP_JSON + "\n")
    assert maintenance(["check-workflow-dispatch", "--root", str(root)]) == 2
    assert err_line(capsys).endswith("deep.yml: invalid YAML (nested too deeply to read)")


def test_dispatch_check_an_alias_bomb_is_refused_before_it_is_expanded(tmp_path, capsys):
    anchors = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    anchors += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    workflow = "\n".join(
        [*anchors, "on: push", "env:", "  BOMB: *a8", "jobs:", "  a:", "    runs-on: x",
         "    name: *a8", "    steps:", "      - name: *a8",
         "        run: python run_suite.py --hw cpu --suite s"]
    )  # fmt: skip
    root = workflow_repo(tmp_path, "bomb.yml", workflow + "\n")  # 10**9 strings if printed
    assert maintenance(["check-workflow-dispatch", "--root", str(root)]) == 2
    assert err_line(capsys).endswith(
        "bomb.yml: its YAML aliases expand to more than 200,000 values; not read"
    )


def test_dispatch_check_a_workflow_that_is_a_fifo(tmp_path, capsys):
    root = workflow_repo(tmp_path, "x.yml", None)
    os.mkfifo(root / ".github" / "workflows" / "ci.yml")
    assert maintenance(["check-workflow-dispatch", "--root", str(root)]) == 2
    assert err_line(capsys).endswith("ci.yml: cannot read (is a FIFO (named pipe), not a regular file)")  # fmt: skip


def test_package_lint_reports_a_fifo_and_refuses_a_package_outside_the_root(tmp_path, capsys):
    root = write_tree(
        tmp_path / "repo", catalog_toml(suite_toml("s", "cpu")), {"pkg/__init__.py": ""}
    )
    (root / "registered").mkdir()
    os.mkfifo(root / "pkg" / "mod.py")
    assert maintenance(["check-no-registered-tests-in-package", "--root", str(root)]) == 1
    assert "pkg/mod.py:1:1: is a FIFO (named pipe), not a regular file" in capsys.readouterr().err
    (tmp_path / "outside").mkdir()
    argv = ["check-no-registered-tests-in-package", "--root", str(root), "--package", "../outside"]
    assert maintenance(argv) == 2
    assert "--package ../outside: not a directory under" in err_line(capsys)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
