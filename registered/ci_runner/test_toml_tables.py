"""A changed pyproject.toml / ci-runner.toml: which tables changed, and a change confined to
tables no test run reads is an opened file (kept by the records that opened it), not a reason
to run everything; on generated trees, statically (--changed-since) and with --deps-from."""

import shutil
import sys
from pathlib import Path

import pytest
import tomlkit
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))

from impact_tree import git, git_repo, make_impact_repo, run_dry
from recorded_tree import FILES, commit_all, edit, recorded_repo, select

from ci_runner import register_cpu_ci
from ci_runner.impact.toml_tables import NOT_READ_BY_TESTS, changed_tables

register_cpu_ci(est_time=20, suite="base-a-test-cpu")

WHOLE = "runs the whole suite"


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "impact-cache"))


# ---------------------------------------------------------------- the changed tables


def _flatten(value: object, path: tuple = ()) -> dict[tuple, object]:
    """Every leaf of a parsed document by its key path (an empty table is a leaf)."""
    if isinstance(value, dict) and value:
        out: dict[tuple, object] = {}
        for key, item in value.items():
            out.update(_flatten(item, (*path, key)))
        return out
    return {path: value}


def _table_of(path: tuple) -> str:
    """The table a leaf belongs to, from its key path alone (the oracle's rule)."""
    if path[0] != "tool" or len(path) == 1:
        return path[0]
    if path[1] == "ci-runner" and len(path) > 2 and path[2] in ("change-impact", "execution"):
        return f"tool.ci-runner.{path[2]}"
    return f"tool.{path[1]}"


def _oracle(old: dict, new: dict) -> set[str]:
    before, after = _flatten(old), _flatten(new)
    return {_table_of(p) for p in set(before) | set(after) if before.get(p) != after.get(p)}


BASE = {
    "version": 1,
    "project": {"name": "p", "dependencies": ["a"]},
    "build-system": {"requires": ["setuptools"]},
    "tool": {
        "ruff": {"line-length": 100, "lint": {"select": ["E"]}},
        "mypy": {"strict": True},
        "pytest": {"ini_options": {"addopts": "-q"}},
        "coverage": {"run": {"branch": True}},
        "ci-runner": {
            "registered-dir": "registered",
            "change-impact": {"ignore": ["docs/**"]},
            "execution": {"retry-wait-seconds": 1},
            "policy": {"default": "run"},
        },
    },
}
PLACES = [
    ("version",),
    ("project", "dependencies"),
    ("project", "version"),
    ("build-system", "requires"),
    ("tool", "ruff", "line-length"),
    ("tool", "ruff", "lint", "select"),
    ("tool", "black", "line-length"),
    ("tool", "mypy", "strict"),
    ("tool", "pytest", "ini_options", "addopts"),
    ("tool", "coverage", "run", "branch"),
    ("tool", "ci-runner", "registered-dir"),
    ("tool", "ci-runner", "policy", "default"),
    ("tool", "ci-runner", "change-impact", "ignore"),
    ("tool", "ci-runner", "execution", "retry-wait-seconds"),
    ("tool", "uv", "index-url"),
]
VALUES = st.one_of(
    st.integers(-3, 3), st.booleans(), st.text("ab", max_size=2), st.lists(st.integers(0, 2))
)
EDITS = st.lists(st.tuples(st.sampled_from(PLACES), st.none() | VALUES), max_size=4)


def _apply(document: dict, place: tuple, value: object) -> None:
    """Set ``place`` to ``value`` (None: delete it), making the tables on the way."""
    table = document
    for key in place[:-1]:
        if not isinstance(table.get(key), dict):
            table[key] = {}
        table = table[key]
    if value is None:
        table.pop(place[-1], None)
    else:
        table[place[-1]] = value


@settings(max_examples=150, deadline=None)
@given(EDITS, EDITS)
def test_the_changed_tables_are_those_whose_values_differ(old_edits, new_edits):
    import copy
    import tomllib

    old, new = copy.deepcopy(BASE), copy.deepcopy(BASE)
    for place, value in old_edits:
        _apply(old, place, value)
    for place, value in new_edits:
        _apply(new, place, value)
    old_text, new_text = tomlkit.dumps(old), "# a comment\n" + tomlkit.dumps(new)
    expected = _oracle(tomllib.loads(old_text), tomllib.loads(new_text))
    change = changed_tables(old_text.encode(), new_text.encode(), "pyproject.toml")
    assert set(change.tables) == expected
    # any changed table outside the short list runs everything
    assert bool(change.run_everything()) == bool(expected - set(NOT_READ_BY_TESTS))


def test_suite_run_settings_and_the_own_file():
    suite = '[[tool.ci-runner.suites]]\nname = "a"\nhw = "cpu"\n{}'
    moved = changed_tables(
        suite.format("").encode(),
        suite.format('launcher = "pytest"\n').encode(),
        "x/pyproject.toml",
    )
    assert moved.run_everything() == ("tool.ci-runner.suites",)
    nightly = changed_tables(
        suite.format("").encode(), suite.format("nightly = true\n").encode(), "pyproject.toml"
    )
    assert nightly.tables == ("tool.ci-runner",) and not nightly.run_everything()
    own = changed_tables(b"[policy]\ndefault = 1\n", b"[policy]\ndefault = 2\n", "ci-runner.toml")
    assert own.tables == ("tool.ci-runner",) and not own.run_everything()
    own = changed_tables(
        b"[change-impact]\n", b'[change-impact]\nignore = ["a"]\n', "ci-runner.toml"
    )
    assert own.run_everything() == ("tool.ci-runner.change-impact",)


def test_a_side_that_does_not_parse_names_the_line():
    change = changed_tables(b"[tool.ruff]\nx = 1\n", b"[tool.ruff]\nx = 1\ny =\n", "pyproject.toml")
    assert change.unreadable.startswith("the new side does not parse as TOML (")
    assert "line 3" in change.unreadable


# ---------------------------------------------------------------- static selection


def _changed_since(tmp_path: Path, old: str, new: str, path: str = "pyproject.toml") -> dict:
    """The impact tree with ``old`` appended to ``path``, committed, then ``new`` instead,
    committed; the dry run of ``--changed-since HEAD~1``."""
    root = make_impact_repo(tmp_path / "repo", {"sub/pyproject.toml": ""})
    catalog = (root / path).read_text()
    (root / path).write_text(catalog + old)
    git_repo(root)
    (root / path).write_text(catalog + new)
    git(root, "commit", "-q", "-am", "edit")
    code, document = run_dry(root, "--changed-since", "HEAD~1")
    assert code == 0
    return document["change_impact"]


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        (
            "\n[tool.ruff]\nline-length = 100\n",
            "\n[tool.ruff]\nline-length = 99\n",
            "pyproject.toml changed only in [tool.ruff] line-length, which no test run reads "
            "through the test tooling; without a record nothing proves that no test reads the "
            "file itself",
        ),
        (
            '\n[project]\nname = "p"\ndependencies = []\n',
            '\n[project]\nname = "p"\ndependencies = ["x"]\n',
            "pyproject.toml changed ([project] dependencies): packaging or the catalog",
        ),
        (
            "",
            "\n[tool.ruff]\nline-length = 99\n[tool.pytest.ini_options]\naddopts = '-x'\n",
            "pyproject.toml changed ([tool.pytest]): packaging or the catalog",
        ),
        (
            "\n[tool.ruff]\nline-length = 100\n",
            "\n[tool.ruff]\nline-length = = 99\n",
            "sub/pyproject.toml changed (packaging or the catalog; the new side does not parse "
            "as TOML (Invalid value (at line 3, column 15))",
        ),
    ],
)
def test_a_toml_change_statically_runs_everything_and_says_why(tmp_path, old, new, reason):
    path = "sub/pyproject.toml" if reason.startswith("sub/") else "pyproject.toml"
    impact = _changed_since(tmp_path, old, new, path)
    assert impact["runs_everything"] is True
    assert impact["run_everything_reasons"][0].startswith(reason)


def test_a_change_impact_key_runs_everything(tmp_path):
    root = make_impact_repo(tmp_path / "repo")
    git_repo(root)
    edit(root, "pyproject.toml", 'run-everything = ["tooling/**"]', "run-everything = []")
    git(root, "commit", "-q", "-am", "edit")
    code, document = run_dry(root, "--changed-since", "HEAD~1")
    assert code == 0
    assert document["change_impact"]["run_everything_reasons"] == [
        "pyproject.toml changed ([tool.ci-runner.change-impact] run-everything): packaging or "
        "the catalog"
    ]


# ---------------------------------------------------------------- with records


READS_CONFIG = (
    "import sys\nimport tomllib\nfrom pathlib import Path\n\nimport pytest\n\n"
    "from ci_runner import register_cpu_ci\n\n"
    'register_cpu_ci(est_time=5, suite="unit-cpu")\n\n\n'
    "def test_reads():\n"
    '    assert "tool" in tomllib.loads(Path("pyproject.toml").read_text())\n\n\n'
    "def test_plain():\n    assert 1 + 1 == 2\n\n\n"
    'if __name__ == "__main__":\n'
    '    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))\n'
)
RECORDED = {
    "pkg/__init__.py": "",
    "pkg/ops.py": FILES["pkg/ops.py"],
    "registered/test_add.py": FILES["registered/test_add.py"],
    "registered/test_config.py": READS_CONFIG,
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A repository whose ``test_config`` reads pyproject.toml and ``test_add`` does not (pytest
    itself reads it to find its configuration: not a read of the test's), recorded once."""
    return recorded_repo(tmp_path_factory.mktemp("toml"), RECORDED)


def test_a_lint_or_catalog_change_keeps_the_tests_that_opened_it(recorded):
    root, records = recorded
    text = (root / "pyproject.toml").read_text()
    try:
        for extra in ("\n[tool.ruff]\nline-length = 99\n", "\n[tool.ci-runner.policy]\n"):
            (root / "pyproject.toml").write_text(text + extra)
            code, impact = select(root, records, "pyproject.toml")
            assert code == 0 and not impact["runs_everything"], impact
            assert [(e["path"], e["chain"][-1]["how"]) for e in impact["kept"]] == [
                ("registered/test_config.py", "opened it")
            ]
            cases = impact["kept"][0]["cases"]  # only the case that read it runs
            assert cases["of"] == 2 and [c["id"] for c in cases["run"]] == [
                "registered/test_config.py::test_reads"
            ]
        # a change to a suite's settings: the new catalog plans it, and it is how files run
        edit(root, "pyproject.toml", "timeout-per-file = 300", "timeout-per-file = 200")
        code, impact = select(root, records, "pyproject.toml")
        assert impact["runs_everything"] is True
        assert "[[tool.ci-runner.suites]] run settings" in impact["run_everything_reasons"][0]
        # packaging runs everything, records or not
        (root / "pyproject.toml").write_text(text + '\n[project]\nname = "p"\n')
        code, impact = select(root, records, "pyproject.toml")
        assert impact["run_everything_reasons"] == [
            "pyproject.toml changed ([project]): packaging or the catalog"
        ]
    finally:
        (root / "pyproject.toml").write_text(text)


def test_the_catalog_a_selection_plans_with_is_the_new_one(recorded, tmp_path):
    root, records = recorded
    copy = tmp_path / "repo"
    shutil.copytree(root, copy)
    edit(copy, "pyproject.toml", 'registered-dir = "registered"', 'registered-dir = "moved"')
    (copy / "moved").mkdir()
    shutil.copy(copy / "registered/test_add.py", copy / "moved/test_add.py")
    commit_all(copy, "move the registered dir")
    code, impact = select(copy, records, "pyproject.toml")
    # the new catalog selected the one file under moved/; no record decides it, and without
    # one nothing proves it does not read pyproject.toml: the whole suite runs, saying why
    assert code == 0 and impact["files_before"] == 1 and impact["runs_everything"]
    assert impact["run_everything_reasons"] == [
        "pyproject.toml changed only in [tool.ci-runner] registered-dir, which no test run "
        "reads through the test tooling; without a record nothing proves that no test reads "
        "the file itself"
    ]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
