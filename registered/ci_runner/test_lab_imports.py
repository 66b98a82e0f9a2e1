"""The tests and the lab import each other in one direction only, through ``testing/``.

* The lab (``benchmarks/``, ``tools/``, ``verification/``, ``testing/``) imports nothing from
  ``registered/``: a helper both need lives in ``testing/`` (the tree generators, the kernels'
  fp32 references, the benchmark definitions of ``testing/bench/``).
* ``registered/`` imports nothing from ``benchmarks/``, ``tools/`` or ``verification/``; the one
  exception is a test of a lab tool, which imports the tool it tests (:data:`LAB_TESTS`).
* ``testing/`` imports nothing from ``benchmarks/``, ``tools/`` or ``verification/`` either, so
  that what a registered file imports from it cannot pull the lab in.

Every import counts, wherever it is written (:mod:`import_graph`). A top-level import of a
helper module of ``registered/`` by its bare name (``from tree_builder import ...``, as the
registered tests import their siblings) counts as an import of ``registered/``.
"""

import sys
from pathlib import Path

import pytest
from import_graph import imported, module_name

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=5, suite="base-a-test-cpu")

ROOT = Path(__file__).resolve().parents[2]
LAB = ("benchmarks", "tools", "verification")
SHARED = "testing"
TESTS = "registered"
# A registered test of a lab tool -> the lab modules it tests (and may import).
LAB_TESTS = {
    "registered/ci_runner/test_change_impact.py": ("tools.direct_importers",),
    "registered/ci_runner/test_compare_sglang.py": ("tools.compare_sglang",),
    "registered/ci_runner/test_impact_replay.py": (
        "tools.impact_replay",
        "tools.impact_replay_floor",
        "tools.impact_replay_judge",
        "tools.impact_replay_mutants",
    ),
    "registered/jit/test_bench_upstream_peer.py": (
        "benchmarks.bench_jit_kernels",
        "benchmarks.bench_jit_report",
    ),
    "registered/jit/test_compare_sass.py": ("tools.compare_sass",),
    "registered/jit/test_pdl_wait_order.py": ("tools.pdl_wait_order",),
    "registered/jit/test_tune_kernels_cli.py": ("tools.tune",),
}


def python_files(root: Path, top: str) -> list[Path]:
    return sorted(p for p in (root / top).rglob("*.py") if "__pycache__" not in p.parts)


def helper_names(root: Path) -> set[str]:
    """Bare module names the registered files import each other by (their stems)."""
    return {p.stem for p in python_files(root, TESTS) if p.stem != "__init__"}


def top_of(target: str, helpers: set[str]) -> str:
    """The top-level folder an imported module comes from (``registered`` for a bare helper)."""
    first = target.split(".")[0]
    return TESTS if first in helpers else first


def within(target: str, module: str) -> bool:
    return target == module or target.startswith(module + ".")


def violations(root: Path, lab_tests: dict[str, tuple[str, ...]]) -> list[str]:
    """Each import against the rule, as ``file imports module (why)``, sorted."""
    helpers = helper_names(root)
    found: list[str] = []
    for top in (*LAB, SHARED, TESTS):
        for path in python_files(root, top):
            file = path.relative_to(root).as_posix()
            targets = imported(path, module_name(path, root / top, top))
            for target in sorted(targets):
                source_top = top_of(target, helpers)
                if top in (*LAB, SHARED) and source_top == TESTS and target.split(".")[0] != top:
                    found.append(f"{file} imports {target} (the lab never imports the tests)")
                elif top in (SHARED, TESTS) and source_top in LAB:
                    allowed = lab_tests.get(file, ())
                    # `from tools import x` names the package `tools` too: an ancestor is allowed.
                    if top == TESTS and any(
                        within(target, m) or within(m, target) for m in allowed
                    ):
                        continue
                    found.append(
                        f"{file} imports {target} ({top}/ imports nothing from the lab; "
                        "move what both need to testing/)"
                    )
    # A target counted once per file: `from a.b import c` also names `a.b.c`.
    return sorted(set(_shortest(found)))


def _shortest(lines: list[str]) -> list[str]:
    """Drop ``file imports a.b.c`` where the same file's ``a.b`` is reported already."""
    kept: list[str] = []
    for line in sorted(lines, key=len):
        file, _, rest = line.partition(" imports ")
        target = rest.split(" ")[0]
        if not any(
            k.startswith(file + " imports ") and within(target, k.split(" ")[2]) for k in kept
        ):
            kept.append(line)
    return kept


def stale_lab_tests(root: Path, lab_tests: dict[str, tuple[str, ...]]) -> list[str]:
    """Entries of LAB_TESTS whose file is gone or no longer imports a module listed for it."""
    stale = []
    for file, modules in sorted(lab_tests.items()):
        path = root / file
        if not path.is_file():
            stale.append(f"{file}: no such file")
            continue
        targets = imported(path, module_name(path, root / TESTS, TESTS))
        stale += [
            f"{file}: imports nothing from {m}"
            for m in modules
            if not any(within(t, m) for t in targets)
        ]
    return stale


def test_the_tree_follows_the_rule():
    assert violations(ROOT, LAB_TESTS) == []


def test_every_lab_test_exception_is_still_needed():
    assert stale_lab_tests(ROOT, LAB_TESTS) == []


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"benchmarks/b.py": "import torch\nfrom testing import x\n"}, []),
        (
            {"benchmarks/b.py": "from registered.jit import helpers\n"},
            ["benchmarks/b.py imports registered.jit (the lab never imports the tests)"],
        ),
        (
            {"tools/t.py": "def f():\n    from tree_builder import write_tree\n"},
            ["tools/t.py imports tree_builder (the lab never imports the tests)"],
        ),
        (
            {"registered/jit/test_a.py": "from benchmarks.cases import norm\n"},
            [
                "registered/jit/test_a.py imports benchmarks.cases (registered/ imports "
                "nothing from the lab; move what both need to testing/)"
            ],
        ),
        (
            {
                "testing/bench.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                "    import verification.compare\n"
            },
            [
                "testing/bench.py imports verification.compare (testing/ imports nothing "
                "from the lab; move what both need to testing/)"
            ],
        ),
        ({"registered/jit/test_tool.py": "from tools.tool import main\n"}, []),
        (
            {"registered/jit/test_tool.py": "from tools.other import main\n"},
            [
                "registered/jit/test_tool.py imports tools.other (registered/ imports "
                "nothing from the lab; move what both need to testing/)"
            ],
        ),
        ({"registered/jit/test_b.py": "from . import tree_builder\nimport testing\n"}, []),
    ],
)
def test_a_wrong_import_is_found_wherever_it_is(tmp_path, files, expected):
    (tmp_path / "registered" / "ci_runner").mkdir(parents=True)
    (tmp_path / "registered" / "ci_runner" / "tree_builder.py").write_text("")
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    lab_tests = {"registered/jit/test_tool.py": ("tools.tool",)}
    assert violations(tmp_path, lab_tests) == expected


def test_a_stale_exception_is_reported(tmp_path):
    (tmp_path / "registered" / "jit").mkdir(parents=True)
    (tmp_path / "registered" / "jit" / "test_tool.py").write_text("import tools.other\n")
    lab_tests = {
        "registered/jit/test_tool.py": ("tools.tool",),
        "registered/jit/test_gone.py": ("tools.gone",),
    }
    assert stale_lab_tests(tmp_path, lab_tests) == [
        "registered/jit/test_gone.py: no such file",
        "registered/jit/test_tool.py: imports nothing from tools.tool",
    ]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
