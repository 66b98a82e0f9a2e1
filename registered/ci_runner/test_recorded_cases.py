"""--record-deps per test case and --deps-from keeping only the cases a change reaches: on a
generated repository recorded for real (once per module), run for real where it matters (the
cases append their names to a log), and a property test on synthetic records."""

import json
import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))

from impact_tree import git
from recorded_tree import edit, make_cases_repo, private_copy, record, select

from ci_runner import register_cpu_ci
from ci_runner.cli import main
from ci_runner.impact.blocks import MODULE
from ci_runner.impact.case_scope import case_scope
from ci_runner.impact.changes import MODIFIED, Change
from ci_runner.impact.record_format import CaseRecord, FileRecord, read_records

register_cpu_ci(est_time=30, suite="base-a-test-cpu")

PYTEST_FILE = "registered/test_cases.py"
UNITTEST_FILE = "registered/test_unit.py"


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "impact-cache"))
    monkeypatch.setenv("CASES_LOG", str(tmp_path / "ran.log"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The generated repository and its record, made once: (root, record dir)."""
    base = tmp_path_factory.mktemp("cases")
    root = make_cases_repo(base / "repo")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CASES_LOG", str(base / "recording.log"))
        patch.setenv("CI_RUNNER_CACHE_DIR", str(base / "cache"))
        assert record(root, base / "record") == 0
    return root, base / "record"


@pytest.fixture
def repo(recorded, tmp_path):
    return private_copy(recorded, tmp_path)


def kept_cases(impact: dict) -> dict[str, dict]:
    return {entry["path"]: entry["cases"] for entry in impact["kept"]}


def test_the_record_splits_the_code_by_case(recorded):
    _, records = recorded
    tests = read_records(records).tests
    cases = tests[PYTEST_FILE]
    assert not cases.problems
    assert set(cases.cases) == {
        f"{PYTEST_FILE}::test_a",
        f"{PYTEST_FILE}::test_b[1]",
        f"{PYTEST_FILE}::test_b[2]",
        f"{PYTEST_FILE}::TestC::test_c",
    }
    assert cases.cases[f"{PYTEST_FILE}::test_b[2]"].code["pkg/ops.py"] == ("mul",)
    # the module-scoped fixture ran sub() outside every case; module level is the file's
    assert set(cases.file_code["pkg/ops.py"]) == {MODULE, "sub"}
    assert "pkg/ops.py" not in cases.cases[f"{PYTEST_FILE}::TestC::test_c"].code
    assert cases.seconds > 0
    unit = tests[UNITTEST_FILE]
    assert unit.cases[f"{UNITTEST_FILE}::TestOps::test_add"].code["pkg/ops.py"] == ("add",)
    xdist = tests["registered/test_xdist.py"]  # measured in the workers, not the controller
    assert xdist.cases["registered/test_xdist.py::test_mul"].code["pkg/ops.py"] == ("mul",)
    assert "add" not in xdist.file_code.get("pkg/ops.py", ())


def test_a_function_only_some_cases_ran_keeps_and_runs_only_them(repo, tmp_path, capsys):
    root, records = repo
    edit(root, "pkg/ops.py", "return a * b", "return b * a")
    code, impact = select(root, records, "pkg/ops.py")
    assert code == 0
    cases = kept_cases(impact)
    assert [c["id"] for c in cases[PYTEST_FILE]["run"]] == [
        f"{PYTEST_FILE}::test_b[1]",
        f"{PYTEST_FILE}::test_b[2]",
    ]
    assert cases[PYTEST_FILE]["run"][0]["why"] == "pkg/ops.py: ran mul()"
    assert cases[PYTEST_FILE]["of"] == 4
    assert [c["id"] for c in cases[UNITTEST_FILE]["run"]] == [f"{UNITTEST_FILE}::TestOps::test_mul"]
    assert impact["est_after"] < impact["est_before"]  # scaled by the recorded case times
    listing = tmp_path / "changed.txt"
    listing.write_text("pkg/ops.py\n")
    capsys.readouterr()
    assert main(
        ["--root", str(root), "--hw", "cpu", "--suite", "unit-cpu", "--changed-files",
         str(listing), "--deps-from", str(records)]
    ) == 0  # fmt: skip
    assert "3 file(s) run only the cases the change reaches" in capsys.readouterr().out
    ran = sorted((tmp_path / "ran.log").read_text().split())
    assert ran == ["test_b[1]", "test_b[2]", "test_mul"]


def test_the_dry_run_text_lists_the_cases_and_why(repo, capsys):
    root, records = repo
    edit(root, "pkg/ops.py", "return a + b", "return b + a")
    listing = root.parent / "changed.txt"
    listing.write_text("pkg/ops.py\n")
    code = main(
        ["--root", str(root), "--hw", "cpu", "--suite", "unit-cpu", "--dry-run",
         "--changed-files", str(listing), "--deps-from", str(records)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "runs 1 of 4 case(s): test_a [pkg/ops.py: ran add()]" in out
    assert "runs 1 of 2 case(s): TestOps::test_add [pkg/ops.py: ran add()]" in out


def test_a_change_to_one_test_keeps_only_that_case(repo):
    root, records = repo
    edit(root, PYTEST_FILE, "ran('test_a')", "ran('test_a')\n    assert ops.add(0, 0) == 0")
    _, impact = select(root, records, PYTEST_FILE)
    run = kept_cases(impact)[PYTEST_FILE]["run"]
    assert run == [{"id": f"{PYTEST_FILE}::test_a", "why": f"{PYTEST_FILE}: ran test_a()"}]


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        (
            "SCALE = 1",
            "SCALE = 1  # comment\nprint('loaded')",
            "ran its module-level code (a module-level call (line 2): every importer kept); every case",
        ),
        ("return a - b", "return -(b - a)", "ran sub() outside every test case"),
    ],
)
def test_shared_code_keeps_every_case(repo, old, new, why):
    root, records = repo
    edit(root, "pkg/ops.py", old, new)
    _, impact = select(root, records, "pkg/ops.py")
    cases = kept_cases(impact)[PYTEST_FILE]
    assert cases["run"] is None
    assert why in cases["every_case_because"]
    assert impact["est_after"] >= 10  # the whole file's est_time


def test_a_renamed_case_keeps_the_whole_file(repo):
    root, records = repo
    edit(root, PYTEST_FILE, "def test_b(x):", "def test_bb(x):")
    _, impact = select(root, records, PYTEST_FILE)
    cases = kept_cases(impact)[PYTEST_FILE]
    assert cases["run"] is None
    assert "module-level code" in cases["every_case_because"]  # the def line is module level


def test_a_deleted_file_is_decided_by_the_records(repo):
    root, records = repo
    (root / "pkg" / "unused.py").unlink()  # no test ran, opened or imported it
    code, impact = select(root, records, "pkg/unused.py")
    assert code == 0 and not impact["runs_everything"]
    assert impact["kept"] == []
    (root / "pkg" / "ops.py").unlink()  # both ran it
    _, impact = select(root, records, "pkg/ops.py")
    cases = kept_cases(impact)
    assert sorted(cases) == [PYTEST_FILE, UNITTEST_FILE, "registered/test_xdist.py"]
    assert (
        "pkg/ops.py: ran its module-level code, not only through"
        in (cases[PYTEST_FILE]["every_case_because"])
    )


def test_an_old_format_record_falls_back_with_the_reason(repo, tmp_path):
    root, records = repo
    old = tmp_path / "old-record"
    shutil.copytree(records, old)
    meta = json.loads((old / "record.json").read_text())
    (old / "record.json").write_text(json.dumps({**meta, "format": 1}))
    edit(root, "pkg/ops.py", "return a * b", "return b * a")
    code, impact = select(root, old, "pkg/ops.py")
    assert code == 0
    assert "record format 1, this runner reads another; static selection" in impact["records"][0]
    assert all(entry["cases"] is None for entry in impact["kept"])
    assert git(root, "status", "--porcelain")  # the edit is there; the static closure keeps it


# ------------------------------------------------------------ the rule, on synthetic records

FUNCTIONS = ("f0", "f1", "f2", "f3", "f4")


class _Tree:
    def __init__(self, root: Path, now: dict[str, str]) -> None:
        self.root = root
        self.module_level = None  # every module-level change keeps every importer
        self.now = now

    def blocks(self, path: str) -> dict[str, str] | None:
        return self.now if path == "pkg/m.py" else None


@pytest.fixture(scope="module")
def test_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("synthetic")
    (root / "registered").mkdir()
    defs = "".join(f"def test_{i}():\n    pass\n\n" for i in range(6))
    (root / "registered" / "test_s.py").write_text(defs)
    return root


@settings(max_examples=150, deadline=None)
@given(
    ran=st.lists(st.sets(st.sampled_from(FUNCTIONS)), min_size=1, max_size=6),
    file_level=st.sets(st.sampled_from(FUNCTIONS), max_size=2),
    changed=st.sets(st.sampled_from(FUNCTIONS), min_size=1),
)
def test_the_kept_cases_are_those_whose_blocks_changed(test_root, ran, file_level, changed):
    test = "registered/test_s.py"
    cases = {
        f"{test}::test_{i}": CaseRecord(1.0, {"pkg/m.py": tuple(sorted(blocks))})
        for i, blocks in enumerate(ran)
        if blocks
    }
    every = set(file_level).union(*ran)
    record = FileRecord(
        test, "c", "passed",
        code={"pkg/m.py": {f: "old" for f in every}},
        file_code={"pkg/m.py": tuple(sorted(file_level))} if file_level else {},
        cases=cases, seconds=2.0 + len(cases),
    )  # fmt: skip
    now = {f: ("new" if f in changed else "old") for f in FUNCTIONS}
    touched = changed & every
    scope = case_scope(
        record,
        (Change("pkg/m.py", MODIFIED),),
        _Tree(test_root, now),
        lambda change: "ran it" if touched else None,
    )
    expected = {c for c, data in cases.items() if set(data.code["pkg/m.py"]) & changed}
    if not cases:
        assert scope.cases == {} and "no test case" in scope.whole
    elif not touched:
        assert scope.cases == {}
    elif changed & file_level:
        assert scope.cases == {} and "outside every test case" in scope.whole
    else:
        assert set(scope.cases) == expected
        assert scope.share == pytest.approx((2.0 + len(expected)) / (2.0 + len(cases)))


def test_a_case_the_file_no_longer_defines_keeps_the_whole_file(test_root):
    test = "registered/test_s.py"
    record = FileRecord(
        test, "c", "passed",
        code={"pkg/m.py": {"f0": "old"}},
        cases={f"{test}::test_gone[1]": CaseRecord(1.0, {"pkg/m.py": ("f0",)}),
               f"{test}::test_1": CaseRecord(1.0, {})},
    )  # fmt: skip
    scope = case_scope(
        record, (Change("pkg/m.py", MODIFIED),), _Tree(test_root, {"f0": "new"}), lambda c: "ran"
    )
    assert scope.cases == {}
    assert "test_gone[1] is not defined by that name" in scope.whole


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
