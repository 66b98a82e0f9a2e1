"""One table of marker bindings, run through every reader of marker calls: they must agree.

Discovery (the collector), ``--scoped-validation``, the est_time updater, ``init`` (its survey and
draft) and the package lint all read calls with :mod:`ci_runner.collect.calls`. Each row binds
``register_cuda_ci`` another way and registers one file for one suite with ``est_time=30``;
every consumer must see exactly that registration. (Before the one reader, the est_time updater
missed an import alias and scoped validation could not tell the suite of a marker assigned from
an attribute.)
"""

import ast
import json
import sys
from collections import Counter
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cpu_ci
from ci_runner.adoption.draft import draft_catalog
from ci_runner.adoption.survey import survey_tree
from ci_runner.catalog import load_catalog
from ci_runner.collect import collect
from ci_runner.collect.calls import read_marker_calls
from ci_runner.collect.scope import file_may_belong
from ci_runner.maintenance.est_time import find_literals
from ci_runner.maintenance.est_time import main as update_est_time
from ci_runner.maintenance.registration_lints import package_offenders

register_cpu_ci(est_time=6, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from testing.tree_builder import catalog_toml, suite_toml, write_tree  # noqa: E402

CATALOG = catalog_toml(
    suite_toml("s1", "cuda"),
    suite_toml("s2", "cuda"),
    suite_toml("base-b-test-1-gpu", "cuda"),
    registered_dir="registered",
).replace(
    "[tool.ci-runner]\n", '[tool.ci-runner]\nsuite-template = "{stage}-test-{runner_config}"\n'
)
PATH = "registered/test_k.py"
HEAD = "import sys\n\nimport pytest\n\n"
MAIN = '\n\ndef test_k():\n    assert True\n\n\nif __name__ == "__main__":\n    sys.exit(pytest.main([__file__]))\n'
S1 = 'est_time=30, suite="s1"'

# name -> (the lines that bind and call the marker, the suite they register for)
BINDINGS = {
    "plain import": (f"from ci_runner import register_cuda_ci\n\nregister_cuda_ci({S1})", "s1"),
    "star import": (
        f"from ci_runner.markers import *  # noqa: F403\n\nregister_cuda_ci({S1})  # noqa: F405",
        "s1",
    ),
    "import alias": (f"from ci_runner import register_cuda_ci as reg\n\nreg({S1})", "s1"),
    "alias, positional arguments": (
        'from ci_runner.markers import register_cuda_ci as r\n\nr(30, "s1")',
        "s1",
    ),
    "alias imported in a try block": (
        "try:\n    from ci_runner import register_cuda_ci as reg\nexcept ImportError:\n    raise\n\n"
        f"reg({S1})",
        "s1",
    ),
    "module attribute": (f"import ci_runner\n\nci_runner.register_cuda_ci({S1})", "s1"),
    "module alias attribute": (f"import ci_runner as cr\n\ncr.register_cuda_ci({S1})", "s1"),
    "submodule attribute": (
        f"import ci_runner.markers\n\nci_runner.markers.register_cuda_ci({S1})",
        "s1",
    ),
    "assigned from an attribute": (
        "import importlib\n\n"
        'register_cuda_ci = importlib.import_module("ci_runner").register_cuda_ci\n\n'
        f"register_cuda_ci({S1})",
        "s1",
    ),
    "assigned from an attribute, another name": (
        'import importlib\n\nreg = importlib.import_module("ci_runner.markers").register_cuda_ci\n\n'
        f"reg({S1})",
        "s1",
    ),
    "assigned from a module attribute": (
        f"import ci_runner\n\nreg = ci_runner.register_cuda_ci\n\nreg({S1})",
        "s1",
    ),
    "suite composed by the template, through an alias": (
        "from ci_runner import register_cuda_ci as reg\n\n"
        'reg(est_time=30, stage="base-b", runner_config="1-gpu")',
        "base-b-test-1-gpu",
    ),
}


@pytest.fixture(params=sorted(BINDINGS), ids=str)
def row(request, tmp_path):
    """(root, source, suite) of a tree whose one registered file binds the marker one way."""
    body, suite = BINDINGS[request.param]
    source = HEAD + body + "\n" + MAIN
    ast.parse(source)  # every row is valid Python
    package = {"pkg/__init__.py": "", "pkg/mod.py": source}
    return write_tree(tmp_path, CATALOG, {PATH: source, **package}), source, suite


def test_the_reader_returns_the_call_with_its_bound_arguments_and_suite(row):
    root, source, suite = row
    catalog = load_catalog(root)
    (call,) = read_marker_calls(ast.parse(source), catalog.syntax).calls
    assert (call.marker, call.known, call.is_registration, call.suite) == (
        "register_cuda_ci",
        True,
        True,
        suite,
    )
    assert ast.literal_eval(call.arguments.values["est_time"]) == 30
    assert call.arguments.issues == () and not call.arguments.unpacked


def test_discovery_collects_it(row):
    root, _, suite = row
    collection = collect(load_catalog(root), workers=1)
    assert [str(p) for p in collection.problems] == []
    assert [(r.path, r.backend, r.suite, r.est_time) for r in collection.registrations] == [
        (PATH, "cuda", suite, 30.0)
    ]


def test_scoped_validation_reads_its_suite(row):
    root, _, suite = row
    catalog = load_catalog(root)
    assert file_may_belong(catalog, PATH, {suite})
    assert not file_may_belong(catalog, PATH, {"s2"})


def test_est_time_update_finds_and_rewrites_it(row, capsys):
    root, source, suite = row
    catalog = load_catalog(root)
    literals = find_literals(source, PATH, catalog.syntax)
    assert [(lit.suite, lit.value) for lit in literals] == [(suite, 30.0)]
    timings = root / "timings.jsonl"
    row_json = {"path": PATH, "suite": suite, "elapsed": 90.0, "status": "passed"}
    timings.write_text(json.dumps(row_json) + "\n")
    argv = ["--timings", str(timings), "--root", str(root), "--min-samples", "1", "--write"]
    assert update_est_time(argv) == 0
    assert "rewrote 1 est_time literal(s) in 1 file(s)" in capsys.readouterr().out
    (registration,) = collect(catalog, workers=1).registrations
    assert registration.est_time == 90.0


def test_init_surveys_and_drafts_it(row):
    root, _, suite = row
    survey = survey_tree(root, "registered")
    assert survey.markers == Counter({"register_cuda_ci": 1})
    draft = draft_catalog(root, "registered")
    assert [(s.name, s.hw, s.registrations) for s in draft.suites] == [(suite, "cuda", 1)]
    assert draft.problems == []


def test_the_package_lint_finds_it(row):
    root, _, suite = row
    offenders = package_offenders(root, ["pkg"], load_catalog(root).syntax)
    assert [(p.path, p.message) for p in offenders] == [
        ("pkg/mod.py", f"registers a CI test (cuda, suite {suite!r})")
    ]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
