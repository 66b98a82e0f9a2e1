"""Collection parses a file's marker prefix and its tail, not its body: the scan must find exactly
the registrations and problems of a full parse, for every layout, except a syntax error in the
skipped body, which is then reported only when the file runs."""

import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_runner import register_cpu_ci
from ci_runner.catalog.syntax import DEFAULT_SYNTAX
from ci_runner.collect.file_scan import FileScan, scan_file, scan_parsed
from ci_runner.collect.prefix_parse import _prefix_and_tail
from ci_runner.collect.scan import parse_source

register_cpu_ci(est_time=12, suite="base-a-test-cpu")

PATH = "registered/test_x.py"
HEAD = "import sys\n\nimport pytest\n\nfrom ci_runner import register_cpu_ci\n\n"
MARKER = 'register_cpu_ci(est_time=3, suite="unit")\n'
MAIN = '\n\nif __name__ == "__main__":\n    sys.exit(pytest.main([__file__]))\n'
BODY = "".join(
    f'\n\ndef test_{i}():\n    """Case {i}."""\n    value = [{i},\n             {i + 1}]\n'
    f"    assert value[0] < value[1]  # a comment\n"
    for i in range(40)
)


def full_scan(text: str) -> FileScan:
    """The reference: the whole file parsed."""
    data = text.encode()
    tree, problem = parse_source(data, PATH)
    if tree is None:
        return FileScan((), (problem,) if problem else ())
    return scan_parsed(tree, PATH, data, DEFAULT_SYNTAX)


def prefix_used(text: str) -> bool:
    return _prefix_and_tail(text.encode(), DEFAULT_SYNTAX) is not None


def assert_same(text: str) -> FileScan:
    scan = scan_file(text.encode(), PATH, DEFAULT_SYNTAX)
    assert scan == full_scan(text)
    return scan


LAYOUTS = {
    "marker at the top": (HEAD + MARKER + BODY + MAIN, True),
    "marker after a long body": (HEAD + BODY + "\n" + MARKER + MAIN, True),
    "marker text in a later comment": (
        HEAD + MARKER + BODY + "\n# register_cpu_ci(x)\n" + MAIN,
        True,
    ),
    "marker text in a later string": (
        HEAD + MARKER + BODY + '\nNOTE = """\nregister_cpu_ci(est_time=1)\n"""\n' + MAIN,
        False,  # the cut falls inside the string: the prefix does not parse
    ),
    "multi-line call": (
        HEAD + "register_cpu_ci(\n    est_time=3,\n    suite='unit',\n)\n" + BODY + MAIN,
        True,
    ),
    "unindented arguments": (
        HEAD + "register_cpu_ci(est_time=3,\nsuite='unit')\n" + BODY + MAIN,
        False,  # the line after the call is read as a statement start: the prefix does not parse
    ),
    "two registrations, a body between": (
        HEAD + MARKER + BODY + 'register_cpu_ci(est_time=1, suite="other")\n' + BODY + MAIN,
        True,
    ),
    "duplicate registration": (HEAD + MARKER + BODY + MARKER + MAIN, True),
    "assignment-bound marker used after the body": (
        "import sys\nimport pytest\nimport ci_runner\n\nreg = ci_runner.register_cpu_ci\n"
        + BODY
        + '\nreg(est_time=2, suite="unit")\n'
        + MAIN,
        True,
    ),
    "import alias used after the body": (
        "import sys\nimport pytest\nfrom ci_runner import register_cpu_ci as reg\n"
        + BODY
        + '\nreg(est_time=2, suite="unit")\n'
        + MAIN,
        True,
    ),
    "marker hidden in a function": (HEAD + "def helper():\n    " + MARKER + BODY + MAIN, True),
    "marker under an if with an else": (
        HEAD + "if sys.platform:\n    " + MARKER + "else:\n    pass\n" + BODY + MAIN,
        True,
    ),
    "marker under try/except": (
        HEAD + "try:\n    " + MARKER + "except ImportError:\n    pass\n" + BODY + MAIN,
        True,
    ),
    "no __main__ block": (HEAD + MARKER + BODY, True),
    "__main__ block drops pytest's result": (
        HEAD + MARKER + BODY + '\nif __name__ == "__main__":\n    pytest.main([__file__])\n',
        True,
    ),
    "two __main__ blocks": (HEAD + MARKER + BODY + MAIN + BODY + MAIN, False),  # docstrings
    "two __main__ blocks, no quotes between": (HEAD + MARKER + BODY + MAIN + MAIN, True),
    "a __main__ block inside a string of the body": (
        HEAD + MARKER + 'DOC = """\nif __name__ == "__main__":\n    pass\n"""\n' + BODY,
        False,  # the tail holds the closing quotes: parsed whole
    ),
    "an unindented if inside brackets": (
        HEAD + MARKER + "VALUE = (1\nif sys.platform else 2)\n" + BODY + MAIN,
        False,  # the tail has a closing bracket of the body: parsed whole
    ),
    "a backslash before the tail": (
        HEAD + MARKER + "VALUE = 1 + \\\n2\n" + BODY + MAIN,
        True,
    ),
    "marker in the last statement": (HEAD + BODY + MARKER, False),
    "mention inside an unterminated-looking string": (
        HEAD + 'TEXT = """\nregister_cpu_ci(est_time=1)\nstill text\n"""\n' + MARKER + BODY + MAIN,
        True,
    ),
    "syntax error before the marker": (
        HEAD + "def broken(:\n    pass\n" + MARKER + BODY + MAIN,
        False,
    ),
    "syntax error in the marker call": (
        HEAD + "register_cpu_ci(est_time=3,, suite='u')\n" + BODY + MAIN,
        False,
    ),
    "syntax error in the __main__ block": (
        HEAD
        + MARKER
        + BODY
        + '\nif __name__ == "__main__":\n    sys.exit(pytest.main([__file__])\n',
        False,
    ),
    "encoding declaration": ("# -*- coding: latin-1 -*-\n" + HEAD + MARKER + BODY + MAIN, False),
    "form feed": (HEAD + MARKER + "\f\n" + BODY + MAIN, False),
    "no marker at all": ("import sys\n" + BODY + MAIN, False),
}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_the_scan_equals_a_full_parse(name):
    text, skips_body = LAYOUTS[name]
    assert prefix_used(text) is skips_body
    assert_same(text)


def test_the_layouts_register_and_report_what_they_should():
    """The reference itself finds the registrations and problems (the comparison is not vacuous)."""
    regs = assert_same(LAYOUTS["two registrations, a body between"][0]).registrations
    assert [r.suite for r in regs] == ["unit", "other"]
    alias = assert_same(LAYOUTS["assignment-bound marker used after the body"][0])
    assert [(r.suite, r.est_time) for r in alias.registrations] == [("unit", 2)]
    hidden = assert_same(LAYOUTS["marker hidden in a function"][0])
    assert "inside function 'helper'" in hidden.problems[0].message
    duplicate = assert_same(LAYOUTS["duplicate registration"][0])
    assert "duplicate registration" in duplicate.problems[0].message
    missing = assert_same(LAYOUTS["no __main__ block"][0])
    assert "no `if __name__" in missing.entry_problems[0].message
    dropped = assert_same(LAYOUTS["__main__ block drops pytest's result"][0])
    assert dropped.entry_problems
    assert not assert_same(LAYOUTS["two __main__ blocks, no quotes between"][0]).entry_problems
    before = assert_same(LAYOUTS["syntax error before the marker"][0])
    assert before.problems[0].message.startswith("syntax error")


def test_a_syntax_error_in_the_skipped_body_is_reported_only_by_a_full_parse():
    """The one difference: the body after the last marker statement is not parsed."""
    text = HEAD + MARKER + BODY + "def broken(:\n    pass\n" + BODY + MAIN
    assert prefix_used(text)
    scan = scan_file(text.encode(), PATH, DEFAULT_SYNTAX)
    assert [r.suite for r in scan.registrations] == ["unit"]
    assert scan.problems == () and scan.entry_problems == ()
    reference = full_scan(text)
    assert reference.registrations == ()
    assert reference.problems[0].message.startswith("syntax error")


# --- generated modules ---------------------------------------------------------------------------

_ARGS = st.sampled_from(
    [
        'est_time=3, suite="unit"',
        "est_time=0, suite='unit', nightly=True",
        'est_time=1, suite="unit", disabled="flaky"',
        "est_time=2",
        "3, 'unit'",
        'est_time=-1, suite="unit"',
        'est_time=4, suite="unit", bogus=1',
        '\n    est_time=5,\n    suite="multi",\n',
    ]
)
_NAMES = st.sampled_from(["register_cpu_ci", "register_cuda_ci", "register_foo_ci", "reg"])


@st.composite
def _snippet(draw) -> str:
    name, args = draw(_NAMES), draw(_ARGS)
    i = draw(st.integers(0, 9))
    return draw(
        st.sampled_from(
            [
                f"{name}({args})\n",
                "from ci_runner import register_cpu_ci as reg\n",
                "import ci_runner\nreg = ci_runner.register_cuda_ci\n",
                f"def test_{i}():\n    assert {i} == {i}\n",
                f'class Case{i}:\n    """Doc {i}."""\n\n    def test(self):\n        x = ({i},\n{i})\n',
                f"def helper_{i}():\n    {name}({args})\n",
                f"if sys.platform:\n    {name}({args})\nelse:\n    pass\n",
                f"# {name}({args})\n",
                f'NOTE_{i} = """\n{name}({args})\nif __name__ == "__main__":\n"""\n',
                f"VALUE_{i} = (1\nif sys else {i})\n",
                f"VALUE_{i} = {i} + \\\n    {i}\n",
                "try:\n    import torch\nexcept ImportError:\n    torch = None\n",
                'if __name__ == "__main__":\n    sys.exit(pytest.main([__file__]))\n',
                'if __name__ == "__main__":\n    pytest.main([__file__])\n',
                f"x_{i} = [\n    {name},\n]\n",
                "\n",
            ]
        )
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_snippet(), min_size=1, max_size=14))
def test_prefix_parse_equals_full_parse_on_generated_modules(snippets):
    text = "import sys\nimport pytest\n" + "".join(snippets)
    tree, _ = parse_source(text.encode(), PATH)
    if tree is None:
        return  # only files that parse whole are compared (see the test above for the others)
    assert_same(text)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
