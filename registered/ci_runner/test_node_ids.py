"""Node ids (``path::Class::test[param]``): parsing, JUnit classnames back to node ids, coverage."""

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ci_runner import register_cpu_ci
from ci_runner.catalog.node_ids import (
    NodeId,
    NodeIdError,
    case_node_id,
    covers,
    is_whole_file_case,
    parse_node_id,
)
from ci_runner.execution.child import ci_runner_case_select as select

register_cpu_ci(est_time=2, suite="base-a-test-cpu")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("registered/test_x.py::test_a", NodeId("registered/test_x.py", "test_a")),
        ("registered/test_x.py::TestX::test_a", NodeId("registered/test_x.py", "TestX::test_a")),
        ("a/test_x.py::test_a[1-x::y]", NodeId("a/test_x.py", "test_a[1-x::y]")),
        ("./a/test_x.py::TestX::Inner::t[ ]", NodeId("a/test_x.py", "TestX::Inner::t[ ]")),
    ],
)
def test_parse_accepts_pytest_node_ids(text, expected):
    assert parse_node_id(text) == expected


@pytest.mark.parametrize(
    "text, message",
    [
        ("registered/test_x.py", "expected FILE::CASE"),
        ("/abs/test_x.py::test_a", "expected a .py file's path from the repository root"),
        ("../test_x.py::test_a", "expected a .py file's path from the repository root"),
        ("registered/test_x.txt::test_a", "expected a .py file's path"),
        ("registered/test_x.py::", "expected test_name, Class::test_name"),
        ("registered/test_x.py::1st", "expected test_name, Class::test_name"),
        ("registered/test_x.py::T::::t", "expected test_name, Class::test_name"),
        ("registered/test_x.py::t[a\nb]", "expected test_name, Class::test_name"),
        ("registered/test_x.py::t\x1b[31m", "expected test_name, Class::test_name"),
    ],
)
def test_parse_rejects_malformed_node_ids_naming_them(text, message):
    with pytest.raises(NodeIdError, match="node id") as error:
        parse_node_id(text)
    assert message in str(error.value)


def test_a_bare_path_names_the_whole_file_where_allowed():
    assert parse_node_id("registered/test_x.py", case_required=False) == NodeId(
        "registered/test_x.py"
    )
    assert str(NodeId("registered/test_x.py")) == "registered/test_x.py"


@pytest.mark.parametrize(
    "classname",
    [
        "registered.ci.test_x.TestX",  # rootdir = the repository root
        "ci.test_x.TestX",  # rootdir = registered/
        "test_x.TestX",  # rootdir = the file's directory
    ],
)
def test_case_node_id_undoes_pytests_classname_whatever_its_rootdir(classname):
    path = "registered/ci/test_x.py"
    assert case_node_id(path, classname, "test_a[2]") == f"{path}::TestX::test_a[2]"
    module_only = classname.removesuffix(".TestX")
    assert case_node_id(path, module_only, "test_b") == f"{path}::test_b"


identifier = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)


@given(
    dirs=st.lists(identifier, max_size=3),
    module=identifier,
    classes=st.lists(st.from_regex(r"Test[A-Z][a-z]{0,5}", fullmatch=True), max_size=2),
    name=identifier,
    param=st.one_of(st.just(""), st.text(min_size=0, max_size=6).map(lambda t: f"[{t}]")),
    cut=st.integers(min_value=0, max_value=3),
)
def test_case_node_id_round_trips_every_junit_spelling(dirs, module, classes, name, param, cut):
    """pytest's classname is the node id's module path with dots, then the class chain; any
    rootdir above the file drops a leading part of it."""
    path = "/".join([*dirs, f"test_{module}.py"])
    module_parts = path.removesuffix(".py").split("/")
    cut = min(cut, len(module_parts) - 1)
    classname = ".".join([*module_parts[cut:], *classes])
    case = f"{name}{param}".replace("\n", "").replace("\r", "")
    expected = "::".join([path, *classes, case])
    assert case_node_id(path, classname, case) == expected


def test_covers_a_case_its_class_its_parameters_and_its_file():
    pattern = NodeId("r/test_x.py", "TestX::test_a")
    assert covers(pattern, "r/test_x.py::TestX::test_a")
    assert covers(pattern, "r/test_x.py::TestX::test_a[3]")
    assert not covers(pattern, "r/test_x.py::TestX::test_ab")
    assert covers(NodeId("r/test_x.py", "TestX"), "r/test_x.py::TestX::test_b")
    assert covers(NodeId("r/test_x.py"), "r/test_x.py::test_c")
    assert not covers(NodeId("r/test_x.py"), "r/test_x.pyc::test_c")


@given(
    entry=st.sampled_from(["r/test_x.py::T", "r/test_x.py::T::t", "r/test_x.py::t", "r/test_x.py"]),
    case=st.sampled_from(
        ["r/test_x.py::T::t", "r/test_x.py::T::t[1]", "r/test_x.py::Tx::t", "r/test_x.py::t",
         "r/test_x.py::tt", "r/test_x.py::t[a::b]", "r/test_x.pyc::t"]
    ),
)  # fmt: skip
def test_the_child_selects_cases_by_the_same_rule(entry, case):
    """The child bootstrap (standard library only) cannot import this module: its rule for
    ``--tests`` entries must agree with :func:`covers`."""
    select._loaded, select._only, select._skip = True, (entry,), frozenset()
    try:
        path, _, rest = entry.partition("::")
        assert select.wanted(case) == covers(NodeId(path, rest), case)
    finally:
        select._loaded, select._only = False, None


def test_the_whole_file_case_is_recognised():
    assert is_whole_file_case("r/a/test_x.py", "r.a.test_x", "test_x.py")
    assert not is_whole_file_case("r/a/test_x.py", "r.a.test_x", "test_a")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
