"""The benchmark package's import graph is acyclic: sweep -> runner -> report -> table / export,
and stored results are read (document -> compare / plot -> cli) without the measuring stages.

Every ``import`` counts, wherever it is written (module level, inside a function, under
``if TYPE_CHECKING:``), so a cycle cannot hide behind a lazy import.
"""

import ast
import sys
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=2, suite="base-a-test-cpu")

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "jit_kernel.benchmark"

# Stages that must not import a later stage of the data flow (nor, for report, the sweep).
FORBIDDEN = {
    "sweep": {"runner", "report", "table", "export"},
    "report": {"runner", "sweep", "table", "export"},
    "table": {"runner", "export"},
    "export": {"runner", "table"},
    # Stored results are read back without the measuring stages; the CLI sits on top.
    "document": {"runner", "sweep", "timing", "compare", "plot", "cli"},
    "compare": {"runner", "sweep", "timing", "plot", "cli"},
    "plot": {"runner", "sweep", "timing", "compare", "cli"},
}


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module a ``from`` import names (relative levels resolved)."""
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imported_modules(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every absolute module (and ``from pkg import submodule`` target) ``source`` imports."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(node, module, is_package)
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


def import_graph(package_dir: Path, package: str) -> dict[str, set[str]]:
    """``module short name -> short names of sibling modules it imports`` for ``package_dir``."""
    names = {path.stem for path in package_dir.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in sorted(package_dir.glob("*.py")):
        module = package if path.stem == "__init__" else f"{package}.{path.stem}"
        targets = imported_modules(
            path.read_text(encoding="utf-8"), module, path.stem == "__init__"
        )
        prefix = package + "."
        graph[path.stem] = {
            target.removeprefix(prefix).split(".")[0]
            for target in targets
            if target.startswith(prefix) and target.removeprefix(prefix).split(".")[0] in names
        } - {path.stem}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as ``[a, b, ..., a]``, or None when the graph is acyclic."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_benchmark_package_imports_are_acyclic():
    graph = import_graph(ROOT / "jit_kernel" / "benchmark", PACKAGE)
    assert {"sweep", "runner", "report", "table", "export", "marker"} <= set(graph)
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle in jit_kernel/benchmark: " + " -> ".join(cycle or [])


def test_data_flows_one_way():
    graph = import_graph(ROOT / "jit_kernel" / "benchmark", PACKAGE)
    wrong = sorted(
        f"{module}.py imports {target}.py"
        for module, banned in FORBIDDEN.items()
        for target in graph[module] & banned
    )
    assert wrong == []


def test_a_lazy_or_type_checking_import_cycle_is_found(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.b import thing\n")
    (pkg / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import c\n"
    )
    (pkg / "c.py").write_text("def f():\n    from .a import x\n    import pkg.a\n")
    graph = import_graph(pkg, "pkg")
    assert graph == {"__init__": set(), "a": {"b"}, "b": {"c"}, "c": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    (pkg / "c.py").write_text("import os\n")
    assert find_cycle(import_graph(pkg, "pkg")) is None


@pytest.mark.parametrize(
    "name",
    ["benchmark", "parametrize", "do_bench", "BenchResult", "BenchSkip", "skip", "Benchmark"],
)
def test_public_names_stay_on_marker(name):
    from jit_kernel.benchmark import marker

    assert hasattr(marker, name)


def test_benchmark_from_marker_is_a_runnable_sweep():
    from jit_kernel.benchmark import marker
    from jit_kernel.benchmark.sweep import BenchmarkDefinitionError, Sweep

    @marker.benchmark("impl", ["a"])
    def bench(impl):
        marker.skip("no GPU")

    assert isinstance(bench, marker.Benchmark)
    assert isinstance(bench, Sweep)
    assert bench.run(argv=[]).cells[0][0].skip_reason == "no GPU"
    assert marker.BenchmarkDefinitionError is BenchmarkDefinitionError


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
