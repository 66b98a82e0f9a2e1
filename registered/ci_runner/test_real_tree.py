"""A tree shaped like SGLang's test/registered/, unchanged, adopted with one `init`: it validates
cleanly and every suite selects exactly what SGLang's documented rules select.

The expected selections never come from our code: :mod:`sglang_tree` records each registration it
writes and applies the anchor's rules to those records (see its docstring), and the small tree
below states its expectations by hand.
"""

import json
import sys
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cpu_ci
from ci_runner.catalog import load_catalog
from ci_runner.cli import main
from ci_runner.collect import collect
from ci_runner.select import SelectionError, select

register_cpu_ci(est_time=4, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from testing import sglang_tree  # noqa: E402

TREE = sglang_tree.generate(260, seed=7)
SUITES = sorted(sglang_tree.anchor_suites(TREE))


@pytest.fixture(scope="module")
def adopted(tmp_path_factory):
    """The generated tree plus the catalog `run_suite.py init` wrote for it, and its collection."""
    root = sglang_tree.write(tmp_path_factory.mktemp("sglang") / "repo", TREE)
    assert main(["init", "--root", str(root)]) == 0
    catalog = load_catalog(root)
    return root, catalog, collect(catalog)


def test_the_generated_tree_has_every_registration_shape():
    regs = [(f, r) for f in TREE for r in f.regs]
    composed = [r for _, r in regs if r.stage is not None]
    assert 0.3 < len(composed) / len(regs) < 0.5  # SGLang: about 40 %
    assert any(r.style == "positional" for _, r in regs)
    assert any(r.style == "multiline" for _, r in regs)
    assert any(r.suite == "" and r.est_time == 0 and r.disabled for _, r in regs)
    helpers = [f for f in TREE if all(r.disabled for r in f.regs) and "__main__" not in f.source]
    assert helpers and all(r.est_time == 0 for f in helpers for r in f.regs)
    assert any(len({r.est_time for r in f.regs}) > 1 for f in TREE)
    assert any(r.backend == "mlx" for _, r in regs)
    assert any("# registered at the very end" in f.source for f in TREE)
    assert any(not f.path.rsplit("/", 1)[1].startswith(("test_", "bench_")) for f in TREE)
    assert all(sglang_tree.MARKER_MODULE in f.source for f in TREE)


def test_init_makes_the_unchanged_tree_valid(adopted):
    _, catalog, collection = adopted
    assert [str(p) for p in collection.problems] == []
    assert len(collection.files) == len(TREE)
    assert catalog.syntax.suite_template.text == "{stage}-test-{runner_config}"
    assert catalog.syntax.markers["register_mlx_ci"] == "mlx"
    assert {s.name for s in catalog.suites} == {name for _, name, _ in SUITES}


@pytest.mark.parametrize(("hw", "suite", "nightly"), SUITES, ids=[s[1] for s in SUITES])
def test_every_suite_selects_what_the_anchor_selects(adopted, hw, suite, nightly):
    _, catalog, collection = adopted
    selection = select(collection.registrations, catalog, hw, [suite], nightly, allow_empty=True)
    ours = (
        {(f.path, f.est_time) for f in selection.files},
        {(d.path, d.reason) for d in selection.disabled},
    )
    assert ours == sglang_tree.anchor_selection(TREE, hw, suite, nightly)


def test_the_wrong_cadence_is_an_error_where_the_anchor_selected_nothing(adopted):
    _, catalog, collection = adopted
    assert sglang_tree.anchor_selection(TREE, "cuda", "nightly-kernel-1-gpu", False) == (
        set(),
        set(),
    )
    with pytest.raises(SelectionError, match="is a nightly suite; add --nightly"):
        select(collection.registrations, catalog, "cuda", ["nightly-kernel-1-gpu"], False)


def test_dry_run_json_of_the_largest_suite_matches_the_anchor(adopted, capsys):
    root, _, _ = adopted
    suite = "base-b-test-1-gpu-large"
    assert (
        main(
            ["--root", str(root), "--hw", "cuda", "--suite", suite, "--dry-run", "--format", "json"]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    enabled, disabled = sglang_tree.anchor_selection(TREE, "cuda", suite, False)
    assert {(f["path"], f["est_time"]) for f in doc["files"]} == enabled
    assert {(d["path"], d["reason"]) for d in doc["disabled"]} == disabled
    assert sum(len(s["files"]) for s in doc["shards"]) == len(enabled)


# --- a small tree, expectations written by hand --------------------------------------------------

HAND_TREE = {
    "registered/unit/test_a.py": '''\
        """Uses register_cuda_ci(stage=..., runner_config=...) like the rest of the tree."""
        import unittest

        from sglang.test.ci.ci_register import register_amd_ci, register_cuda_ci

        register_cuda_ci(est_time=30, stage="base-b", runner_config="1-gpu-large")
        register_amd_ci(45, "stage-b-test-1-gpu-small-amd")


        class TestA(unittest.TestCase):
            def test_one(self):
                self.assertTrue(True)


        if __name__ == "__main__":
            unittest.main()
        ''',
    "registered/unit/test_b.py": """\
        import sys

        import pytest

        from sglang.test.ci.ci_register import register_cuda_ci


        def test_b():
            assert True


        if __name__ == "__main__":
            sys.exit(pytest.main([__file__]))

        register_cuda_ci(
            est_time=90,
            suite="base-b-test-1-gpu-large",
            disabled="flaky on H100",
        )
        """,
    "registered/unit/kernel_helpers.py": """\
        from sglang.test.ci.ci_register import register_cuda_ci

        # register_cuda_ci(est_time=5, suite="base-b-test-1-gpu-large")  <- commented out
        register_cuda_ci(est_time=0, suite="", disabled="helper module")


        def shape(n):
            return (n, n)
        """,
    "registered/unit/test_c.py": """\
        import sys

        import pytest

        from sglang.test.ci.ci_register import register_cuda_ci

        register_cuda_ci(est_time=12, stage="nightly", runner_config="1-gpu-large")
        register_cuda_ci(est_time=300, suite="nightly-kernel-1-gpu", nightly=True)


        def test_c():
            assert "register_cuda_ci(1, 'x')"


        if __name__ == "__main__":
            sys.exit(pytest.main([__file__]))
        """,
}
HAND_EXPECTED = [
    (
        ("cuda", "base-b-test-1-gpu-large", False),
        {("registered/unit/test_a.py", 30.0)},
        {("registered/unit/test_b.py", "flaky on H100")},
    ),
    (("cuda", "nightly-test-1-gpu-large", False), {("registered/unit/test_c.py", 12.0)}, set()),
    (("cuda", "nightly-kernel-1-gpu", True), {("registered/unit/test_c.py", 300.0)}, set()),
    (("amd", "stage-b-test-1-gpu-small-amd", False), {("registered/unit/test_a.py", 45.0)}, set()),
]


def test_small_tree_selects_what_was_written_by_hand(tmp_path):
    import textwrap

    root = tmp_path / "repo"
    for rel, text in HAND_TREE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    assert main(["init", "--root", str(root)]) == 0
    catalog = load_catalog(root)
    collection = collect(catalog)
    assert collection.problems == []
    for (hw, suite, nightly), enabled, disabled in HAND_EXPECTED:
        selection = select(collection.registrations, catalog, hw, [suite], nightly)
        assert {(f.path, f.est_time) for f in selection.files} == enabled, suite
        assert {(d.path, d.reason) for d in selection.disabled} == disabled, suite


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
