"""The ``sys.monitoring`` recorder (``ci_runner.execution.executed_code``) notes, per context, the
repository code a process runs: run for real in a Python >= 3.12 process (CI's interpreter may
be older; ``monitoring_python`` finds one), on generated modules and schedules of cases.

What it promises (docs/change-impact.md, "What a record holds"): every function a case runs is
noted under that case or under the file's context ("", what every case shares), and nothing a
case did not run (or have running) is noted under it.
"""

import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))

from monitoring_python import NONE_FOUND, monitoring_python, run_monitored

from ci_runner import register_cpu_ci
from ci_runner.execution.executed_code import code_lines

register_cpu_ci(est_time=25, suite="base-a-test-cpu")

if monitoring_python() is None:
    pytest.skip(NONE_FOUND, allow_module_level=True)

FUNCTIONS = 6
GENERATORS = 2
MODULE = "".join(f"def f{i}():\n    return {i}\n\n" for i in range(FUNCTIONS)) + "".join(
    f"def g{i}():\n    while True:\n        yield {i}\n\n" for i in range(GENERATORS)
)

# Runs a schedule: [[context, [call, ...]], ...]; a call is "f3" (call f3), "g1+" (start a
# generator of g1) or "g1>" (resume the last one started). Contexts switch as the case-context
# plugin switches them: restarting when a case is left. Prints {context: [qualname, ...]}.
DRIVER = """
import json, sys
from ci_runner.execution.executed_code import ExecutedCode
root, schedule = sys.argv[1], json.loads(sys.argv[2])
recorder = ExecutedCode(root, "")
assert recorder.start() == ""
sys.path.insert(0, root)
import mod
generators, before = {}, ""
for context, calls in schedule:
    recorder.switch(context, before not in ("", context))
    before = context
    for call in calls:
        if call.endswith("+"):
            generators[call[:-1]] = getattr(mod, call[:-1])()
            next(generators[call[:-1]])
        elif call.endswith(">"):
            next(generators[call[:-1]])
        else:
            getattr(mod, call)()
print(json.dumps({c: sorted(x.co_qualname for x in s.values()) for c, s in recorder.by_context.items()}))
"""


def run_schedule(tmp_path: Path, schedule: list) -> dict[str, set[str]]:
    root = tmp_path / "repo"
    root.mkdir(exist_ok=True)
    (root / "mod.py").write_text(MODULE)
    out = run_monitored(DRIVER, str(root), json.dumps(schedule), cwd=tmp_path)
    return {context: set(names) for context, names in json.loads(out).items()}


def called(calls: list[str]) -> set[str]:
    return {call.rstrip("+>") for call in calls}


def test_each_case_notes_what_it_ran_and_only_that(tmp_path):
    seen = run_schedule(
        tmp_path,
        [["", ["f0"]], ["a", ["f1", "f2"]], ["", []], ["b", ["f1"]], ["c", ["f0", "f3"]]],
    )
    assert seen[""] == {"<module>", "f0"}
    assert seen["a"] == {"f1", "f2"}
    assert seen["b"] == {"f1"}  # ran in a before: re-armed when a ended
    assert seen["c"] == {"f0", "f3"}  # b was left for c directly: everything re-armed


def test_a_generator_resumed_in_a_later_case_is_noted_there(tmp_path):
    seen = run_schedule(tmp_path, [["a", ["g0+"]], ["", []], ["b", ["g0>"]]])
    assert seen["a"] == {"g0"} and seen["b"] == {"g0"}


def test_code_run_before_the_first_case_is_the_file_s(tmp_path):
    """Code the file's context ran is every case's: the first case entered from it does not
    note it again (each case's code is read with the file's)."""
    seen = run_schedule(tmp_path, [["", ["f0"]], ["a", ["f0", "f1"]]])
    assert seen["a"] == {"f1"} and "f0" in seen[""]


CALLS = st.sampled_from(
    [f"f{i}" for i in range(FUNCTIONS)] + [f"g{i}{how}" for i in range(GENERATORS) for how in "+>"]
)


@st.composite
def schedules(draw) -> list:
    """Steps of a file: the file's context and uniquely named cases, in any order."""
    steps = draw(st.lists(st.tuples(st.booleans(), st.lists(CALLS, max_size=5)), max_size=8))
    schedule, started = [], set()
    for index, (is_case, calls) in enumerate(steps):
        kept = []
        for call in calls:  # a generator is resumed only once started
            if call.endswith(">") and call[:-1] not in started:
                continue
            started.add(call[:-1]) if call.endswith("+") else None
            kept.append(call)
        schedule.append([f"case{index}" if is_case else "", kept])
    return schedule


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(schedule=schedules())
def test_every_function_a_case_runs_is_noted_for_it_and_nothing_else(tmp_path, schedule):
    seen = run_schedule(tmp_path, schedule)
    file_level = seen.get("", set())
    for context, calls in schedule:
        if context:
            assert called(calls) <= seen.get(context, set()) | file_level, (context, seen)
            assert seen.get(context, set()) <= called(calls), (context, seen)


FRAMES = """
import json, sys, threading
from ci_runner.execution.executed_code import ExecutedCode
root = sys.argv[1]
recorder = ExecutedCode(root, "")
assert recorder.start() == ""
sys.path.insert(0, root)
import mod
recorder.switch("a", False)
mod.across(lambda: recorder.switch("b", True))  # a loop of the repository that runs the cases
worker = threading.Thread(target=mod.f1)
worker.start()
worker.join()
recorder.switch("", True)
print(json.dumps({c: sorted(x.co_qualname for x in s.values()) for c, s in recorder.by_context.items()}))
"""


def test_a_frame_running_when_the_case_changes_and_other_threads_count_for_it(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "mod.py").write_text(MODULE + "def across(switch):\n    switch()\n    return f0()\n")
    seen = json.loads(run_monitored(FRAMES, str(root), cwd=tmp_path))
    assert seen["a"] == ["across"]
    assert seen["b"] == ["across", "f0", "f1"]


TAKEN = """
import sys
from ci_runner.execution.executed_code import ExecutedCode
for tool in range(6):
    if tool != 4:
        sys.monitoring.use_tool_id(tool, "another tool")
recorder = ExecutedCode(sys.argv[1], "")
print(recorder.start())
print(sys.monitoring.get_tool(4))  # what it took, it gave back
"""


def test_without_two_free_tool_ids_it_says_so_and_takes_none(tmp_path):
    out = run_monitored(TAKEN, str(tmp_path), cwd=tmp_path).splitlines()
    assert out == ["no two sys.monitoring tool ids are free to record with", "None"]


ITSELF = """
import json, sys
from ci_runner.execution import record_child
from ci_runner.execution.executed_code import ExecutedCode
recorder = ExecutedCode(sys.argv[1], "")
assert recorder.start() == ""
recorder.switch("a", False)
record_child.case_nonce("0" * 16)
recorder.switch("", True)
print(json.dumps(sorted({path for path, _ in recorder.table()["code"]})))
"""


def test_the_recorder_does_not_record_itself():
    """Its functions run in every process (at start, at each switch, at exit), and in this
    repository they are under the root: they are no code of the test's."""
    from monitoring_python import REPO

    paths = json.loads(run_monitored(ITSELF, str(REPO), cwd=REPO))
    assert not [p for p in paths if p.endswith(("executed_code.py", "record_child.py"))], paths


RELATIVE = """
import json, os, sys
from ci_runner.execution.executed_code import ExecutedCode
recorder = ExecutedCode(os.getcwd(), "")
assert recorder.start() == ""
for name in ("pkg/m.py", "zmq/backend/cython/_zmq.py", os.path.join(os.getcwd(), "gone.py")):
    namespace = {}
    exec(compile("def f():\\n    return 1\\n", name, "exec"), namespace)
    namespace["f"]()
print(json.dumps(sorted({path for path, _ in recorder.table()["code"]})))
"""


def test_a_relative_name_counts_only_where_a_file_of_the_tree_has_it(tmp_path):
    """``compile(text, "pkg/m.py", ...)`` of a file there is the tree's code; a relative name
    with no file behind it (a compiled module's: pyzmq's Cython ``_zmq.py`` made every record
    of SGLang's CPU suite unreadable) is not; an absolute one under the root always is (a file
    the test removed leaves its record with a problem)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text("def f():\n    return 1\n")
    paths = json.loads(run_monitored(RELATIVE, cwd=tmp_path))
    assert paths == sorted([str(tmp_path / "gone.py"), str(tmp_path / "pkg" / "m.py")])


TWINS = """
import json, os, sys
sys.path.insert(0, os.getcwd())
from ci_runner.execution.executed_code import ExecutedCode
recorder = ExecutedCode(os.getcwd(), "")
assert recorder.start() == ""
import a.m, b.m
recorder.switch("case", False)
a.m.f(), b.m.f()
table = recorder.table()
print(json.dumps({c: sorted(table["code"][i][0] for i in ids) for c, ids in table["contexts"].items()}))
"""


def test_the_same_code_in_two_files_is_noted_for_each(tmp_path):
    """Code objects of equal text compare equal whatever their file: two empty ``__init__.py``
    files, two equal functions on the same line. Each file is noted all the same."""
    for package in ("a", "b"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
        (tmp_path / package / "m.py").write_text("def f():\n    return 1\n")
    seen = json.loads(run_monitored(TWINS, cwd=tmp_path))
    files = [str(tmp_path / p) for p in ("a/__init__.py", "a/m.py", "b/__init__.py", "b/m.py")]
    assert seen[""] == files
    assert seen["case"] == [files[1], files[3]]


def test_a_function_s_lines_leave_out_its_def_and_decorators():
    namespace: dict = {}
    source = "def deco(f):\n    return f\n\n@deco\ndef g():\n    x = 1\n    return x\n"
    exec(compile(source, "m.py", "exec"), namespace)
    assert code_lines(namespace["g"].__code__) == [6, 7]
    one_line: dict = {}
    exec(compile("h = lambda: 1\n", "m.py", "exec"), one_line)
    assert code_lines(one_line["h"].__code__) == [1]


@pytest.mark.parametrize(
    ("source", "lines"),
    [("", [0]), ("# only a comment\n", [0]), ('"""doc"""\n', [1]), ("x = 1\n\ny = 2\n", [1, 3])],
)
def test_a_module_s_lines_are_line_0_only_where_it_has_none_of_its_own(source, lines):
    """Line 0 is where every module starts; it stands for the module level only where the
    module has no line of its own (an empty ``__init__.py``), as coverage.py reports it."""
    assert code_lines(compile(source, "m.py", "exec")) == lines


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
