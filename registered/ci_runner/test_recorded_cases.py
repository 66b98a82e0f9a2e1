"""--record-deps per test case and --deps-from keeping only the cases a change reaches: on a
generated repository recorded for real (once per module), run for real where it matters (the
cases append their names to a log), and a property test on synthetic records."""

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))

from impact_tree import git
from recorded_tree import edit, make_cases_repo, private_copy, record, recorded_repo, select

from ci_runner import register_cpu_ci
from ci_runner.cli import main
from ci_runner.execution.dep_recording import case_of, child_runs
from ci_runner.execution.record_child import CHILD_CONTEXT
from ci_runner.impact.blocks import MODULE
from ci_runner.impact.case_scope import case_scope
from ci_runner.impact.changes import MODIFIED, Change
from ci_runner.impact.record_format import CaseRecord, FileRecord, read_records

register_cpu_ci(est_time=51, suite="base-a-test-cpu")

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


ORDER_FILE = "registered/test_order.py"
ORDER_TREE = {
    "pkg/__init__.py": "",
    "pkg/ops.py": "".join(f"def {name}():\n    return 1\n\n\n" for name in "abcde"),
    ORDER_FILE: (
        "import sys\n\nimport pytest\n\nfrom ci_runner import register_cpu_ci\nfrom pkg import ops\n\n"
        "register_cpu_ci(est_time=5, suite='unit-cpu')\n\n\n"
        "@pytest.fixture(scope='module')\ndef early():\n    return ops.a()\n\n\n"
        "def test_1(early):\n    ops.a()\n    ops.b()\n\n\n"
        "def test_2():\n    ops.b()\n    ops.c()\n\n\n"
        "class TestLater:\n    @pytest.fixture(scope='class')\n    def late(self):\n"
        "        return ops.c()\n\n    @pytest.fixture\n    def local(self, request):\n"
        "        ops.c()\n        return request.getfixturevalue('late')\n\n"
        "    def test_3(self, local):\n        ops.d()\n\n"
        "    def test_4(self):\n        ops.d()\n        ops.e()\n\n\n"
        "if __name__ == '__main__':\n    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))\n"
    ),
}


def test_each_case_sees_again_what_ran_before_it(tmp_path):
    """Whatever order code runs in, in cases and outside every case: a block a case ran is in
    its record or in the file-level part (which keeps every case), and a block run outside
    every case is in the file-level part even when a case ran it before. On Python >= 3.12
    coverage reports a line once; what a case saw is reported again to the next context."""
    _, records = recorded_repo(tmp_path, ORDER_TREE)
    order = read_records(records).tests[ORDER_FILE]
    assert not order.problems
    shared = set(order.file_code["pkg/ops.py"])
    # early() before test_1; late() after test_2 and after test_3's own fixture ran c()
    assert shared == {MODULE, "a", "c"}
    ran = {case.rsplit("::", 1)[1]: set(data.code.get("pkg/ops.py", ())) for case, data in
           order.cases.items()}  # fmt: skip
    assert {case: blocks | shared for case, blocks in ran.items()} == {
        "test_1": {MODULE, "a", "b", "c"},
        "test_2": {MODULE, "a", "b", "c"},
        "test_3": {MODULE, "a", "c", "d"},
        "test_4": {MODULE, "a", "c", "d", "e"},
    }
    assert {"b"} <= ran["test_1"] and {"b", "c"} <= ran["test_2"]  # b: test_1 ran it first
    assert ran["test_3"] == {"c", "d"} and ran["test_4"] == {"d", "e"}


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


# ------------------------------------------------------------ files opened, by case

OPENS_FILE = "registered/test_opens.py"
DATA = {
    "a": "1\n", "b": "2\n", "shared": "3\n", "child": "4\n", "forked": "5\n", "late": "6\n",
    "spawned": "7\n", "grandchild": "8\n",
}  # fmt: skip
# A case's child reads data/<name>.txt through pkg/reader.py and prints it
CHILD = "import sys; from pkg.reader import read; print(read(sys.argv[1]), end='')"
OPENS_FILES = {
    "pkg/__init__.py": "",
    "pkg/reader.py": (
        "from pathlib import Path\n\n\ndef read(name):\n"
        "    return Path(f'data/{name}.txt').read_text()\n"
    ),
    **{f"data/{name}.txt": text for name, text in DATA.items()},
    "listed/one.txt": "",
    OPENS_FILE: (
        "import os\nimport subprocess\nimport sys\nfrom pathlib import Path\n\nimport pytest\n\n"
        "from ci_runner import register_cpu_ci\n\nregister_cpu_ci(est_time=5, suite='unit-cpu')\n"
        f"CHILD = {CHILD!r}\nBACKGROUND = []\n\n\n"
        "def child(name, *before):\n"
        "    code = ';'.join((*before, CHILD))\n"
        "    return subprocess.run([sys.executable, '-c', code, name], capture_output=True,\n"
        "                          text=True, check=True).stdout\n\n\n"
        "@pytest.fixture(scope='module')\ndef shared():\n"
        "    return Path('data/shared.txt').read_text()\n\n\n"
        "@pytest.fixture(scope='module')\ndef spawned():\n"
        "    return child('spawned')\n\n\n"
        "def test_a():\n    assert Path('data/a.txt').read_text() == '1\\n'\n\n\n"
        "def test_b():\n    assert Path('data/b.txt').read_text() == '2\\n'\n\n\n"
        "def test_shared(shared):\n    assert shared == '3\\n'\n\n\n"
        "def test_child():\n    assert child('child') == '4\\n'\n\n\n"
        "def test_grandchild():\n"
        "    code = 'import subprocess, sys; sys.exit(subprocess.run([sys.executable, \"-c\", '\n"
        "    code += repr(CHILD) + ', \"grandchild\"]).returncode)'\n"
        "    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True)\n"
        "    assert out.stdout == '8\\n'\n\n\n"
        "def test_forked():\n"
        "    read, write = os.pipe()\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        from pkg.reader import read as read_data\n"
        "        os.write(write, read_data('forked').encode())\n"
        "        os._exit(0)\n"
        "    os.close(write)\n"
        "    os.waitpid(pid, 0)\n"
        "    assert os.read(read, 100) == b'5\\n'\n\n\n"
        "def test_spawned(spawned):\n    assert spawned == '7\\n'\n\n\n"
        "def test_background():\n"
        "    BACKGROUND.append(subprocess.Popen(\n"
        "        [sys.executable, '-c', 'import time; time.sleep(1);' + CHILD, 'late'],\n"
        "        stdout=subprocess.PIPE, text=True))\n\n\n"
        "def test_none():\n    assert 1 + 1 == 2\n\n\n"
        "def test_optional():\n    try:\n        text = open('data/optional.txt').read()\n"
        "    except FileNotFoundError:\n        text = ''\n    assert text == ''\n\n\n"
        "def test_listing():\n    assert len(os.listdir('listed')) == 1\n\n\n"
        "def test_waits():\n"
        "    assert BACKGROUND[0].communicate()[0] == '6\\n'  # the child test_background left\n\n\n"
        "if __name__ == '__main__':\n    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))\n"
    ),
}


@pytest.fixture(scope="module")
def opens_recorded(tmp_path_factory):
    """A test file whose cases open data files (one through a module-scoped fixture, others in
    child processes: exec'd, a grandchild, forked, one a module-scoped fixture starts, one
    that outlives its case), recorded: (root, record dir)."""
    return recorded_repo(tmp_path_factory.mktemp("opens"), OPENS_FILES)


def _opens_kept(root: Path, records: Path, *changed: str) -> set[str] | None:
    """The cases of the file a change of ``changed`` runs (None: every case)."""
    code, impact = select(root, records, *changed)
    assert code == 0
    cases = kept_cases(impact).get(OPENS_FILE, {"run": []})
    run = cases["run"] if cases is not None else None
    return None if run is None else {c["id"].rsplit("::", 1)[-1] for c in run}


def test_the_record_says_which_case_opened_each_file(opens_recorded):
    _, records = opens_recorded
    record_ = read_records(records).tests[OPENS_FILE]
    by_case = {c.rsplit("::", 1)[-1]: set(d.opened) for c, d in record_.cases.items()}
    assert by_case["test_a"] == {"data/a.txt"} and by_case["test_b"] == {"data/b.txt"}
    assert by_case["test_none"] == set() == by_case["test_shared"]
    assert by_case["test_optional"] == {"data/optional.txt"}  # an open of an absent file
    listed = {c.rsplit("::", 1)[-1]: set(d.listed) for c, d in record_.cases.items()}
    assert listed["test_listing"] == {"listed"} and listed["test_a"] == set()
    assert "listed" not in (record_.file_listed or ())
    # a case's child processes that ended before it did open for it
    assert by_case["test_child"] == {"data/child.txt"}
    assert by_case["test_grandchild"] == {"data/grandchild.txt"}
    # (os.fork in a process with threads warns, and the warning reads the test file's line)
    assert by_case["test_forked"] - {OPENS_FILE} == {"data/forked.txt"}
    # a module-scoped fixture (and the child it starts) and a child that outlived its case
    # open outside every case
    outside = {"data/shared.txt", "data/spawned.txt", "data/late.txt"}
    assert outside <= set(record_.file_opened or ())
    assert not outside & set().union(*by_case.values())


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a", {"test_a"}),
        ("b", {"test_b"}),
        ("shared", None),
        ("child", {"test_child"}),
        ("grandchild", {"test_grandchild"}),
        ("forked", {"test_forked"}),
        ("spawned", None),
        ("late", None),
    ],
)
def test_a_file_only_some_cases_opened_keeps_only_them(opens_recorded, tmp_path, name, expected):
    root, records = private_copy(opens_recorded, tmp_path)
    (root / "data" / f"{name}.txt").write_text("changed\n")
    assert _opens_kept(root, records, f"data/{name}.txt") == expected


def test_code_a_case_s_children_ran_keeps_only_that_case(opens_recorded, tmp_path):
    """pkg/reader.py's read() ran only in child processes: those of three cases, which ended
    before their case, and two that did not (a module-scoped fixture's, one that outlived its
    case), whose code every case shares."""
    root, records = private_copy(opens_recorded, tmp_path)
    record_ = read_records(records).tests[OPENS_FILE]
    by_case = {c.rsplit("::", 1)[-1]: d.code for c, d in record_.cases.items()}
    ran_read = {name for name, code in by_case.items() if "read" in code.get("pkg/reader.py", ())}
    assert ran_read == {"test_child", "test_grandchild", "test_forked"}
    assert "read" in (record_.file_code or {}).get("pkg/reader.py", ())
    edit(root, "pkg/reader.py", "read_text()", "read_text(encoding='utf-8')")
    assert _opens_kept(root, records, "pkg/reader.py") is None  # the fixture's child ran it


def test_a_file_deleted_or_added_keeps_the_cases_that_opened_or_tried_to(opens_recorded, tmp_path):
    root, records = private_copy(opens_recorded, tmp_path)
    (root / "data" / "b.txt").unlink()
    assert _opens_kept(root, records, "data/b.txt") == {"test_b"}
    (root / "data" / "optional.txt").write_text("x\n")  # test_optional tried to open it
    assert _opens_kept(root, records, "data/b.txt", "data/optional.txt") == {
        "test_b", "test_optional"
    }  # fmt: skip
    (root / "listed" / "two.txt").write_text("")  # only test_listing listed its directory
    assert _opens_kept(root, records, "listed/two.txt") == {"test_listing"}


@pytest.mark.parametrize(
    ("key", "path"), [("file_opened", "data/a.txt"), ("file_listed", "listed/x")]
)
def test_a_record_that_does_not_say_which_case_keeps_every_case(
    opens_recorded, tmp_path, key, path
):
    """A record written before opens and listings were attributed (no ``file_opened`` or
    ``file_listed``)."""
    root, records = private_copy(opens_recorded, tmp_path)
    old = tmp_path / "old-record"
    shutil.copytree(records, old)
    for record_path in (old / "tests").glob("*.json"):
        data = json.loads(record_path.read_text())
        data.pop(key)
        record_path.write_text(json.dumps(data))
    (root / path).write_text("changed\n")
    assert _opens_kept(root, old, path) is None


@pytest.mark.parametrize(
    ("run", "ends", "proven"),
    [
        ({"case": "t::a", "ended": 5.0}, [1.0, 5.0], True),  # every child ended by then
        ({"case": "t::a", "ended": 5.0}, [], True),  # no child
        ({"case": "t::a", "ended": 5.0}, [1.0, 5.5], False),  # one outlived the case
        ({"case": "t::a", "ended": None}, [1.0], False),  # the case never ended
        ({"case": "t::a", "ended": 5.0}, [float("inf")], False),  # a child with no end
        ({"case": "", "ended": 5.0}, [], False),
        ({"ended": "5"}, [], False),
    ],
)
def test_a_case_s_children_count_for_it_only_when_they_ended_first(run, ends, proven):
    children = child_runs({"0123456789abcdef": run}, {"0123456789abcdef": ends})
    context = f"{CHILD_CONTEXT}0123456789abcdef|inner::case"
    assert case_of(context, children) == ("t::a" if proven else "")
    assert case_of("t::b", children) == "t::b"  # a case's own context
    assert case_of(f"{CHILD_CONTEXT}fedcba9876543210", children) == ""  # a run nobody noted


def _failing(root: Path) -> set[str]:
    """The cases of the file that fail when run for real."""
    junit = root.parent / "opens.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
         OPENS_FILE],
        cwd=root, capture_output=True, timeout=300, check=False,
    )  # fmt: skip
    return {
        case.get("name", "")
        for case in ET.parse(junit).iter("testcase")
        if case.find("failure") is not None or case.find("error") is not None
    }


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    changed=st.sets(st.sampled_from(sorted(DATA)), min_size=1),
    how=st.sampled_from(["rewrite", "delete"]),
    optional=st.sampled_from(["", "\n", "x\n"]),
    listing=st.booleans(),
)
def test_every_case_a_data_change_breaks_is_kept(
    opens_recorded, tmp_path_factory, changed, how, optional, listing
):
    """Random sets of data files rewritten or deleted, a file a case tried to open added
    (empty, which that case accepts, or not), a file added where a case listed: every case
    that fails for real is kept."""
    root, records = private_copy(opens_recorded, tmp_path_factory.mktemp("copy"))
    paths = [f"data/{n}.txt" for n in sorted(changed)]
    for name in changed:
        if how == "delete":
            (root / "data" / f"{name}.txt").unlink()
        else:
            (root / "data" / f"{name}.txt").write_text(DATA[name] + "x")
    if optional:
        (root / "data" / "optional.txt").write_text(optional)
        paths.append("data/optional.txt")
    if listing:  # a file added where one case listed
        (root / "listed" / "two.txt").write_text("")
        paths.append("listed/two.txt")
    kept = _opens_kept(root, records, *paths)
    failing = _failing(root)
    assert kept is None or failing <= kept, f"dropped {sorted(failing - kept)}; kept {kept}"


INHERITING_FILE = "registered/test_inherit.py"
# each case appends its name to $CASES_LOG (outside the tree), so a test sees which ran
_RAN = "\n\ndef ran(name):\n    with open(os.environ['CASES_LOG'], 'a') as log:\n        log.write(name + '\\n')\n"
INHERITED = {
    "pkg/__init__.py": "",
    "pkg/ops.py": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
    # the cases are methods of a mixin in another file: no name of their ids is in the test file
    "registered/cases_mixin.py": (
        "import os\n\nfrom pkg import ops\n" + _RAN + "\n\n"
        "class OpsCases:\n    def test_add(self):\n        ran('test_add')\n"
        "        self.assertEqual(ops.add(1, 2), 3)\n\n    def test_mul(self):\n"
        "        ran('test_mul')\n        self.assertEqual(ops.mul(2, 2), 4)\n"
    ),
    INHERITING_FILE: (
        "import unittest\n\nfrom cases_mixin import OpsCases\n\nfrom ci_runner import "
        "register_cpu_ci\n\nregister_cpu_ci(est_time=10, suite='unit-cpu')\n\n\n"
        "class TestOps(OpsCases, unittest.TestCase):\n    pass\n\n\n"
        "if __name__ == '__main__':\n    unittest.main()\n"
    ),
}


@pytest.fixture(scope="module")
def inherited_recorded(tmp_path_factory):
    base = tmp_path_factory.mktemp("inherited")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CASES_LOG", str(base / "recording.log"))
        return recorded_repo(base, INHERITED)


def test_an_inherited_case_is_run_alone_by_its_id(inherited_recorded, tmp_path, capsys):
    root, records = private_copy(inherited_recorded, tmp_path)
    edit(root, "pkg/ops.py", "return a * b", "return b * a")
    _, impact = select(root, records, "pkg/ops.py")
    cases = kept_cases(impact)[INHERITING_FILE]
    assert cases["run"] == [
        {"id": f"{INHERITING_FILE}::TestOps::test_mul", "why": "pkg/ops.py: ran mul()"}
    ]
    listing = tmp_path / "changed.txt"
    listing.write_text("pkg/ops.py\n")
    capsys.readouterr()
    argv = ["--root", str(root), "--hw", "cpu", "--suite", "unit-cpu", "--changed-files",
            str(listing), "--deps-from", str(records)]  # fmt: skip
    assert main(argv) == 0
    assert (tmp_path / "ran.log").read_text().split() == ["test_mul"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("    def test_mul(self):", "    def test_mul2(self):"),  # the inherited case renamed
        ("class OpsCases:", "class OpsCases(object):"),  # the mixin's statement changed
    ],
)
def test_a_change_to_the_inherited_class_keeps_every_case(inherited_recorded, tmp_path, old, new):
    root, records = private_copy(inherited_recorded, tmp_path)
    edit(root, "registered/cases_mixin.py", old, new)
    edit(root, "pkg/ops.py", "return a * b", "return b * a")
    _, impact = select(root, records, "pkg/ops.py", "registered/cases_mixin.py")
    cases = kept_cases(impact)[INHERITING_FILE]
    assert cases["run"] is None
    assert "registered/cases_mixin.py" in cases["every_case_because"]


# ------------------------------------------------------------ the rule, on synthetic records

FUNCTIONS = ("f0", "f1", "f2", "f3", "f4")


class _Tree:
    def __init__(self, root: Path, now: dict[str, str]) -> None:
        self.root = root
        self.module_level = None  # every module-level change keeps every importer
        self.now = now

    def changed_blocks(self, record: FileRecord, path: str) -> set[str] | None:
        if path != "pkg/m.py":
            return None
        return {k for k, h in record.code[path].items() if self.now.get(k) != h}


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


def _scope_of_one_reached_case(root: Path, test: str, case: str, other: str):
    """The case scope of ``test``'s record when only ``case`` ran the changed ``f0``."""
    record = FileRecord(
        test, "c", "passed",
        code={"pkg/m.py": {"f0": "old"}},
        cases={f"{test}::{case}": CaseRecord(1.0, {"pkg/m.py": ("f0",)}),
               f"{test}::{other}": CaseRecord(1.0, {})},
    )  # fmt: skip
    return case_scope(
        record, (Change("pkg/m.py", MODIFIED),), _Tree(root, {"f0": "new"}), lambda c: "ran"
    )


def test_a_case_the_file_no_longer_defines_keeps_the_whole_file(test_root):
    scope = _scope_of_one_reached_case(test_root, "registered/test_s.py", "test_gone[1]", "test_1")
    assert scope.cases == {}
    assert "test_gone[1] is not defined by that name" in scope.whole


@pytest.mark.parametrize(
    ("source", "case", "defined"),
    [
        ("class TestA(Base):\n    pass\n", "TestA::test_x", True),  # inherited from Base
        ("class TestA(Base):\n    pass\n", "TestA::test_x[1]", True),
        ("class TestA:\n    pass\n", "TestA::test_x", False),  # no base to inherit it from
        ("class TestA(Base):\n    pass\n", "TestB::test_x", False),  # no such class
        ("class TestA(Base):\n    pass\n", "test_x", False),  # a function, not a method
        ("class Outer(Base):\n    class TestA:\n        pass\n", "Outer::TestA::test_x", False),
        ("class Outer:\n    class TestA(B):\n        pass\n", "Outer::TestA::test_x", True),
        ("def test_x():\n    pass\n", "test_x", True),
    ],
)
def test_which_case_ids_the_file_defines(tmp_path, source, case, defined):
    test = "registered/test_s.py"
    (tmp_path / "registered").mkdir()
    (tmp_path / test).write_text(source)
    scope = _scope_of_one_reached_case(tmp_path, test, case, "other")
    if defined:
        assert list(scope.cases) == [f"{test}::{case}"] and not scope.whole
    else:
        assert scope.cases == {} and "is not defined by that name" in scope.whole


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
