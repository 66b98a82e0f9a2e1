"""Registration styles declared by the catalog: suite-template (stage= + runner_config=), extra
markers, ignored arguments, file patterns, marker modules, and the helper-file placeholders."""

import sys
import textwrap
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cpu_ci
from ci_runner.catalog import load_catalog
from ci_runner.catalog.syntax import DEFAULT_SYNTAX, RegistrationSyntax, parse_template
from ci_runner.collect import collect
from ci_runner.collect.scan import scan_markers

register_cpu_ci(est_time=4, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from helpers_tree import MAIN_BLOCK  # noqa: E402

from testing.tree_builder import catalog_toml, suite_toml, write_tree  # noqa: E402

P = "registered/unit/test_a.py"
SGLANG = RegistrationSyntax(
    markers={**DEFAULT_SYNTAX.markers, "register_mlx_ci": "mlx"},
    suite_template=parse_template("{stage}-test-{runner_config}", ("est_time", "suite")),
    ignored_arguments=("in_process_group",),
)


def scan(source: str, syntax: RegistrationSyntax = SGLANG):
    return scan_markers(textwrap.dedent(source), P, syntax)


def problems_of(source: str, syntax: RegistrationSyntax = SGLANG) -> list[str]:
    registrations, problems = scan(source, syntax)
    assert registrations == [], registrations
    return [str(p) for p in problems]


# --- suite-template ------------------------------------------------------------------------------


def test_stage_and_runner_config_compose_the_suite():
    (reg,), problems = scan(
        'register_cuda_ci(est_time=30, stage="base-b", runner_config="1-gpu-large")'
    )
    assert problems == []
    assert reg.suite == "base-b-test-1-gpu-large"
    assert reg.composed_from == (("stage", "base-b"), ("runner_config", "1-gpu-large"))
    assert reg.suite_origin == " (from stage='base-b', runner_config='1-gpu-large')"


def test_composed_and_plain_forms_mix_across_calls_and_keep_positionals():
    registrations, problems = scan(
        """\
        register_cuda_ci(30, stage="base-b", runner_config="1-gpu-large")
        register_cuda_ci(60, "nightly-kernel-1-gpu", True)
        register_amd_ci(
            est_time=12,
            stage="base-b",
            runner_config="1-gpu-amd",
            disabled="flaky on MI300",
        )
        """
    )
    assert problems == []
    assert [
        (r.backend, r.suite, r.est_time, r.nightly, r.disabled, r.line) for r in registrations
    ] == [
        ("cuda", "base-b-test-1-gpu-large", 30.0, False, None, 1),
        ("cuda", "nightly-kernel-1-gpu", 60.0, True, None, 2),
        ("amd", "base-b-test-1-gpu-amd", 12.0, False, "flaky on MI300", 3),
    ]


def test_a_duplicate_is_found_across_the_two_forms():
    _, problems = scan(
        'register_cuda_ci(1, "base-b-test-x")\nregister_cuda_ci(2, stage="base-b", runner_config="x")'
    )
    assert [str(p) for p in problems] == [
        f"{P}:2:1: duplicate registration: suite 'base-b-test-x' (cuda) is already registered "
        "at line 1"
    ]


@pytest.mark.parametrize(
    "source,expected",
    [
        (
            'register_cuda_ci(est_time=30, suite="s", stage="base-b", runner_config="x")',
            f"{P}:1:42: suite= and stage=, runner_config= cannot be combined in register_cuda_ci(): "
            "name the suite either with suite= or with stage= and runner_config= (which compose "
            "'{stage}-test-{runner_config}')",
        ),
        (
            'register_cuda_ci(30, "s", runner_config="x")',
            f"{P}:1:27: suite= and runner_config= cannot be combined in register_cuda_ci()",
        ),
        (
            'register_cuda_ci(est_time=30, stage="base-b")',
            f"{P}:1:1: register_cuda_ci() gives stage= but not runner_config=: the suite name "
            "'{stage}-test-{runner_config}' needs all of stage= and runner_config= (or pass "
            "suite= alone)",
        ),
        (
            'register_cuda_ci(est_time=30, runner_config="1-gpu")',
            f"{P}:1:1: register_cuda_ci() gives runner_config= but not stage=",
        ),
        (
            "register_cuda_ci(est_time=30)",
            f"{P}:1:1: register_cuda_ci() is missing the required argument 'suite' (or stage= "
            "and runner_config=, which compose '{stage}-test-{runner_config}')",
        ),
        (
            'register_cuda_ci(est_time=30, stage=STAGE, runner_config="x")',
            f"{P}:1:37: stage must be a literal (a string), got `STAGE`: the runner reads "
            "registrations without running the file",
        ),
        (
            'register_cuda_ci(est_time=30, stage="base-b", runner_config=f"{N}-gpu")',
            f"{P}:1:61: runner_config must be a literal (a string), got `f'{{N}}-gpu'`",
        ),
        (
            'register_cuda_ci(est_time=30, stage="", runner_config="x")',
            f"{P}:1:37: stage must be a non-empty string: it is part of the suite name",
        ),
        (
            'register_cuda_ci(est_time=30, stage=1, runner_config="x")',
            f"{P}:1:37: stage must be a string, got 1 (int)",
        ),
        (
            'register_cuda_ci(est_time=30, stag="base-b", runner_config="x")',
            f"{P}:1:31: unknown argument 'stag' in register_cuda_ci(); expected est_time, suite, "
            "nightly, disabled, min_gpus, quarantined, stage, runner_config, in_process_group; "
            "did you mean 'stage'?",
        ),
        (
            'register_cuda_ci(30, "s", in_process_group=GROUP)',
            f"{P}:1:44: in_process_group must be a literal (a constant), got `GROUP`",
        ),
    ],
)
def test_malformed_composed_registrations_are_explained(source, expected):
    problems = problems_of(source)
    assert any(p.startswith(expected) for p in problems), problems


def test_every_problem_of_a_composed_call_at_once():
    problems = problems_of("register_cuda_ci(est_time=X, stage=S, runner_config=3, bogus=1)")
    assert [p.split(": ", 1)[1].split(" ")[0] for p in problems] == [
        "est_time",
        "stage",
        "runner_config",
        "unknown",
    ]


def test_without_a_template_stage_is_an_unknown_argument():
    """Our error from before the catalog declared the template, for comparison."""
    problems = problems_of(
        'register_cuda_ci(est_time=30, stage="base-b", runner_config="1-gpu-large")',
        DEFAULT_SYNTAX,
    )
    assert problems[0] == (f"{P}:1:1: register_cuda_ci() is missing the required argument 'suite'")
    assert problems[1].startswith(f"{P}:1:31: unknown argument 'stage' in register_cuda_ci()")


def test_ignored_arguments_are_accepted_and_have_no_effect():
    (reg,), problems = scan('register_cuda_ci(30, "s", in_process_group="attention")')
    assert problems == [] and reg.suite == "s"


# --- helper-file placeholders (est_time=0, suite="", all disabled) -------------------------------


def test_disabled_placeholders_are_accepted():
    registrations, problems = scan(
        """\
        register_cuda_ci(est_time=0, suite="", disabled="helper module, not a test")
        register_amd_ci(0, "", False, "helper")
        register_cpu_ci(est_time=0, suite="base-a-test-cpu", disabled="helper")
        register_cpu_ci(est_time=0, suite="", disabled="second placeholder is no duplicate")
        """
    )
    assert problems == []
    assert [(r.backend, r.suite, r.est_time) for r in registrations] == [
        ("cuda", "", 0.0),
        ("amd", "", 0.0),
        ("cpu", "base-a-test-cpu", 0.0),
        ("cpu", "", 0.0),
    ]


# --- markers: foreign modules, extra backends, unknown names -------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "from sglang.test.ci.ci_register import register_cuda_ci\nregister_cuda_ci(1, 's')",
        "from sglang.test.ci.ci_register import register_cuda_ci as reg\nreg(1, 's')",
        "from sglang.test.ci import ci_register\nci_register.register_cuda_ci(1, 's')",
        "import sglang.test.ci.ci_register as cr\ncr.register_cuda_ci(1, 's')",
    ],
)
def test_markers_imported_from_another_module_are_collected(source):
    (reg,), problems = scan(source)
    assert problems == [] and (reg.backend, reg.suite) == ("cuda", "s")


def test_extra_marker_registers_for_its_backend():
    (reg,), problems = scan(
        "from sglang.test.ci.ci_register import register_mlx_ci\n"
        'register_mlx_ci(est_time=5, suite="stage-a-unit-test-mlx")'
    )
    assert problems == [] and (reg.backend, reg.suite) == ("mlx", "stage-a-unit-test-mlx")


def test_extra_marker_with_any_name_is_found_by_the_text_prefilter():
    syntax = RegistrationSyntax(markers={**DEFAULT_SYNTAX.markers, "ci_mark_tpu": "tpu"})
    source = "x = 1\nci_mark_tpu(3, 'tpu-suite')\nif X:\n    ci_mark_tpu(1, 't')\n"
    registrations, problems = scan_markers(source, P, syntax)
    assert [(r.backend, r.suite) for r in registrations] == [("tpu", "tpu-suite")]
    assert [p.line for p in problems] == [4]


def test_unknown_marker_call_is_an_error_naming_the_fix():
    assert problems_of('register_ppu_ci(est_time=5, suite="base-a-test-ppu")') == [
        f"{P}:1:1: unknown marker register_ppu_ci(): the catalog declares no such marker "
        "(known: register_amd_ci, register_cpu_ci, register_cuda_ci, register_mlx_ci, "
        "register_musa_ci, register_npu_ci, register_xpu_ci); if it registers for a backend of "
        'this repository, declare it: [tool.ci-runner.extra-markers] register_ppu_ci = "ppu"'
    ]


def test_unknown_marker_next_to_known_ones_is_still_reported():
    registrations, problems = scan(
        "import ci_register\nregister_cuda_ci(1, 's')\nci_register.register_mps_ci(1, 's')"
    )
    assert len(registrations) == 1
    assert [(p.line, p.message.split("(")[0]) for p in problems] == [
        (3, "unknown marker register_mps_ci")
    ]


def test_comments_docstrings_and_nested_helpers_named_like_markers_are_not_registrations():
    (reg,), problems = scan(
        '''\
        """Tests. Register with register_cuda_ci(est_time=..., suite=...) or register_ppu_ci."""
        # register_cuda_ci(est_time=1, suite="commented-out")


        def register_local_ci(x):
            """register_cuda_ci(1, 'in a docstring')"""
            return x


        register_cuda_ci(est_time=7, suite="real")
        '''
    )
    assert problems == [] and reg.suite == "real"


@pytest.mark.parametrize("name", ["register_cuda_ci", "register_cpu_ci", "register_mlx_ci"])
def test_runtime_markers_accept_every_registration_style(name):
    import ci_runner.markers

    marker = getattr(ci_runner.markers, name)  # a call spelled out here would be a hidden marker
    assert marker(30, stage="base-b", runner_config="1-gpu-large") is None
    assert marker(30, "s", False, None, min_gpus=2, in_process_group="g") is None


def test_star_import_of_our_markers_is_a_complete_marker_module():
    namespace: dict[str, object] = {}
    exec(
        "from ci_runner.markers import *\nfrom ci_runner.markers import register_mlx_ci", namespace
    )
    assert sorted(k for k in namespace if not k.startswith("__")) == sorted(
        [*DEFAULT_SYNTAX.markers, "register_mlx_ci"]
    )


# --- end to end on a tree ------------------------------------------------------------------------

CATALOG = catalog_toml(
    suite_toml("base-b-test-1-gpu-large", "cuda"),
    suite_toml("stage-a-unit-test-mlx", "mlx"),
    registered_dir="registered",
).replace(
    'registered-dir = "registered"\n',
    'registered-dir = "registered"\nsuite-template = "{stage}-test-{runner_config}"\n'
    'file-patterns = ["*.py"]\n[tool.ci-runner.extra-markers]\nregister_mlx_ci = "mlx"\n',
)
HEADER = "import sys\n\nimport pytest\n\nfrom sglang.test.ci.ci_register import register_cuda_ci\n"


def tree(tmp_path, files):
    return load_catalog(write_tree(tmp_path, CATALOG, files))


def test_composed_registration_validates_against_the_catalog(tmp_path):
    ok = HEADER + '\nregister_cuda_ci(est_time=30, stage="base-b", runner_config="1-gpu-large")\n'
    bad = HEADER + '\nregister_cuda_ci(est_time=30, stage="base-b", runner_config="1-gpu-lrge")\n'
    collection = collect(
        tree(tmp_path, {"registered/unit/ok.py": ok + MAIN_BLOCK, P: bad + MAIN_BLOCK})
    )
    assert sorted(r.suite for r in collection.registrations) == [
        "base-b-test-1-gpu-large",
        "base-b-test-1-gpu-lrge",
    ]
    assert [str(p) for p in collection.problems] == [
        f"{P}:7:1: unknown cuda suite 'base-b-test-1-gpu-lrge' (from stage='base-b', "
        "runner_config='1-gpu-lrge'); did you mean 'base-b-test-1-gpu-large'?"
    ]


def test_file_patterns_collect_every_py_file_but_init_and_conftest(tmp_path):
    helper = "from sglang.test.ci.ci_register import register_cuda_ci\n\n"
    helper += 'register_cuda_ci(est_time=0, suite="", disabled="helper")\n'
    files = {
        "registered/unit/kernels.py": HEADER
        + '\nregister_cuda_ci(5, "base-b-test-1-gpu-large")\n'
        + MAIN_BLOCK,
        "registered/unit/utils.py": helper,
        "registered/unit/__init__.py": "",
        "registered/conftest.py": "import pytest\n",
        "registered/mlx/test_m.py": "from x import register_mlx_ci\n"
        'register_mlx_ci(est_time=1, suite="stage-a-unit-test-mlx")\n' + MAIN_BLOCK,
        "registered/unit/no_marker.py": "VALUE = 1\n",
    }
    collection = collect(tree(tmp_path, files))
    assert collection.files == [
        "registered/mlx/test_m.py",
        "registered/unit/kernels.py",
        "registered/unit/no_marker.py",
        "registered/unit/utils.py",
    ]
    assert [str(p) for p in collection.problems] == [
        "registered/unit/no_marker.py:1:1: no register_<backend>_ci(...) call: every *.py file "
        "under the registered directory must register (rename helper modules so they do not "
        "match the catalog's file-patterns *.py)"
    ]
    assert {(r.path, r.backend) for r in collection.registrations} == {
        ("registered/mlx/test_m.py", "mlx"),
        ("registered/unit/kernels.py", "cuda"),
        ("registered/unit/utils.py", "cuda"),
    }


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
