"""With records, the static graph is built from the tests no record decides: on generated trees
(packages or plain directories of tests, helpers beside them, ``sys.path`` edits in tests and
``conftest.py`` files, a package importing itself), that graph keeps every undecided test the
graph of all tests keeps, for any change and any decided subset
(verification/reduced_graph_check.py runs the same comparison on SGLang's tree)."""

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))

import repo_root  # noqa: F401  (the repository root on sys.path)
from impact_tree import impact_catalog, registered_file

from ci_runner import register_cpu_ci
from ci_runner.catalog import load_catalog
from ci_runner.collect import collect
from ci_runner.impact import Change, ChangeSet
from ci_runner.select import select
from testing.graph_roots import kept_undecided
from testing.tree_builder import write_tree

register_cpu_ci(est_time=15, suite="base-a-test-cpu")

DIRS = ("registered/a", "registered/b", "registered/b/inner")
PATH_EDIT = "import os\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '{up}tools'))\n"


def _helper(directory: str) -> str:
    return f"help_{directory.rsplit('/', 1)[-1]}"


@st.composite
def trees(draw):
    """A tree's files, its tests, and a changed file."""
    files = {"pkg/__init__.py": "", "tools/tool_x.py": "X = 1\n", "tools/tool_y.py": "Y = 1\n"}
    for i in range(4):
        imports = draw(st.lists(st.integers(0, 3), max_size=2, unique=True))
        files[f"pkg/m{i}.py"] = "".join(f"import pkg.m{j}\n" for j in imports if j != i) + "V = 1\n"
    for directory in DIRS:
        if draw(st.booleans()):
            files[f"{directory}/__init__.py"] = ""
        files[f"{directory}/{_helper(directory)}.py"] = "import pkg.m0\n"
        if draw(st.booleans()):
            up = "../" * (directory.count("/") + 1)
            files[f"{directory}/conftest.py"] = "import sys\n" + PATH_EDIT.format(up=up)
    tests = []
    for index in range(draw(st.integers(2, 5))):
        directory = draw(st.sampled_from(DIRS))
        lines = [f"import pkg.m{j}" for j in draw(st.lists(st.integers(0, 3), max_size=2))]
        lines += [f"import {_helper(d)}" for d in draw(st.lists(st.sampled_from(DIRS), max_size=2))]
        if draw(st.booleans()):
            lines.append(PATH_EDIT.format(up="../" * (directory.count("/") + 1)).rstrip())
            lines.append(f"import tool_{draw(st.sampled_from('xy'))}")
        path = f"{directory}/test_t{index}.py"
        files[path] = registered_file("\n".join(lines), suite="unit-cpu")
        tests.append(path)
    changed = draw(st.sampled_from(sorted(p for p in files if p.endswith(".py"))))
    decided = set(draw(st.lists(st.sampled_from(tests), unique=True)))
    return files, decided, changed


def _found_once() -> tuple[dict[str, str], set[str], str]:
    """A tree hypothesis found on 2026-11-28: registered/b is the directory of a decided test
    only, so only the whole suite's bases resolve the other test's ``import help_b`` there."""
    files = {"pkg/__init__.py": "", "pkg/m0.py": "V = 1\n", "registered/b/__init__.py": ""}
    files["registered/b/help_b.py"] = "import pkg.m0\n"
    files["registered/a/test_t0.py"] = registered_file("import help_b", suite="unit-cpu")
    files["registered/b/test_t1.py"] = registered_file("", suite="unit-cpu")
    return files, {"registered/b/test_t1.py"}, "pkg/__init__.py"


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(trees())
@example(_found_once())
def test_the_graph_of_the_undecided_tests_keeps_what_the_full_graph_keeps(tmp_path_factory, tree):
    files, decided, changed = tree
    root = write_tree(tmp_path_factory.mktemp("tree"), impact_catalog(""), files)
    catalog = load_catalog(root)
    selection = select(collect(catalog).registrations, catalog, "cpu", ["unit-cpu"], False)
    change_set = ChangeSet("t", (Change(changed),))
    full = kept_undecided(selection, catalog, change_set, decided, full=True)
    reduced = kept_undecided(selection, catalog, change_set, decided, full=False)
    dropped = {test: full[test] for test in set(full) - set(reduced)}
    assert not dropped, f"{changed}: kept by the full graph only: {dropped}"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
