"""scan_markers: every accepted spelling of a registration, and every malformed one."""

import ast
import sys
import textwrap

import pytest

from ci_runner import register_cpu_ci
from ci_runner.collect import scan_markers
from ci_runner.collect.scan import scan_tree
from ci_runner.markers import MARKER_BACKENDS

register_cpu_ci(est_time=3, suite="base-a-test-cpu")


def scan(source: str):
    return scan_markers(textwrap.dedent(source), "registered/test_x.py")


def only_registration(source: str):
    registrations, problems = scan(source)
    assert problems == []
    assert len(registrations) == 1
    return registrations[0]


def only_problem(source: str) -> str:
    _, problems = scan(source)
    assert len(problems) == 1, problems
    return str(problems[0])


# --- accepted shapes -------------------------------------------------------------------------


def test_keyword_call_records_every_field_and_position():
    reg = only_registration(
        """\
        from ci_runner import register_cuda_ci

        register_cuda_ci(est_time=30, suite="unit-1-gpu", nightly=False, disabled=None)
        """
    )
    assert reg.path == "registered/test_x.py"
    assert (reg.backend, reg.suite, reg.est_time, reg.nightly, reg.disabled) == (
        "cuda",
        "unit-1-gpu",
        30.0,
        False,
        None,
    )
    assert (reg.line, reg.col) == (3, 1)


def test_positional_arguments_follow_the_marker_signature():
    reg = only_registration('register_cuda_ci(12.5, "nightly-1-gpu", True, "flaky on H100")')
    assert (reg.est_time, reg.suite, reg.nightly, reg.disabled) == (
        12.5,
        "nightly-1-gpu",
        True,
        "flaky on H100",
    )


@pytest.mark.parametrize(
    "source",
    [
        "import ci_runner\nci_runner.register_cuda_ci(est_time=1, suite='s')",
        "import ci_runner as cr\ncr.register_cuda_ci(est_time=1, suite='s')",
        "import ci_runner.markers\nci_runner.markers.register_cuda_ci(est_time=1, suite='s')",
        "from ci_runner import markers\nmarkers.register_cuda_ci(est_time=1, suite='s')",
        "from ci_runner import register_cuda_ci as reg\nreg(est_time=1, suite='s')",
        "from ci_runner.markers import register_cuda_ci as r\nr(1, 's')",
        "register_cuda_ci(est_time=1, suite='s')",
    ],
    ids=[
        "attr",
        "module-alias",
        "submodule",
        "markers-module",
        "alias",
        "alias-positional",
        "bare",
    ],
)
def test_attribute_and_alias_spellings_are_collected(source):
    reg = only_registration(source)
    assert (reg.backend, reg.suite, reg.est_time) == ("cuda", "s", 1.0)


@pytest.mark.parametrize("marker,backend", sorted(MARKER_BACKENDS.items()))
def test_each_marker_maps_to_its_backend(marker, backend):
    assert only_registration(f"{marker}(est_time=1, suite='s')").backend == backend


def test_several_backends_and_suites_in_one_file():
    registrations, problems = scan(
        """\
        register_cuda_ci(est_time=30, suite="unit-1-gpu")
        register_cuda_ci(est_time=60, suite="nightly-1-gpu", nightly=True)
        register_cpu_ci(est_time=5, suite="unit-cpu", disabled="no GPU needed, too slow")
        """
    )
    assert problems == []
    assert [(r.backend, r.suite, r.line) for r in registrations] == [
        ("cuda", "unit-1-gpu", 1),
        ("cuda", "nightly-1-gpu", 2),
        ("cpu", "unit-cpu", 3),
    ]


def test_signed_and_float_literals_are_literals():
    assert only_registration("register_cpu_ci(est_time=+2.5, suite='s')").est_time == 2.5


def test_scan_is_catalog_independent():
    assert only_registration("register_cpu_ci(est_time=1, suite='no-such-suite')").suite == (
        "no-such-suite"
    )


def test_other_calls_and_strings_are_ignored():
    registrations, problems = scan(
        """\
        print("register_cuda_ci(est_time=1, suite='s')")
        def helper():
            return 1
        """
    )
    assert (registrations, problems) == ([], [])


# --- malformed calls -------------------------------------------------------------------------

P = "registered/test_x.py"


@pytest.mark.parametrize(
    "source,expected",
    [
        (
            "EST = 3\nregister_cpu_ci(est_time=EST, suite='s')",
            f"{P}:2:26: est_time must be a literal (a positive number of seconds), got `EST`: "
            "the runner reads registrations without running the file",
        ),
        (
            "register_cpu_ci(est_time=30 * 2, suite='s')",
            f"{P}:1:26: est_time must be a literal (a positive number of seconds), got `30 * 2`",
        ),
        (
            "register_cpu_ci(est_time=1, suite=f'{x}-cpu')",
            f"{P}:1:35: suite must be a literal (a string), got `f'{{x}}-cpu'`",
        ),
        (
            "register_cpu_ci(est_time=1, suite='s', nightly=FLAG)",
            f"{P}:1:48: nightly must be a literal (True or False), got `FLAG`",
        ),
        (
            "register_cpu_ci(est_time=1, suite='s', disabled=REASON)",
            f"{P}:1:49: disabled must be a literal (a reason string or None), got `REASON`",
        ),
        (
            "register_cpu_ci(*args)",
            f"{P}:1:17: starred argument *args is not supported in register_cpu_ci()",
        ),
        (
            "register_cpu_ci(**kwargs)",
            f"{P}:1:17: **kwargs is not supported in register_cpu_ci()",
        ),
        (
            "register_cpu_ci(1, 's', False, None, 5)",
            f"{P}:1:38: too many positional arguments in register_cpu_ci(): at most 4 "
            "(est_time, suite, nightly, disabled)",
        ),
        (
            "register_cpu_ci(est_time=1, suite='s', nighty=True)",
            f"{P}:1:40: unknown argument 'nighty' in register_cpu_ci(); expected est_time, "
            "suite, nightly, disabled, min_gpus, quarantined; did you mean 'nightly'?",
        ),
        (
            "register_cpu_ci(est_time=1, suite='s', gpus=2)",
            f"{P}:1:40: unknown argument 'gpus' in register_cpu_ci(); expected est_time, "
            "suite, nightly, disabled, min_gpus, quarantined; did you mean 'min_gpus'?",
        ),
        (
            "register_cpu_ci(est_time=1, suite='s', stage='x')",
            f"{P}:1:40: unknown argument 'stage' in register_cpu_ci(); expected est_time, "
            "suite, nightly, disabled, min_gpus, quarantined",
        ),
        (
            "register_cpu_ci(1, 's', est_time=2)",
            f"{P}:1:25: argument 'est_time' given twice in register_cpu_ci() "
            "(positionally and by keyword)",
        ),
        (
            "register_cpu_ci(suite='s')",
            f"{P}:1:1: register_cpu_ci() is missing the required argument 'est_time'",
        ),
        (
            "register_cpu_ci(est_time=1)",
            f"{P}:1:1: register_cpu_ci() is missing the required argument 'suite'",
        ),
        (
            "register_cpu_ci(est_time=True, suite='s')",
            f"{P}:1:26: est_time must be a number of seconds, got True (bool)",
        ),
        (
            "register_cpu_ci(est_time='30', suite='s')",
            f"{P}:1:26: est_time must be a number of seconds, got '30' (str)",
        ),
        (
            "register_cpu_ci(est_time=1, suite='')",
            f'{P}:1:35: suite must be a non-empty suite name (suite="" is accepted only in a '
            'disabled registration: disabled="reason")',
        ),
        (
            "register_cpu_ci(est_time=1, suite='s', min_gpus=0)",
            f"{P}:1:49: min_gpus must be at least 1 GPU, got 0",
        ),
        (
            "register_cpu_ci(est_time=1, suite='s', min_gpus=True)",
            f"{P}:1:49: min_gpus must be a whole number of GPUs, got True (bool)",
        ),
        (
            "register_cpu_ci(est_time=1, suite='s', min_gpus=2.0)",
            f"{P}:1:49: min_gpus must be a whole number of GPUs, got 2.0 (float)",
        ),
        (
            "register_cpu_ci(est_time=1, suite='s', min_gpus=N)",
            f"{P}:1:49: min_gpus must be a literal (a whole number of GPUs), got `N`",
        ),
        (
            "register_cpu_ci(est_time=-5, suite='s')",
            f"{P}:1:26: est_time must be a finite number of seconds, 0 or more, got -5",
        ),
        (
            "register_cpu_ci(est_time=1e999, suite='s')",
            f"{P}:1:26: est_time must be a finite number of seconds, 0 or more, got inf",
        ),
        (
            "register_cpu_ci(est_time=1, suite=3)",
            f"{P}:1:35: suite must be a string, got 3 (int)",
        ),
        (
            "register_cpu_ci(est_time=1, suite='  ')",
            f"{P}:1:35: suite must be a non-empty suite name",
        ),
        (
            "register_cpu_ci(est_time=1, suite='s', nightly=1)",
            f"{P}:1:48: nightly must be True or False, got 1 (int)",
        ),
        (
            "register_cpu_ci(est_time=1, suite='s', disabled=True)",
            f"{P}:1:49: disabled must be a reason string or None, got True (bool)",
        ),
        (
            "register_cpu_ci(est_time=1, suite='s', disabled='')",
            f"{P}:1:49: disabled must be a non-empty reason string (or None for enabled)",
        ),
    ],
)
def test_malformed_call_is_reported_with_position_and_no_registration(source, expected):
    registrations, problems = scan(source)
    assert registrations == []
    assert any(str(p).startswith(expected) for p in problems), problems


def test_every_problem_of_one_call_is_reported():
    registrations, problems = scan("register_cpu_ci(est_time=X, suite=3, nightly='no')")
    assert registrations == []
    assert [p.message.split(" ")[0] for p in problems] == ["est_time", "suite", "nightly"]


# --- registrations hidden from the collector -------------------------------------------------

HIDDEN_SUFFIX = "is not collected: a registration must be a module-level statement of its own"


@pytest.mark.parametrize(
    "source,where,line,col",
    [
        ("if True:\n    register_cpu_ci(est_time=1, suite='s')", "an if block", 2, 5),
        ("try:\n    register_cpu_ci(1, 's')\nexcept Exception:\n    pass", "a try block", 2, 5),
        ("def setup():\n    register_cpu_ci(1, 's')", "function 'setup'", 2, 5),
        ("class T:\n    register_cpu_ci(1, 's')", "class 'T'", 2, 5),
        ("with ctx():\n    register_cpu_ci(1, 's')", "a with block", 2, 5),
        ("for s in SUITES:\n    register_cpu_ci(1, s)", "a loop", 2, 5),
        ("x = register_cpu_ci(1, 's')", "an assignment", 1, 5),
        ("register_cpu_ci(1, 's') or None", "an expression", 1, 1),
        ("f = lambda: register_cpu_ci(1, 's')", "an assignment", 1, 13),
        ("import ci_runner\nif X:\n    ci_runner.register_cuda_ci(1, 's')", "an if block", 3, 5),
        (
            'if __name__ == "__main__":\n    register_cpu_ci(1, "s")',
            "an if block",
            2,
            5,
        ),
    ],
)
def test_marker_call_hidden_inside_a_construct_is_an_error(source, where, line, col):
    assert (
        only_problem(source)
        == f"{P}:{line}:{col}: register_{'cuda' if 'cuda' in source else 'cpu'}_ci() inside {where} {HIDDEN_SUFFIX}"
    )


def test_marker_used_without_a_call_is_an_error():
    assert only_problem("from ci_runner import register_cpu_ci as r\nwrap = r") == (
        f"{P}:2:8: register_cpu_ci is used inside an assignment without being called at module "
        "level: wrappers and indirect calls are not collected"
    )


def test_duplicate_registration_of_one_suite_is_an_error():
    registrations, problems = scan(
        "register_cpu_ci(est_time=1, suite='s')\nregister_cpu_ci(est_time=2, suite='s')"
    )
    assert [r.est_time for r in registrations] == [1.0]
    assert [str(p) for p in problems] == [
        f"{P}:2:1: duplicate registration: suite 's' (cpu) is already registered at line 1"
    ]


def test_same_suite_name_on_two_backends_is_not_a_duplicate():
    registrations, problems = scan("register_cpu_ci(1, 's')\nregister_cuda_ci(1, 's')")
    assert problems == [] and len(registrations) == 2


def test_syntax_error_is_a_problem_not_an_exception():
    registrations, problems = scan("register_cpu_ci(est_time=1, suite='s')\ndef broken(:\n")
    assert registrations == []
    assert len(problems) == 1
    assert str(problems[0]).startswith(f"{P}:2:")
    assert "syntax error: " in problems[0].message


def test_null_byte_is_a_problem_not_an_exception():
    registrations, problems = scan("register_cpu_ci(1, 's')\x00")
    assert registrations == []
    assert len(problems) == 1
    assert problems[0].line == 1


def test_problems_are_sorted_by_position():
    _, problems = scan(
        "register_cpu_ci(est_time=X, suite='s')\nif 1:\n    register_cpu_ci(1, 's')\n"
        "register_cpu_ci(est_time=1)"
    )
    assert [(p.line, p.col) for p in problems] == sorted((p.line, p.col) for p in problems)
    assert len(problems) == 3


@pytest.mark.parametrize(
    "source",
    [
        "from ci_runner import register_cpu_ci as r\nr(1, 's')\nif X:\n    r(2, 't')\nw = r",
        "import ci_runner\nci_runner.register_cuda_ci(1, 's')\ndef f():\n    register_cpu_ci(1, 's')",
        "x = 1\n" + "'" * 3 + "\nregister_cpu_ci(1, 's')\n" + "'" * 3 + "\nregister_cpu_ci(2, 's')",
        "register_cpu_ci(1, 's')\nregister_cpu_ci(2, 's')\nregister_cpu_ci(est_time=A, suite=B)",
        "x = 1\rregister_cpu_ci(1, 's')\rif X:\r    register_cpu_ci(2, 't')\r",
        "x = 1\r\nregister_cpu_ci(1, 's')\r\nif X:\r\n    register_cpu_ci(2, 't')\r\n",
    ],
)
def test_text_prefilter_gives_the_same_result_as_a_full_walk(source):
    tree = ast.parse(source)
    full = scan_tree(tree, P)
    assert full[0] or full[1]
    assert scan_tree(tree, P, source) == full
    assert scan_tree(tree, P, source.encode()) == full


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
