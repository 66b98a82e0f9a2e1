"""The runner's stages import one way: each may use the ones before it, never one after.

    model <- catalog <- collect <- select <- impact <- plan <- execution <- reports <- tools <- cli

``model`` (with the other shared modules: markers, env, exit codes, usage errors, lazy exports, safe files and
safe text) imports no stage, and ``model`` imports nothing of the runner at all; the tools (``maintenance``,
``adoption``) use the stages they need; the CLI sits on top. Execution tells a listener what
happened and the CLI connects the reports to it, so execution never imports the reports. Every
import counts, wherever it is written (module level, inside a function, under
``if TYPE_CHECKING:``), so a lazy import cannot hide a wrong direction.
"""

import sys
from pathlib import Path

import pytest
from import_graph import imported, module_name

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=3, suite="base-a-test-cpu")

ROOT = Path(__file__).resolve().parents[2]
SHARED = (
    "__init__",
    "model",
    "markers",
    "env",
    "exit_codes",
    "cli_errors",
    "cache_location",
    "file_safety",
    "safe_text",
    "lazy_exports",
)
ORDER = ("catalog", "collect", "select", "impact", "plan", "execution", "reports")
TOOLS = ("maintenance", "adoption", "workflows")
LEVELS = {
    **dict.fromkeys(SHARED, 0),
    **{stage: level for level, stage in enumerate(ORDER, start=1)},
    **dict.fromkeys(TOOLS, len(ORDER) + 1),
    "cli": len(ORDER) + 2,
    "__main__": len(ORDER) + 2,  # python -m ci_runner: the CLI
}


def stage_of(name: str, package_dir: Path, package: str) -> str | None:
    """The stage of module ``name`` (its top-level module or folder), None outside the package.

    ``package.attr`` where ``attr`` is no module (``from ci_runner import register_cuda_ci``)
    belongs to the package's ``__init__``.
    """
    parts = name.split(".")
    if parts[0] != package:
        return None
    if len(parts) == 1:
        return "__init__"
    top = parts[1]
    is_module = (package_dir / f"{top}.py").is_file() or (package_dir / top).is_dir()
    return top if is_module else "__init__"


def stage_imports(package_dir: Path, package: str) -> dict[str, dict[str, str]]:
    """``file -> {stage it imports: the shortest module name it imports it by}``."""
    graph: dict[str, dict[str, str]] = {}
    for path in sorted(package_dir.rglob("*.py")):
        stages: dict[str, str] = {}
        for target in sorted(imported(path, module_name(path, package_dir, package)), key=len):
            stage = stage_of(target, package_dir, package)
            if stage is not None:
                stages.setdefault(stage, target)
        graph[path.relative_to(package_dir).as_posix()] = stages
    return graph


def violations(package_dir: Path, package: str, levels: dict[str, int]) -> list[str]:
    """Each import of a later stage, and each module in no stage, as one line."""
    found: list[str] = []
    for file, targets in stage_imports(package_dir, package).items():
        stage = stage_of(
            module_name(package_dir / file, package_dir, package), package_dir, package
        )
        if stage not in levels:
            found.append(f"{file}: stage {stage!r} has no place in the import order")
            continue
        found.extend(
            f"{file} imports {target} ({target_stage}, a later stage than {stage})"
            for target_stage, target in sorted(targets.items())
            if levels.get(target_stage, len(levels)) > levels[stage]
        )
    return sorted(found)


def test_no_stage_imports_a_later_one():
    assert violations(ROOT / "ci_runner", "ci_runner", LEVELS) == []


def test_model_imports_nothing_of_the_runner():
    graph = stage_imports(ROOT / "ci_runner", "ci_runner")
    assert graph["model.py"] == {}


def test_execution_does_not_know_the_reports():
    graph = stage_imports(ROOT / "ci_runner", "ci_runner")
    wrong = sorted(
        f"{file} imports {target}"
        for file, targets in graph.items()
        if file.startswith("execution/")
        for stage, target in targets.items()
        if stage == "reports"
    )
    assert wrong == []


def test_every_stage_is_a_folder_of_its_own():
    for stage in (*ORDER, *TOOLS, "cli"):
        assert (ROOT / "ci_runner" / stage / "__init__.py").is_file(), stage


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"model.py": "import os\n"}, []),
        (
            {"model.py": "from pkg.catalog import Catalog\n"},
            ["model.py imports pkg.catalog (catalog, a later stage than model)"],
        ),
        (
            {"execution/run.py": "def f():\n    from pkg.reports.junit import write\n"},
            ["execution/run.py imports pkg.reports.junit (reports, a later stage than execution)"],
        ),
        (
            {"reports/x.py": "from ..execution import run\nfrom . import y\nimport pkg.model\n"},
            [],
        ),
        (
            {
                "execution/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                "    from ..cli import main\n"
            },
            ["execution/__init__.py imports pkg.cli (cli, a later stage than execution)"],
        ),
        (
            {"helpers.py": "import os\n"},
            ["helpers.py: stage 'helpers' has no place in the import order"],
        ),
    ],
)
def test_a_wrong_direction_is_found_wherever_the_import_is(tmp_path, files, expected):
    package = tmp_path / "pkg"
    for folder in ("catalog", "execution", "reports", "cli"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    for name, text in files.items():
        (package / name).write_text(text)
    assert violations(package, "pkg", LEVELS) == expected


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
