"""tools/impact_replay (the mutation replay's lab harness): its pure parts. The mutants it
plants, how a selection is judged against the whole suite's failures, and the summary row."""

import sys
import textwrap
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cpu_ci
from ci_runner.impact.blocks import MODULE
from ci_runner.impact.record_format import CaseRecord, FileRecord
from tools.impact_replay_floor import floor_keys, floor_share, mutated_block
from tools.impact_replay_judge import (
    case_file,
    cases_of,
    catches,
    collected_ids,
    failures_of,
    judge,
    junit_key,
    table_row,
)
from tools.impact_replay_mutants import apply, mutants_of, touched_lines

register_cpu_ci(est_time=2, suite="base-a-test-cpu")

SOURCE = textwrap.dedent(
    '''\
    def add(a, b):
        """Adds."""
        if a > 0 and not b:
            return a + 1
        return a - b


    def untouched(x):
        return x * 2
    '''
)


def test_mutants_only_on_run_lines_of_touched_functions():
    mutants = mutants_of(SOURCE, "m.py", touched={5}, executed={3, 4, 5, 9})
    assert {m.line for m in mutants} == {3, 4, 5}
    assert {m.operator for m in mutants} >= {"> to >=", "and to or", "drop not", "+ to -", "- to +",
                                             "return None", "0 to 1", "1 to 2"}  # fmt: skip
    for mutant in mutants:
        assert mutant.before == SOURCE.splitlines()[mutant.line - 1]
        assert mutant.after != mutant.before
        compile(SOURCE.replace(mutant.before, mutant.after), "m.py", "exec")
    assert not mutants_of(SOURCE, "m.py", touched={5}, executed={9})
    assert not mutants_of("def broken(:\n", "m.py", touched={1}, executed={1})


def test_apply_changes_one_line_and_gives_the_original(tmp_path):
    (tmp_path / "m.py").write_text(SOURCE)
    mutant = next(m for m in mutants_of(SOURCE, "m.py", {5}, {5}) if m.operator == "- to +")
    original = apply(tmp_path, mutant)
    assert original == SOURCE
    assert (tmp_path / "m.py").read_text().splitlines()[4] == "    return a + b"


def test_touched_lines_of_a_zero_context_diff():
    diff = "@@ -3,0 +4,2 @@\n+x\n+y\n@@ -9 +11 @@\n-a\n+b\n@@ -20,3 +22,0 @@\n-c\n"
    assert touched_lines(diff) == {4, 5, 11, 22}


def test_junit_keys_and_files():
    tests = ["tests/test_x.py"]
    assert junit_key("tests/test_x.py::TestA::test_b[1-2]") == ("tests.test_x.TestA", "test_b[1-2]")
    assert case_file(("tests.test_x.TestA", "test_b"), "", tests) == "tests/test_x.py"
    assert case_file(("", "tests.test_x"), "", tests) == "tests/test_x.py"  # collection error
    assert case_file(("other.mod", "t"), "", tests) is None


def test_failures_of_a_junit_file(tmp_path):
    junit = tmp_path / "j.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_x" name="test_ok" time="0.1"/>'
        '<testcase classname="tests.test_x" name="test_bad" time="0.2"><failure/></testcase>'
        '<testcase classname="" name="tests.test_y" time="0"><error/></testcase>'
        '<testcase classname="tests.test_z" name="test_was_failing" time="0"><failure/></testcase>'
        "</testsuite></testsuites>"
    )
    tests = ["tests/test_x.py", "tests/test_y.py", "tests/test_z.py"]
    failures = failures_of(cases_of(junit), tests, {"tests/test_x.py", "tests/test_y.py"})
    assert failures == [["tests/test_y.py", "", "tests.test_y"],
                        ["tests/test_x.py", "tests.test_x", "test_bad"]]  # fmt: skip
    assert cases_of(tmp_path / "missing.xml") == {}


def test_collected_ids_of_testmon():
    files = ["t/test_a.py", "t/test_b.py"]
    output = (
        "t/test_a.py::test_1\nt/test_a.py::TestX::test_2[a::b c]\nother.py::test_9\n"
        "ERROR t/test_b.py - ImportError\n\n2/9 tests collected (7 deselected) in 1.00s\n"
    )
    assert collected_ids(output, 1, files) == [
        "t/test_a.py::test_1", "t/test_a.py::TestX::test_2[a::b c]", "t/test_b.py"
    ]  # fmt: skip
    assert collected_ids("no tests ran\n", 5, files) == []
    assert collected_ids("ImportError while loading conftest\n", 4, files) == files


BASE = {
    "tests": ["t/test_a.py", "t/test_b.py"],
    "case_time": [
        ["t.test_a", "test_1", 1.0, "t/test_a.py"],
        ["t.test_a", "test_2", 3.0, "t/test_a.py"],
        ["t.test_b", "test_3", 6.0, "t/test_b.py"],
    ],
    "file_wall": {"t/test_a.py": 5.0, "t/test_b.py": 5.0},
}


def row(failures, testmon=()):
    return {"failures": failures, "testmon_selected": list(testmon)}


def test_judge_a_whole_file_a_case_and_a_miss():
    failing = row([["t/test_a.py", "t.test_a", "test_2"]], ["t/test_a.py::test_1"])
    whole = judge(failing, BASE, {"t/test_a.py": []})
    assert (whole["killed"], whole["ours_kill"], whole["ours_miss"]) == (True, True, False)
    assert whole["ours_share"] == 0.4 and whole["ours_wall_share"] == 0.5
    assert (whole["testmon_miss"], whole["testmon_share"]) == (True, 0.1)
    one_case = judge(failing, BASE, {"t/test_a.py": ["t/test_a.py::test_1"]})
    assert one_case["ours_miss"] and one_case["ours_share"] == 0.1
    assert one_case["ours_partial"] == 1 and one_case["ours_cases"] == 1
    nothing = judge(failing, BASE, {})
    assert nothing["ours_miss"] and nothing["ours_share"] == 0.0
    survived = judge(row([]), BASE, {})
    assert not survived["killed"] and not survived["ours_miss"] and not survived["testmon_miss"]


def test_a_file_level_failure_is_caught_by_any_case_of_its_file():
    collection_error = [["t/test_b.py", "", "t.test_b"]]
    assert catches(collection_error, set(), {"t/test_b.py": {("t.test_b", "x")}}, set())
    assert not catches(collection_error, set(), {"t/test_a.py": {("t.test_a", "test_1")}}, set())
    testmon = judge(row(collection_error, ["t/test_b.py"]), BASE, {})
    assert testmon["testmon_kill"] and testmon["ours_miss"]


def test_table_row():
    rows = [
        {"commit": "a", "killed": True, "ours_miss": False, "testmon_miss": True,
         "ours_share": 0.1, "testmon_share": 0.0, "ours_partial": 1, "ours_files": 2},
        {"commit": "b", "killed": False, "ours_miss": False, "testmon_miss": False,
         "ours_share": 0.3, "testmon_share": 0.2, "ours_partial": 0, "ours_files": 1},
    ]  # fmt: skip
    assert table_row("x", rows) == (
        "| x | 2 | 2 | 1 | 0 / 1 | 20.0% / 10.0% | 20.0% / 10.0% | 1 of 3 |"
    )


def test_the_floor_is_the_cases_that_ran_the_mutated_function_or_opened_its_file():
    source = "X = 1\n\n\ndef f():\n    return 2\n\n\ndef g():\n    return 3\n"
    assert mutated_block(source, 5) == "f" and mutated_block(source, 1) == MODULE
    records = {
        "t/test_a.py": FileRecord(
            test="t/test_a.py", commit=None, status="passed", code={}, sources={},
            opened={}, listed=(), imported=(), kernels=(), unbounded=(), problems=(),
            file_code={"pkg/m.py": (MODULE,)}, file_opened=(),
            cases={
                "t/test_a.py::test_1": CaseRecord(1.0, {"pkg/m.py": ("f",)}),
                "t/test_a.py::test_2": CaseRecord(3.0, {"pkg/m.py": ("g",)}),
            },
        ),
        "t/test_b.py": FileRecord(
            test="t/test_b.py", commit=None, status="passed", code={}, sources={},
            opened={}, listed=(), imported=(), kernels=(), unbounded=(), problems=(),
            file_opened=("pkg/m.py",), cases={"t/test_b.py::test_3": CaseRecord(6.0)},
        ),
    }  # fmt: skip
    files = {(c, n): f for c, n, _, f in BASE["case_time"]}
    assert floor_keys(records, files, "pkg/m.py", "f") == {("t.test_a", "test_1"),
                                                            ("t.test_b", "test_3")}  # fmt: skip
    assert floor_keys(records, files, "pkg/other.py", "f") == set()
    share = floor_share({"file": "pkg/m.py", "line": 9}, BASE, records, source)
    assert share == 0.9  # g: test_2 ran it (3 s), test_b opened the file outside its case (6 s)
    module = floor_share({"file": "pkg/m.py", "line": 1}, BASE, records, source)
    assert module == 1.0  # test_a's module level ran outside its cases: all of test_a


def test_rejudge_names_a_missing_results_file(tmp_path, capsys):
    from tools.impact_replay import main

    sys.argv = ["impact_replay", "rejudge", str(tmp_path), "boltons"]
    assert main() == 2
    assert f"{Path(tmp_path) / 'boltons.jsonl'}: no such file" in capsys.readouterr().err


def test_floor_names_a_missing_results_file(tmp_path, capsys):
    from tools.impact_replay import main

    sys.argv = ["impact_replay", "floor", str(tmp_path), "cachetools"]
    assert main() == 2
    assert f"{Path(tmp_path) / 'cachetools.jsonl'}: no such file" in capsys.readouterr().err


def test_rerecord_names_a_missing_results_file(tmp_path, capsys):
    from tools.impact_replay import main

    sys.argv = ["impact_replay", "rerecord", str(tmp_path), "boltons", "--to", str(tmp_path / "x")]
    assert main() == 2
    assert f"{Path(tmp_path) / 'boltons.jsonl'}: no such file" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
