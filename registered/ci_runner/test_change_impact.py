"""--changed-files / --changed-since: which tests a change keeps, with which reason, and when
the whole suite runs (fail open). Every case is a generated tree whose dependencies are known by
construction (registered/ci_runner/impact_tree.py)."""

import sys
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)

sys.path.insert(0, str(Path(__file__).parent))

from coarse_clock import CoarseClock
from impact_tree import (
    GPU_TESTS,
    chain_of,
    changed_files,
    dry_changed,
    kept,
    make_impact_repo,
)

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=12, suite="base-a-test-cpu")


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "impact-cache"))


changed = changed_files
dry = dry_changed


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        # a module: every test whose import closure holds it (one through a string naming it)
        (
            "pkg/util.py",
            ["registered/test_core.py", "registered/test_local.py", "registered/test_names.py"],
        ),
        ("pkg/core.py", ["registered/test_core.py"]),
        # relative imports; a helper imported from the test's own directory
        ("pkg/sub/leaf.py", ["registered/test_local.py"]),
        ("registered/helper_local.py", ["registered/test_local.py"]),
        # a kernel loader by keyword, and by position (jit_module's second argument)
        ("kernels/csrc/k/a.cuh", ["registered/test_kern.py"]),
        ("kernels/csrc/k/b.cuh", ["registered/test_pos.py"]),
        # headers: through <...> and "..." includes, transitively
        ("kernels/include/lib/deep.h", ["registered/test_kern.py"]),
        ("kernels/csrc/k/local.h", ["registered/test_kern.py"]),
        ("kernels/include/lib/only_b.h", ["registered/test_pos.py"]),
        # a header no kernel includes, a module no test imports
        ("kernels/include/lib/unused.h", []),
        ("pkg/plugins/__init__.py", ["registered/test_plugins.py"]),
        # an import by an f-string name: every module under its literal prefix
        ("pkg/plugins/p1.py", ["registered/test_plugins.py"]),
        # a changed test file selects itself
        ("registered/test_alone.py", ["registered/test_alone.py"]),
    ],
)
def test_a_change_keeps_exactly_the_tests_that_reach_it(tmp_path, path, expected):
    root = make_impact_repo(tmp_path / "repo")
    document = dry(root, path)
    assert kept(document) == expected
    assert [f["path"] for f in document["files"]] == expected
    impact = document["change_impact"]
    assert impact["runs_everything"] is False
    assert impact["unused_changes"] == ([] if expected else [path])
    for test in expected:
        chain = chain_of(document, test)
        assert chain[0] == path and chain[-1] == test


def test_the_reason_chain_names_every_step(tmp_path):
    root = make_impact_repo(tmp_path / "repo")
    document = dry(root, "kernels/include/lib/deep.h")
    entry = document["change_impact"]["kept"][0]
    steps = [(link["path"], link["how"]) for link in entry["chain"]]
    assert steps == [
        ("kernels/include/lib/deep.h", "changed"),
        ("kernels/include/lib/common.h", "#includes"),
        ("kernels/csrc/k/a.cuh", "#includes"),
        ("pkg/kern.py", "builds the kernel"),
        ("registered/test_kern.py", "imports"),
    ]
    assert entry["note"] == ""


def test_several_changes_keep_the_union(tmp_path):
    root = make_impact_repo(tmp_path / "repo")
    document = dry(root, "pkg/core.py", "kernels/csrc/k/b.cuh")
    assert kept(document) == ["registered/test_core.py", "registered/test_pos.py"]
    impact = document["change_impact"]
    assert impact["files_before"] == len(GPU_TESTS) and impact["files_after"] == 2
    assert impact["est_before"] == 280 and impact["est_after"] == 40
    assert impact["est_saved"] == 240


def test_no_changed_file_keeps_nothing(tmp_path):
    root = make_impact_repo(tmp_path / "repo")
    document = dry(root)
    assert document["files"] == [] and kept(document) == []
    assert document["shards"] == [{"id": 0, "est_total": 0.0, "files": []}]


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        (
            "pyproject.toml",
            "pyproject.toml changed (packaging or the catalog; no base commit to compare its tables with)",
        ),
        ("registered/conftest.py", "registered/conftest.py changed (pytest configuration)"),
        ("sub/setup.py", "sub/setup.py changed (packaging)"),
        ("pytest.ini", "pytest.ini changed (pytest configuration)"),
        ("sub/.pytest.ini", "sub/.pytest.ini changed (pytest configuration)"),
        (".github/workflows/ci.yml", ".github/workflows/ci.yml changed (CI configuration)"),
        (
            "tooling/runner.py",
            "tooling/runner.py changed (run-everything 'tooling/**' in the catalog)",
        ),
        (
            "docs/readme.md",
            "docs/readme.md changed: neither a Python file nor under a kernel directory, so what "
            "reads it cannot be traced",
        ),
        ("pkg/gone.py", "pkg/gone.py was deleted: what used it cannot be traced"),
    ],
)
def test_what_cannot_be_attributed_runs_the_whole_suite(tmp_path, path, reason):
    present = {path: ""} if path not in ("pkg/gone.py", "pyproject.toml") else {}
    root = make_impact_repo(tmp_path / "repo", present)
    document = dry(root, path)
    impact = document["change_impact"]
    assert impact["runs_everything"] is True
    assert impact["run_everything_reasons"] == [reason]
    assert [f["path"] for f in document["files"]] == GPU_TESTS
    assert impact["est_saved"] == 0


def test_the_text_dry_run_shows_the_saving_and_the_chains(tmp_path, capsys):
    from ci_runner.cli import main

    root = make_impact_repo(tmp_path / "repo")
    assert main(["--root", str(root), "--hw", "cuda", "--suite", "unit-gpu", "--dry-run",
                 *changed(root, "pkg/core.py")]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "change impact (--changed-files " in out
    assert (
        "1 changed file(s); keeps 1 of 7 file(s), drops 6, est 10.0s of 280s (4%), saves 270s"
        in out
    )
    assert "  registered/test_core.py: pkg/core.py -> registered/test_core.py [imports]" in out
    assert "selected 1 file(s), est total 10.0s" in out


def test_a_whole_suite_text_names_each_reason(tmp_path, capsys):
    from ci_runner.cli import main

    root = make_impact_repo(tmp_path / "repo")
    assert main(["--root", str(root), "--hw", "cuda", "--suite", "unit-gpu", "--dry-run",
                 *changed(root, "docs/readme.md", "pyproject.toml")]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "keeps 7 of 7 file(s), drops 0" in out
    assert (
        "; fails open: pyproject.toml changed (packaging or the catalog; no base commit to compare its tables with);"
        in out
    )
    assert (
        "  runs the whole suite:\n    pyproject.toml changed (packaging or the catalog; no base commit to compare its tables with)\n"
        in out
    )
    assert main(["--root", str(root), "--hw", "cuda", "--suite", "unit-gpu", "--dry-run",
                 *changed(root, "docs/readme.md", "tooling/runner.py")]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "; fails open: tooling/runner.py changed (run-everything 'tooling/**' in the " in out
    assert "  runs the whole suite:\n    tooling/runner.py changed (run-everything" in out


# ---------------------------------------------------------------- what the graph cannot follow


def test_a_dynamic_import_by_a_computed_name_keeps_its_tests_for_every_change(tmp_path):
    root = make_impact_repo(
        tmp_path / "repo",
        {
            "pkg/dyn.py": "import importlib\n\ndef load(name):\n    return importlib.import_module(name)\n",
            "registered/test_dyn.py": __import__("impact_tree").registered_file("import pkg.dyn"),
        },
    )
    document = dry(root, "pkg/core.py")
    assert kept(document) == ["registered/test_core.py", "registered/test_dyn.py"]
    entry = next(
        e for e in document["change_impact"]["kept"] if e["path"] == "registered/test_dyn.py"
    )
    assert [link["path"] for link in entry["chain"]] == ["pkg/dyn.py", "registered/test_dyn.py"]
    assert entry["note"] == (
        "pkg/dyn.py:4: dynamic import importlib.import_module(name): its dependencies cannot be "
        "bounded, so every change selects it"
    )


def test_named_modules_policy_bounds_a_computed_import_by_the_names_written_in_the_tree(tmp_path):
    from impact_tree import IMPACT_TABLE, registered_file

    table = IMPACT_TABLE + 'dynamic-imports = "named-modules"\n'
    files = {
        "pkg/registry.py": (
            "import importlib\nimport pkgutil\n\n"
            "def import_all(package_name):\n"
            "    package = importlib.import_module(package_name)\n"
            "    for _, name, _ in pkgutil.iter_modules(package.__path__, package_name + '.'):\n"
            "        importlib.import_module(name)\n"
        ),
        "pkg/models/__init__.py": "",
        "pkg/models/llama.py": "",
        "pkg/app.py": "from pkg.registry import import_all\n\nimport_all('pkg.models')\n",
        "registered/test_app.py": registered_file("import pkg.app"),
        "registered/test_registry.py": registered_file("import pkg.registry"),
    }
    root = make_impact_repo(tmp_path / "repo", files, table=table)
    document = dry(root, "pkg/models/llama.py")
    assert kept(document) == ["registered/test_app.py"]
    assert chain_of(document, "registered/test_app.py") == [
        "pkg/models/llama.py",
        "pkg/app.py",
        "registered/test_app.py",
    ]
    # without the policy, the computed import keeps every test reaching it
    root = make_impact_repo(tmp_path / "strict", files)
    document = dry(root, "pkg/util.py")
    assert {"registered/test_app.py", "registered/test_registry.py"} <= set(kept(document))


def test_a_kernel_loader_given_a_computed_file_is_kept_for_every_kernel_change(tmp_path):
    from impact_tree import registered_file

    root = make_impact_repo(
        tmp_path / "repo",
        {
            "registered/test_any_kernel.py": registered_file(
                "from pkg.loader import load_jit\n\n"
                "def build(path):\n    return load_jit('x', cuda_files=[str(path)])\n"
            )
        },
    )
    document = dry(root, "kernels/include/lib/unused.h")
    assert kept(document) == ["registered/test_any_kernel.py"]
    note = document["change_impact"]["kept"][0]["note"]
    assert note == (
        "registered/test_any_kernel.py:9: kernel loader [str(path)]: may build any kernel source, "
        "so every kernel change selects it"
    )
    assert kept(dry(root, "pkg/core.py")) == ["registered/test_core.py"]  # not a kernel change


def test_an_include_the_scanner_cannot_prove_keeps_its_tests_for_every_change(tmp_path):
    macro = '#pragma once\n#define DEEP_NEXT "lib/only_b.h"\n#include DEEP_NEXT\n'
    root = make_impact_repo(tmp_path / "repo", {"kernels/include/lib/deep.h": macro})
    document = dry(root, "pkg/core.py")  # no kernel file changed: the kernel test stays anyway
    assert kept(document) == ["registered/test_core.py", "registered/test_kern.py"]
    entry = next(e for e in document["change_impact"]["kept"] if e["path"].endswith("kern.py"))
    assert entry["note"] == (
        "kernels/include/lib/deep.h:3: unproven #include #include DEEP_NEXT: the file is named "
        "by a macro, which only the preprocessor can expand: its dependencies cannot be bounded, "
        "so every change selects it"
    )
    assert entry["chain"][0]["path"] == "kernels/include/lib/deep.h"


def test_a_file_that_does_not_parse_keeps_the_tests_that_reach_it(tmp_path):
    root = make_impact_repo(tmp_path / "repo", {"pkg/util.py": "def broken(:\n"})
    document = dry(root, "registered/test_alone.py")
    assert kept(document) == [
        "registered/test_alone.py",
        "registered/test_core.py",
        "registered/test_local.py",
        "registered/test_names.py",
    ]
    entry = document["change_impact"]["kept"][1]
    assert entry["note"].startswith(
        "pkg/util.py: unreadable file cannot parse it (SyntaxError at line 1)"
    )


def test_test_code_that_lists_a_directory_is_kept_for_every_change(tmp_path):
    from impact_tree import registered_file

    root = make_impact_repo(
        tmp_path / "repo",
        {
            "registered/test_tree.py": registered_file(
                "from pathlib import Path\nFILES = list(Path('kernels').rglob('*'))"
            )
        },
    )
    document = dry(root, "pkg/core.py")
    assert kept(document) == ["registered/test_core.py", "registered/test_tree.py"]
    assert (
        "directory listing Path('kernels').rglob('*')"
        in document["change_impact"]["kept"][1]["note"]
    )


@pytest.mark.parametrize(
    ("code", "listed"),
    [
        ("import os\nos.walk('d')", ["os.walk('d')"]),
        ("from os import walk\nwalk('d')", ["walk('d')"]),
        ("from os import walk as w\nw('d')", ["w('d')"]),
        ("from glob import glob\nglob('*.py')", ["glob('*.py')"]),
        ("import ast\nast.walk(tree)", []),  # a syntax tree, not a directory
        ("import ast as _ast\n_ast.walk(tree)", []),
        ("def walk(node, path): pass\nwalk(item, 'x')", []),  # the file's own function
    ],
)
def test_which_calls_list_a_directory(code, listed):
    from ci_runner.impact.python_facts import file_facts

    facts = file_facts(code.encode(), (), is_package=False)
    assert [text for text, _line in facts["listings"]] == listed


# ---------------------------------------------------------------- package roots


def test_python_roots_from_the_catalog_and_from_packaging(tmp_path):
    from impact_tree import IMPACT_TABLE, registered_file

    files = {
        "python/lib/__init__.py": "",
        "python/lib/rope.py": "",
        "python/lib/layer.py": "from lib import rope\n",
        "registered/test_layer.py": registered_file("import lib.layer"),
    }
    table = IMPACT_TABLE.replace(
        "[tool.ci-runner.change-impact]\n",
        '[tool.ci-runner.change-impact]\npython-roots = ["python"]\n',
    )
    root = make_impact_repo(tmp_path / "catalog", files, table=table)
    document = dry(root, "python/lib/rope.py")
    assert kept(document) == ["registered/test_layer.py"]
    assert document["change_impact"]["kept"][0]["note"] == ""
    # without python-roots, `import lib` resolves nowhere, but lib is the repository's: unproven
    root = make_impact_repo(tmp_path / "none", files)
    document = dry(root, "python/lib/rope.py")
    assert kept(document) == ["registered/test_layer.py"]
    assert (
        "unproven import lib.layer: resolves in no import root"
        in (document["change_impact"]["kept"][0]["note"])
    )
    # the packaging's [tool.setuptools.packages.find] where = ["python"] says where it lives
    root = make_impact_repo(tmp_path / "packaging", files)
    text = (root / "pyproject.toml").read_text()
    (root / "pyproject.toml").write_text(
        text + '\n[project]\nname = "x"\n[tool.setuptools.packages.find]\nwhere = ["python"]\n'
    )
    document = dry(root, "python/lib/rope.py")
    assert kept(document) == ["registered/test_layer.py"]
    assert document["change_impact"]["kept"][0]["note"] == ""


# ---------------------------------------------------------------- the cache


def test_facts_are_cached_by_content(tmp_path):
    from ci_runner.catalog import load_catalog
    from ci_runner.impact import ChangeSet, select_changed
    from ci_runner.impact.changes import Change
    from ci_runner.select import select

    root = make_impact_repo(tmp_path / "repo")
    catalog = load_catalog(root)
    selection = select([], catalog, "cuda", ["unit-gpu"], False, allow_empty=True)
    from ci_runner.collect import collect

    selection = select(collect(catalog).registrations, catalog, "cuda", ["unit-gpu"], False)
    changes = ChangeSet("test", (Change("pkg/core.py"),))
    first = select_changed(selection, catalog, changes)
    assert first.parsed > 10
    second = select_changed(selection, catalog, changes)
    assert second.parsed == 0
    assert second.reasons == first.reasons
    # a rewrite with new content is parsed again; the same content is not
    (root / "pkg" / "core.py").write_text("import pkg.sub\n")
    third = select_changed(selection, catalog, ChangeSet("t", (Change("pkg/sub/leaf.py"),)))
    assert third.parsed == 1
    assert sorted(third.reasons) == ["registered/test_core.py", "registered/test_local.py"]
    (root / "pkg" / "core.py").write_text("import pkg.sub\n")
    assert select_changed(selection, catalog, changes).parsed == 0
    # a damaged cache only costs time
    for cache_file in (tmp_path / "impact-cache").iterdir():
        cache_file.write_text("{not json")
    damaged = select_changed(selection, catalog, ChangeSet("t", (Change("pkg/sub/leaf.py"),)))
    assert damaged.parsed > 10 and damaged.reasons == third.reasons


def test_a_file_changed_within_its_timestamp_granularity_is_not_trusted_by_stat(
    tmp_path, monkeypatch
):
    """The racy-timestamp rule: on a coarse clock a rewrite keeps size, times and inode, so a
    stat recorded while the file was that fresh cannot vouch for its content."""
    from ci_runner.catalog import load_catalog
    from ci_runner.impact import fact_cache
    from ci_runner.impact.config import load_impact_config

    root = make_impact_repo(tmp_path / "repo")
    config = load_impact_config(load_catalog(root))
    clock = CoarseClock.install(monkeypatch, fact_cache)
    module = root / "pkg" / "core.py"
    module.write_text("import pkg.pos\n")
    first = fact_cache.FactCache(config)
    assert first.facts("pkg/core.py")["imports"][0][1] == "pkg.pos"
    first.save()
    module.write_text("import pkg.sub\n")  # same size, and the clock shows the same times
    second = fact_cache.FactCache(config)
    assert second.facts("pkg/core.py")["imports"][0][1] == "pkg.sub"
    second.save()
    # once the times are older than the granularity, the stat is trusted: no read at all
    clock.settle()
    third = fact_cache.FactCache(config)
    third.facts("pkg/core.py")
    third.save()
    module.write_text("import pkg.abc\n")  # same size again: only the content tells
    trusted = fact_cache.FactCache(config)
    monkeypatch.setattr(fact_cache, "_read", lambda path: pytest.fail(f"{path} was read"))
    assert trusted.facts("pkg/core.py")["imports"][0][1] == "pkg.sub"


def test_the_independent_direct_importer_check_agrees(tmp_path):
    """tools/direct_importers.py (a plain scan of import statements, no code shared with the
    analysis) finds the direct importers of a change, and the selection keeps every one."""
    from tools.direct_importers import TestImports, Tree

    root = make_impact_repo(tmp_path / "repo")
    tests = [p for p in GPU_TESTS] + ["registered/test_cpu.py"]
    importers = TestImports(Tree(root), tests)
    assert importers.importers(["pkg/core.py"]) == {
        "pkg/core.py": {"registered/test_core.py", "registered/test_cpu.py"}
    }
    assert importers.importers(["registered/helper_local.py", "pkg/sub/leaf.py"]) == {
        "registered/helper_local.py": {"registered/test_local.py"}
    }
    found = importers.importers(["pkg/__init__.py"])["pkg/__init__.py"]
    assert found == {
        "registered/test_core.py",
        "registered/test_cpu.py",
        "registered/test_kern.py",
        "registered/test_plugins.py",
        "registered/test_pos.py",
    }
    assert found - {"registered/test_cpu.py"} <= set(kept(dry(root, "pkg/__init__.py")))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
