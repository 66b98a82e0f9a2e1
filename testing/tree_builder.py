"""Build throwaway repository trees: a ``[tool.ci-runner]`` catalog plus files (not a test file).

The one place the CI-runner tests (and ``benchmarks/runner/bench_discovery.py``) write a temporary
repository: ``catalog_toml(suite_toml(...), ...)`` renders a catalog, ``write_tree`` writes it as
``pyproject.toml`` together with the given files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def suite_toml(name: str, hw: str, **keys: object) -> str:
    """One ``[[tool.ci-runner.suites]]`` entry; keyword names use ``_`` for the TOML ``-``.

    Values are strings, numbers, booleans or lists of strings (their JSON spelling is valid TOML).
    """
    fields = {"name": name, "hw": hw, **keys}
    lines = [f"{key.replace('_', '-')} = {json.dumps(value)}" for key, value in fields.items()]
    return "[[tool.ci-runner.suites]]\n" + "\n".join(lines) + "\n"


def catalog_toml(*suites: str, registered_dir: str | None = None) -> str:
    """A ``pyproject.toml`` text with a ``[tool.ci-runner]`` table and the given suite entries."""
    head = "[tool.ci-runner]\n"
    if registered_dir is not None:
        head += f"registered-dir = {json.dumps(registered_dir)}\n"
    return "\n".join([head, *suites])


def write_tree(
    root: Path,
    catalog: str,
    files: dict[str, str],
    *,
    under: str = "",
    dedent: bool = False,
) -> Path:
    """Write ``catalog`` as ``root/pyproject.toml`` and ``files`` (path -> text) under ``root``.

    File paths are relative to ``root / under``; ``dedent`` strips common indentation first.
    Returns ``root``.
    """
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(catalog, encoding="utf-8")
    base = root / under
    base.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text) if dedent else text, encoding="utf-8")
    return root


def run_script(name: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the maintenance command ``name`` (``check_registered_tests.py`` runs
    ``python -m ci_runner.maintenance check-registered-tests``) of this repository with ``cwd``
    as working directory; text output."""
    command = name.removesuffix(".py").replace("_", "-")
    return subprocess.run(
        [sys.executable, "-m", "ci_runner.maintenance", command],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )


def run_maintenance(command: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m ci_runner.maintenance COMMAND ARGS...`` of this repository; text output."""
    return subprocess.run(
        [sys.executable, "-m", "ci_runner.maintenance", command, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        check=False,
    )
