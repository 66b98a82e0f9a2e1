"""--record-deps and --deps-from: block hashing, the record format, and selections decided by
what each test ran, opened, listed and started, on a generated repository recorded for real
(once per module) and on synthetic records."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from coverage import CoverageData
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))

from impact_tree import git
from recorded_tree import (
    TESTS,
    commit_all,
    edit,
    how,
    make_recorded_repo,
    private_copy,
    record,
    select,
)

from ci_runner import register_cpu_ci
from ci_runner.cli import main
from ci_runner.execution import dep_recording, record_child
from ci_runner.execution.dep_recording import DepRecorder
from ci_runner.impact.blocks import MODULE, block_hashes, executed_blocks
from ci_runner.impact.record_format import (
    FORMAT,
    FileRecord,
    KernelUse,
    RecordError,
    RecordSet,
    file_digest,
    read_records,
    write_meta,
    write_test_record,
)
from ci_runner.impact.recorded import module_names

register_cpu_ci(est_time=25, suite="base-a-test-cpu")


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "impact-cache"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The generated repository and its record, made once: (root, record dir)."""
    base = tmp_path_factory.mktemp("recorded")
    root = make_recorded_repo(base / "repo")
    with pytest.MonkeyPatch.context() as patch:  # the per-test cache fixture is not active yet
        patch.setenv("CI_RUNNER_CACHE_DIR", str(base / "cache"))
        assert record(root, base / "record") == 0
    return root, base / "record"


@pytest.fixture
def repo(recorded, tmp_path):
    return private_copy(recorded, tmp_path)


# ---------------------------------------------------------------- blocks


SOURCE = '''import os

X = 1


def f(a, b=2):
    """doc"""
    return a + b


class C:
    def m(self):
        def inner():
            return 1

        return inner()
'''


def test_each_function_is_a_block_and_the_rest_is_module_level():
    blocks = block_hashes(SOURCE)
    assert set(blocks) == {MODULE, "f", "C.m", "C.m.inner"}
    assert set(executed_blocks(SOURCE, {3, 8, 14})) == {MODULE, "f", "C.m.inner"}


def test_a_body_change_changes_that_block_only():
    before = block_hashes(SOURCE)
    after = block_hashes(SOURCE.replace("return 1", "return 2"))
    assert {k for k in before if before[k] != after[k]} == {"C.m.inner"}
    signature = block_hashes(SOURCE.replace("b=2", "b=3"))
    assert {k for k in before if before[k] != signature[k]} == {MODULE, "f"}


@settings(max_examples=40, deadline=None)
@given(
    comments=st.lists(st.sampled_from(["# note", "", "    # indented note"]), max_size=4),
    where=st.integers(min_value=0, max_value=15),
)
def test_comments_and_blank_lines_change_no_hash(comments, where):
    lines = SOURCE.splitlines()
    position = min(where, len(lines))
    edited = "\n".join(lines[:position] + comments + lines[position:]) + "\n"
    if block_hashes(edited) is None:  # a comment line cannot break a block, but be exact
        pytest.fail(f"comments made the source unparsable:\n{edited}")
    assert block_hashes(edited) == block_hashes(SOURCE)


def test_a_file_that_does_not_parse_has_no_blocks():
    assert block_hashes("def (:\n") is None


def test_module_names_cover_every_base_directory():
    assert module_names("src/pkg/mod.py") == {"src.pkg.mod", "pkg.mod", "mod"}
    assert module_names("pkg/sub/__init__.py") == {"pkg.sub", "sub"}
    assert module_names("data/x.json") == set()


# ---------------------------------------------------------------- the record directory


GIT_OPTIONS = st.lists(
    st.sampled_from([["-C", "."], ["-c", "core.quotepath=off"], ["--no-pager"], ["-P"]]),
    max_size=3,
).map(lambda groups: [arg for group in groups for arg in group])


METADATA_ONLY = st.sampled_from(  # pytest-benchmark's queries, run in every pytest session
    [
        ["rev-parse", "--git-dir"],
        ["config", "--local", "remote.origin.url"],
        ["describe", "--dirty", "--always", "--long", "--abbrev=40"],
        ["show", "-s", '--pretty=format:"%cI"'],
        ["rev-parse", "--abbrev-ref", "HEAD"],
    ]
)
READS_CONTENT = st.sampled_from(
    [["status"], ["diff"], ["ls-files"], ["show", "HEAD"], ["rev-parse", "HEAD:setup.py"]]
)


@settings(max_examples=60, deadline=None)
@given(options=GIT_OPTIONS, metadata=METADATA_ONLY, content=READS_CONTENT)
def test_git_metadata_commands_read_no_file_others_do(tmp_path_factory, options, metadata, content):
    """``git rev-parse --git-dir`` and ``git config`` (pytest-benchmark runs both in every
    session) leave the record bounded, whatever git options come first; a git command that
    reads the work tree or a file's object (``HEAD:setup.py``) does not."""
    root = tmp_path_factory.mktemp("tree")
    notes = record_child._Notes(str(root), str(root))
    record_child._program(notes, "git", ["git", *options, *metadata], root, None)
    assert notes.unbounded == []
    record_child._program(notes, "git", ["git", *options, *content], root, None)
    assert notes.unbounded == [f"ran {' '.join(['git', *options, *content])}"]


def test_mercurial_queries_and_programs_that_cannot_start_read_no_file(tmp_path):
    """pytest-benchmark's ``hg path default``, and a program not on PATH (it never starts), leave
    the record bounded; ``cat`` on a repository file does not."""
    (tmp_path / "data.txt").write_text("x")
    notes = record_child._Notes(str(tmp_path), str(tmp_path))
    record_child._program(notes, "hg", ["hg", "path", "default"], tmp_path, None)
    record_child._program(notes, "hg", ["hg", "-R", ".", "path", "default"], tmp_path, None)
    record_child._program(notes, None, ["no-such-program-7f3a", "data.txt"], tmp_path, None)
    assert notes.unbounded == []
    record_child._program(notes, None, ["cat", "data.txt"], tmp_path, None)
    assert notes.unbounded == ["ran cat data.txt"]


def test_ldconfig_printing_its_cache_reads_no_file_other_uses_do(tmp_path):
    """``ctypes.util.find_library`` runs ``/sbin/ldconfig -p``, which prints the system cache
    (SGLang's CPU suite did in every file); ``-C`` names a cache file, which may be the tree's,
    and ``ldconfig`` with no option rebuilds the cache from directories it reads."""
    (tmp_path / "ld.cache").write_text("x")
    notes = record_child._Notes(str(tmp_path), str(tmp_path))
    record_child._program(notes, "/sbin/ldconfig", ["/sbin/ldconfig", "-p"], tmp_path, None)
    record_child._program(notes, None, ["ldconfig", "--print-cache"], tmp_path, None)
    assert notes.unbounded == []
    if not shutil.which("ldconfig"):
        return  # not on PATH here: it cannot start, so it reads nothing either way
    for argv in (["ldconfig", "-C", "ld.cache", "-p"], ["ldconfig"], ["ldconfig", "-p", "."]):
        notes.unbounded.clear()
        record_child._program(notes, None, argv, tmp_path, None)
        assert notes.unbounded == [f"ran {' '.join(argv)}"]


def test_system_probes_read_no_file_the_trees_own_programs_do(tmp_path):
    """What SGLang's CPU suite ran in its processes: torch's and triton's compiler version
    probes and ``lscpu -p=...`` read no file of the tree. ``lscpu --sysroot DIR`` may (any
    abbreviation, or ``s`` in a short-option cluster), and so does any program that is a file
    of the tree, even asked for its version or named like a system program, and from outside."""
    tool = tmp_path / "tools" / "uname"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\ncat data.txt\n")
    tool.chmod(0o755)
    notes = record_child._Notes(str(tmp_path), str(tmp_path))
    bounded = [["c++", "--version"], ["c++", "-dumpfullversion", "-dumpversion"], ["g++", "-v"]]
    bounded += [["lscpu", "-p=CPU,Core,Socket,Node"], ["lscpu", "-J"]]
    if shutil.which("nvcc"):
        bounded.append(["nvcc", "--version"])
    for argv in bounded:
        record_child._program(notes, None, argv, tmp_path, None)
    assert notes.unbounded == []
    if not shutil.which("lscpu"):
        pytest.skip("lscpu is not on PATH here: it cannot start, so it reads nothing")
    unbounded = [
        (["lscpu", "--sysroot", "."], tmp_path),
        (["lscpu", "--sys=."], tmp_path),
        (["lscpu", "-ps", "."], tmp_path),
        ([str(tool), "--version"], "/"),
        (["c++", "-dumpversion", "a.c"], tmp_path),
        (["ls", "-v"], tmp_path),  # -v alone is a version query of compilers only
        (["tools/uname"], tmp_path),
    ]
    for argv, where in unbounded:
        notes.unbounded.clear()
        record_child._program(notes, None, argv, where, None)
        assert notes.unbounded == [f"ran {' '.join(argv)}"], argv


def test_a_program_of_a_virtual_environment_under_the_root_is_no_file_of_the_tree(
    tmp_path, monkeypatch
):
    """CI's ``.venv-ci/`` is under the root: the JIT build's ``ninja`` from it, run in a build
    directory outside the tree, reads no file of the tree; a program elsewhere under the root
    does, and one of the environment run in the tree still keeps its test."""
    for place in (".venv-ci/bin/ninja", "tools/ninja"):
        program = tmp_path / place
        program.parent.mkdir(parents=True)
        program.write_text("#!/bin/sh\n")
        program.chmod(0o755)
    monkeypatch.setattr(sys, "prefix", str(tmp_path / ".venv-ci"))
    monkeypatch.setattr(sys, "exec_prefix", str(tmp_path / ".venv-ci"))
    notes = record_child._Notes(str(tmp_path), str(tmp_path))
    build = tmp_path.parent / "build"
    record_child._program(notes, str(tmp_path / ".venv-ci/bin/ninja"), ["ninja"], build, None)
    assert notes.unbounded == []
    record_child._program(notes, str(tmp_path / "tools/ninja"), ["ninja"], build, None)
    record_child._program(notes, str(tmp_path / ".venv-ci/bin/ninja"), ["ninja"], tmp_path, None)
    assert notes.unbounded == ["ran ninja", "ran ninja"]


def _interpreter(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_a_python_of_another_environment_without_the_start_hook_is_unbounded(tmp_path, monkeypatch):
    """``python3`` that ``PATH`` finds in another installation (a pyenv shim, the system's
    Python beside a virtual environment that was not activated) records nothing: SGLang's
    ``test_docker_build_metadata_args.py`` ran its helper so, and its record lacked the
    helper's functions. Such a start keeps the test for any change; an interpreter of this
    environment, or of one where the start hook is installed, records itself."""
    other = tmp_path / "other"
    _interpreter(other / "bin" / "python3")
    site = other / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    root = tmp_path / "repo"
    root.mkdir()
    notes = record_child._Notes(str(root), str(root))
    env = {**os.environ, "PATH": str(other / "bin"), record_child.START_VARIABLE: "x"}
    record_child._program(notes, None, ["python3", "tool.py"], root, env)
    assert notes.unbounded == [
        "started Python of another environment, without this package's start hook: python3 tool.py"
    ]
    notes.unbounded.clear()
    (site / record_child.START_HOOK_NAME).write_text("")
    record_child._program(notes, None, ["python3", "tool.py"], root, env)
    venv = tmp_path / "venv"
    python = _interpreter(venv / "bin" / "python")
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    monkeypatch.setattr(sys, "prefix", str(venv))
    record_child._program(notes, str(python), [str(python), "tool.py"], root, env)
    record_child._program(notes, None, [sys.executable, "tool.py"], root, env)
    record_child._program(notes, None, ["python3.99-nowhere", "tool.py"], root, env)
    assert notes.unbounded == []
    monkeypatch.setattr(sys, "prefix", str(other))
    record_child._program(notes, str(python), [str(python), "tool.py"], root, env)
    assert len(notes.unbounded) == 1  # the virtual environment is not this process's now


def test_a_tree_removal_is_no_read_and_a_plain_read_is(tmp_path):
    """shutil.rmtree opens each directory by name relative to its parent's descriptor: that is
    neither a read nor a path under the working directory; open() of a file still is."""
    root = tmp_path / "root"
    (root / "doomed" / "inner" / "deeper").mkdir(parents=True)
    (root / "doomed" / "inner" / "deeper" / "f.txt").write_text("x")
    (root / "data.txt").write_text("data")
    script = (
        "import shutil, sys\n"
        "from ci_runner.execution import record_child as r\n"
        f"r._notes = r._Notes({str(root)!r}, {str(tmp_path)!r})\n"
        "sys.addaudithook(r._hook)\n"
        "shutil.rmtree('doomed')\n"
        "open('data.txt').read()\n"
        "print('\\n'.join(sorted(r._notes.opened)))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    opened = run.stdout.split()
    assert str(root / "data.txt") in opened
    assert not [p for p in opened if p.endswith(("inner", "deeper", "f.txt"))], opened


def measured_files(scratch: Path) -> set[str]:
    """Every file the processes of an attempt's scratch directory recorded running code of:
    coverage.py's data files (Python < 3.12) and the code tables of the processes' notes."""
    measured = set()
    for data_file in (scratch / "coverage").iterdir():
        data = CoverageData(basename=str(data_file))
        data.read()
        measured |= set(data.measured_files())
    for notes in (scratch / "notes").glob("*.json"):
        executed = json.loads(notes.read_text()).get("executed", {"code": []})
        measured |= {path for path, _ in executed["code"]}
    return measured


def test_an_environment_inside_the_root_is_not_traced(tmp_path):
    """A virtual environment inside the repository (``.venv/``) is not the repository's code:
    the recorder does not trace it (the record drops it anyway), the repository's own module is."""
    root = tmp_path / "repo"
    site = root / ".venv" / "lib" / "python3.12" / "site-packages"
    (site / "vendored").mkdir(parents=True)
    (site / "vendored" / "deep.py").write_text("X = 1\n")
    (root / "mine.py").write_text("Y = 2\n")
    recorder = DepRecorder(tmp_path / "record", root)
    env = recorder.environment(tmp_path / "scratch", os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(root)])
    subprocess.run(
        [sys.executable, "-c", "import vendored.deep, mine"], cwd=root, env=env, check=True
    )
    measured = measured_files(tmp_path / "scratch")
    assert str(root.resolve() / "mine.py") in measured
    assert not [m for m in measured if "site-packages" in m]


def test_a_recording_inside_a_recorded_test_measures_into_its_own_directory(tmp_path):
    """A recorded test that records a run of its own (the runner's own suite does) inherits the
    variable by which coverage.py carries its measurement into child processes, and which
    coverage prefers to ``COVERAGE_PROCESS_START``: the inner recording drops it."""
    import coverage

    outer = coverage.Coverage(data_file=str(tmp_path / "outer" / "data"), config_file=False)
    root = tmp_path / "repo"
    root.mkdir()
    (root / "mine.py").write_text("Y = 2\n")
    recorder = DepRecorder(tmp_path / "record", root)
    base = {**os.environ, "COVERAGE_PROCESS_CONFIG": outer.config.serialize()}
    env = recorder.environment(tmp_path / "scratch", base)
    assert "COVERAGE_PROCESS_CONFIG" not in env
    subprocess.run([sys.executable, "-c", "import mine"], cwd=root, env=env, check=True)
    measured = measured_files(tmp_path / "scratch")
    assert str(root.resolve() / "mine.py") in measured
    assert not (tmp_path / "outer").exists()


def test_a_process_s_code_table_becomes_each_context_s_blocks(tmp_path):
    """A process that recorded its own code (``sys.monitoring``) writes code objects as lines:
    each line counts for the block it falls in; module level for the file."""
    root = tmp_path / "repo"
    root.mkdir()
    source = "X = 1\n\n\ndef f():\n    return X\n\n\ndef g():\n    return 2\n"
    (root / "m.py").write_text(source)
    path = str(root.resolve() / "m.py")
    table = {"code": [[path, [1, 4]], [path, [5]], ["/elsewhere/x.py", [1]]],
             "contexts": {"": [0, 2], "case-a": [1], "case-b": []}}  # fmt: skip
    recorder = DepRecorder(tmp_path / "record", root)
    code, sources, by_context, problems = recorder._code(tmp_path, [table])
    assert problems == [] and set(sources) == {"m.py"}
    assert set(code["m.py"]) == {MODULE, "f"}  # g never ran
    assert by_context == {"": {"m.py": (MODULE,)}, "case-a": {"m.py": ("f",)}}


def test_a_file_no_process_of_which_recorded_code_is_a_problem_of_its_record(tmp_path):
    recorder = DepRecorder(tmp_path / "record", tmp_path)
    (tmp_path / "coverage").mkdir()
    assert recorder._code(tmp_path / "coverage", []) == ({}, {}, {}, [dep_recording.NO_DATA])
    assert "no process of this file recorded the code it ran" in dep_recording.NO_DATA


def test_without_coverage_py_where_it_is_needed_the_flag_is_refused(tmp_path, monkeypatch):
    """Python < 3.12, or the package's start-up hook not installed: coverage.py records."""
    monkeypatch.setattr(dep_recording, "start_hook_installed", lambda: False)
    monkeypatch.setitem(sys.modules, "coverage", None)  # import coverage raises ImportError
    with pytest.raises(dep_recording.RecordingError, match=r"--record-deps needs coverage\.py"):
        DepRecorder(tmp_path / "record", tmp_path)


@pytest.mark.parametrize(
    "executed",
    [
        [1],
        {"code": [["m.py", [1]]], "contexts": {"": [1]}},  # an index past the table
        {"code": [["m.py", ["1"]]], "contexts": {}},
        {"code": [["m.py"]], "contexts": {}},
        {"contexts": {}},
    ],
)
def test_a_damaged_code_table_makes_the_process_s_notes_unreadable(tmp_path, executed):
    notes = tmp_path / "notes"
    notes.mkdir()
    good = {"opened": [], "listed": [], "imported": [], "unbounded": []}
    (notes / "1-a.json").write_text(json.dumps({**good, "executed": executed}))
    found, problems = dep_recording._notes(notes)
    assert problems == ["the notes of process 1-a are unreadable"]
    assert found["executed"] == []


def test_a_missing_or_foreign_directory_is_an_error_naming_the_flag(tmp_path):
    with pytest.raises(RecordError, match=r"--deps-from .*: not a directory"):
        read_records(tmp_path / "nope")
    with pytest.raises(RecordError, match=r"no record\.json"):
        read_records(tmp_path)
    (tmp_path / "record.json").write_text("[1]")
    with pytest.raises(RecordError, match="expected"):
        read_records(tmp_path)


def test_damaged_test_records_are_listed_and_other_formats_unused(tmp_path):
    write_meta(tmp_path, "abc")
    write_test_record(tmp_path, FileRecord("registered/test_a.py", "abc", "passed"))
    (tmp_path / "tests" / "bad.json").write_text('{"format": 1, "test": 3}')
    records = read_records(tmp_path)
    assert list(records.tests) == ["registered/test_a.py"]
    assert len(records.damaged) == 1 and "bad.json" in records.damaged[0]
    (tmp_path / "record.json").write_text(json.dumps({"format": FORMAT + 1, "commit": "abc"}))
    assert not read_records(tmp_path).readable


@pytest.mark.parametrize(
    "field, value, damaged",
    [
        ("code", {"pkg/a.py": {"f": "d" * 64}}, False),
        ("code", {"pkg/a.py": {"f": 1}}, True),
        ("code", {"pkg/a.py": {"f": None}}, True),
        ("opened", {"data.json": None}, False),  # tried to open: no such file
        ("opened", {"data.json": True}, True),
        ("listed", ["plugins", 1], True),
        ("sources", {"pkg/a.py": ["d"]}, True),
        ("imported", "pkg.a", True),
    ],
)
def test_each_field_of_the_wrong_type_damages_the_record(tmp_path, field, value, damaged):
    write_meta(tmp_path, "abc")
    write_test_record(tmp_path, FileRecord("registered/test_a.py", "abc", "passed"))
    (path,) = (tmp_path / "tests").glob("*.json")
    path.write_text(json.dumps({**json.loads(path.read_text()), field: value}))
    records = read_records(tmp_path)
    assert (len(records.damaged), len(records.tests)) == ((1, 0) if damaged else (0, 1))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
KEYS = ("format", "test", "commit", "status", "code", "sources", "opened", "listed", "imported",
        "kernels", "unbounded", "problems")  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(values=st.dictionaries(st.sampled_from(KEYS), JSON, max_size=len(KEYS)))
def test_any_damaged_test_record_is_listed_never_raised(tmp_path_factory, values):
    directory = tmp_path_factory.mktemp("damaged")
    write_meta(directory, "abc")
    (directory / "tests" / "x.json").write_text(json.dumps({"format": FORMAT, **values}))
    records = read_records(directory)
    assert len(records.tests) + len(records.damaged) == 1


def test_records_of_shards_merge_by_copying(recorded, tmp_path):
    _, records = recorded
    merged = tmp_path / "merged"
    for half in (TESTS[:2], TESTS[2:]):  # two shards' artifacts, downloaded into one folder
        for path in half:
            record = read_records(records).tests[path]
            write_meta(merged, record.commit)
            write_test_record(merged, record)
    assert sorted(read_records(merged).tests) == TESTS


# ---------------------------------------------------------------- what a real run records


def test_the_record_holds_what_each_file_ran_opened_listed_and_started(recorded):
    root, records = recorded
    tests = read_records(records).tests
    assert read_records(records).commit == git(root, "rev-parse", "HEAD").strip()
    assert set(tests) == set(TESTS)
    assert all(not r.problems and r.status == "passed" for r in tests.values())
    assert set(tests["registered/test_add.py"].code["pkg/ops.py"]) == {MODULE, "add"}
    # the Python child process of test_data ran mul() too
    assert set(tests["registered/test_data.py"].code["pkg/ops.py"]) == {MODULE, "mul"}
    assert "data/cfg.json" in tests["registered/test_data.py"].opened
    assert "plugins" in tests["registered/test_listing.py"].listed
    assert "plugins" not in tests["registered/test_add.py"].listed
    assert tests["registered/test_program.py"].unbounded == ("ran cat plugins/one.txt",)
    assert "pkg.ops" in tests["registered/test_add.py"].imported


# ---------------------------------------------------------------- selections by record


def test_a_function_change_keeps_the_tests_that_ran_it(repo):
    root, records = repo
    edit(root, "pkg/ops.py", "return a * b", "return b * a")
    code, impact = select(root, records, "pkg/ops.py")
    assert code == 0
    assert how(impact) == {
        "registered/test_data.py": "ran mul()",  # through its child process
        "registered/test_mul.py": "ran mul()",
        "registered/test_program.py": "ran cat plugins/one.txt, whose reads are not recorded",
    }
    assert "5 of 5 file(s) decided by their record" in impact["records"][0]


def _as_if_hashed_elsewhere(records: Path, tmp_path: Path) -> Path:
    """A copy of ``records`` whose block hashes another interpreter made (an ``ast`` dump
    differs between Python versions): every hash differs from this interpreter's."""
    copy = tmp_path / "records-elsewhere"
    shutil.copytree(records, copy)
    for path in (copy / "tests").glob("*.json"):
        data = json.loads(path.read_text())
        data["code"] = {
            file: {key: f"other-python-{digest}" for key, digest in blocks.items()}
            for file, blocks in data["code"].items()
        }
        path.write_text(json.dumps(data))
    return copy


def test_a_record_hashed_by_another_python_keeps_only_what_ran_the_change(repo, tmp_path):
    root, records = repo
    elsewhere = _as_if_hashed_elsewhere(records, tmp_path)
    edit(root, "pkg/ops.py", "return a * b", "return b * a")
    _, impact = select(root, elsewhere, "pkg/ops.py")
    assert set(how(impact)) == {
        "registered/test_data.py", "registered/test_mul.py", "registered/test_program.py"
    }  # fmt: skip
    assert how(impact)["registered/test_mul.py"] == "ran mul()"


def test_a_record_not_of_the_recorded_commits_file_compares_its_own_hashes(repo, tmp_path):
    """When the recorded commit's file is not the one the record ran (another SHA-256), the
    record's own hashes are compared: hashed elsewhere, every block it ran counts as changed."""
    root, records = repo
    elsewhere = _as_if_hashed_elsewhere(records, tmp_path)
    for path in (elsewhere / "tests").glob("*.json"):
        data = json.loads(path.read_text())
        if "pkg/ops.py" in data["sources"]:
            data["sources"]["pkg/ops.py"] = "0" * 64
        path.write_text(json.dumps(data))
    edit(root, "pkg/ops.py", "return a * b", "return b * a")
    _, impact = select(root, elsewhere, "pkg/ops.py")
    assert how(impact)["registered/test_add.py"] == "ran add()"
    assert how(impact)["registered/test_mul.py"] == "ran mul()"


def test_an_empty_module_that_ran_keeps_its_tests_when_it_gains_code(repo, tmp_path):
    """``pkg/__init__.py`` is empty: its module level is its line 0. A record that noted the file
    without a block (the Python >= 3.12 recorder did before it kept line 0) keeps the test too."""
    root, records = repo
    importers = {"registered/test_add.py", "registered/test_data.py", "registered/test_mul.py"}
    blockless = tmp_path / "records-blockless"
    shutil.copytree(records, blockless)
    for path in (blockless / "tests").glob("*.json"):
        data = json.loads(path.read_text())
        if "pkg/__init__.py" in data["code"]:
            data["code"]["pkg/__init__.py"] = {}
        path.write_text(json.dumps(data))
    (root / "pkg" / "__init__.py").write_text('raise ImportError("broken")\n')
    for made in (records, blockless):
        _, impact = select(root, made, "pkg/__init__.py")
        assert importers <= set(how(impact)), made
        assert all(how(impact)[t].startswith("ran its module-level code") for t in importers)


def test_a_comment_change_keeps_only_the_unbounded_test(repo):
    root, records = repo
    edit(root, "pkg/ops.py", "# multiply", "# multiply two numbers")
    _, impact = select(root, records, "pkg/ops.py")
    assert list(how(impact)) == ["registered/test_program.py"]


@pytest.mark.parametrize(
    ("path", "text", "keeper", "way", "dropped"),
    [
        ("data/cfg.json", '{"x": 1, "y": 2}\n', "test_data", "opened it", "test_add"),
        ("plugins/two.txt", "2\n", "test_listing", "listed plugins/", "test_mul"),  # added
    ],
)
def test_a_file_read_or_added_where_listed_keeps_that_test(repo, path, text, keeper, way, dropped):
    root, records = repo
    (root / path).write_text(text)
    _, impact = select(root, records, path)
    assert how(impact)[f"registered/{keeper}.py"] == way
    assert f"registered/{dropped}.py" not in how(impact)


def test_a_new_test_file_has_no_record_and_the_static_closure_keeps_it(repo):
    root, records = repo
    (root / "registered" / "test_new.py").write_text(
        (root / "registered" / "test_add.py").read_text()
    )
    _, impact = select(root, records, "registered/test_new.py")
    assert "registered/test_new.py" in how(impact)
    kept = {e["path"]: e for e in impact["kept"]}
    assert "no valid record: no record" in kept["registered/test_new.py"]["note"]
    assert "registered/test_add.py" not in kept


def test_the_static_graph_is_built_only_for_tests_no_record_decides(repo, monkeypatch):
    """A test its record decides is kept or dropped by the record alone, so its import closure
    is not read; a changed module only recorded tests ran is still no "unused" change."""
    from ci_runner.impact import selection as selection_module

    built: list[list[str]] = []
    real = selection_module.DependencyGraph

    def spy(config, index, cache, tests, *rest, **named):
        built.append(sorted(tests))
        return real(config, index, cache, tests, *rest, **named)

    monkeypatch.setattr(selection_module, "DependencyGraph", spy)
    root, records = repo
    edit(root, "pkg/ops.py", "return a * b", "return b * a")
    _, impact = select(root, records, "pkg/ops.py")
    assert built == [[]]
    assert set(how(impact)) == {
        "registered/test_data.py", "registered/test_mul.py", "registered/test_program.py"
    }  # fmt: skip
    assert impact["unused_changes"] == []
    (root / "registered" / "test_new.py").write_text(
        (root / "registered" / "test_mul.py").read_text()
    )
    built.clear()
    _, impact = select(root, records, "pkg/ops.py")
    assert built == [["registered/test_new.py"]]  # no record: the static closure decides it
    assert how(impact)["registered/test_new.py"] == "imports"


def test_read_paths_are_what_valid_records_opened_ran_or_built():
    def record(test: str, problems: tuple[str, ...] = ()) -> FileRecord:
        return FileRecord(
            test=test,
            commit="c",
            status="passed",
            problems=problems,
            code={"pkg/ops.py": {MODULE: "h"}},
            opened={"data/cfg.json": "d"},
            kernels=(KernelUse("jit_add", ("csrc/add.cu",), {"include/add.cuh": "e"}),),
        )

    good = record("registered/test_a.py")
    bad = FileRecord(test="registered/test_b.py", commit="c", status="failed",
                     problems=("failed",), code={"pkg/other.py": {MODULE: "h"}})  # fmt: skip
    records = RecordSet(Path("r"), "c", FORMAT, {good.test: good, bad.test: bad})
    assert records.read_paths() == {
        "pkg/ops.py", "data/cfg.json", "csrc/add.cu", "include/add.cuh"
    }  # fmt: skip


def test_a_change_since_the_recorded_commit_makes_the_record_stale(repo):
    root, records = repo
    edit(root, "pkg/ops.py", "return a + b", "return b + a")
    commit_all(root, "moves on")  # not listed in the change below: the tree moved on
    (root / "data" / "cfg.json").write_text('{"x": 1, "y": 2}\n')
    _, impact = select(root, records, "data/cfg.json")
    kept = {e["path"]: e for e in impact["kept"]}
    assert "pkg/ops.py changed since the recorded commit" in kept["registered/test_add.py"]["note"]
    assert "1 by the static closure" in impact["records"][0]


def test_a_rule_still_runs_everything(repo):
    root, records = repo
    edit(root, "pyproject.toml", "[tool.ci-runner]", '[project]\nname = "p"\n[tool.ci-runner]')
    _, impact = select(root, records, "pyproject.toml")
    assert impact["runs_everything"]
    assert "not used; a rule runs everything" in impact["records"][0]


def test_a_failed_or_flaky_test_is_decided_statically(repo):
    root, records = repo
    broken = tmp = root.parent / "broken-record"
    shutil.copytree(records, tmp)
    data = read_records(tmp).tests["registered/test_add.py"]
    write_test_record(
        broken,
        FileRecord(
            data.test, data.commit, "failed", data.code, problems=("failed in the recording run",)
        ),
    )
    edit(root, "pkg/ops.py", "return a * b", "return b * a")
    _, impact = select(root, broken, "pkg/ops.py")
    kept = {e["path"]: e for e in impact["kept"]}
    assert "failed in the recording run" in kept["registered/test_add.py"]["note"]


def test_a_record_of_an_unknown_commit_is_not_used(repo):
    root, records = repo
    other = root.parent / "other-record"
    shutil.copytree(records, other)
    (other / "record.json").write_text(json.dumps({"format": FORMAT, "commit": "0" * 40}))
    _, impact = select(root, other, "pkg/ops.py")
    assert "is not in this clone" in impact["records"][0]


def test_the_dry_run_text_names_the_recorded_function(repo, capsys):
    root, records = repo
    edit(root, "pkg/ops.py", "return a + b", "return b + a")
    listing = root.parent / "list.txt"
    listing.write_text("pkg/ops.py\n")
    flags = ["--root", str(root), "--hw", "cpu", "--suite", "unit-cpu", "--dry-run"]
    assert main([*flags, "--changed-files", str(listing), "--deps-from", str(records)]) == 0
    out = capsys.readouterr().out
    assert "registered/test_add.py: pkg/ops.py -> registered/test_add.py [ran add()]" in out


def test_the_jit_load_log_becomes_kernel_uses(repo, tmp_path):
    root, _ = repo
    header = root / "kernels" / "include" / "lib.h"
    header.parent.mkdir(parents=True)
    header.write_text("#pragma once\n")
    log = tmp_path / "jit"
    log.mkdir()
    line = {
        "module": "m",
        "library": "/cache/m.so",
        "sources": [str(root / "kernels" / "k.cuh")],
        "dependencies": {str(header): "ab" * 32, "/usr/local/cuda/include/cuda.h": "cd" * 32},
    }
    (log / "123.jsonl").write_text(json.dumps(line) + "\nnot json\n")
    uses, problems = DepRecorder(tmp_path / "out", root)._kernels(log)
    assert uses == (KernelUse("m", ("kernels/k.cuh",), {"kernels/include/lib.h": "ab" * 32}),)
    assert problems == ["JIT load log 123.jsonl line 2 is not understood"]


def test_a_header_a_loaded_module_read_keeps_the_test(repo):
    root, records = repo
    header = root / "kernels" / "include" / "lib.h"
    header.parent.mkdir(parents=True)
    header.write_text("#pragma once\n")
    record = read_records(records).tests["registered/test_add.py"]
    use = KernelUse(
        "add_kernel", ("kernels/add.cuh",), {"kernels/include/lib.h": file_digest(header)}
    )
    merged = root.parent / "with-kernels"
    shutil.copytree(records, merged)
    write_test_record(merged, FileRecord(**{**record.__dict__, "kernels": (use,)}))
    commit_all(root, "a header")  # committed: the record's commit lacks it, so it is added
    header.write_text("#pragma once\n#define X 1\n")
    _, impact = select(root, merged, "kernels/include/lib.h")
    kept = {e["path"]: e for e in impact["kept"]}
    assert how(impact)["registered/test_add.py"] == "built JIT module add_kernel"
    # test_mul loaded no JIT module: the static closure decides it (here: an untraced file)
    assert "loaded no JIT module in the record" in kept["registered/test_mul.py"]["note"]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--deps-from", "x"], "--deps-from needs --changed-since or --changed-files"),
        (["--dry-run", "--record-deps", "x"], "--record-deps needs a real run"),
        (
            ["--changed-files", "-", "--deps-from", "/nonexistent"],
            "--deps-from /nonexistent: not a directory",
        ),
    ],
)
def test_bad_flags_exit_2_naming_the_flag(repo, flags, message, capsys, monkeypatch):
    root, _ = repo
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("pkg/ops.py\n"))
    code = main(["--root", str(root), "--hw", "cpu", "--suite", "unit-cpu", *flags])
    assert code == 2
    assert message in capsys.readouterr().err


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
