"""Generated repository trees for the execution and report tests (not a test file).

``make_tree`` writes a pyproject.toml with a small catalog plus the given files under
``registered/``; ``run_suite`` runs ``run_suite.py --root <tree>`` in a subprocess, with this
repository on PYTHONPATH so the generated files can import ``ci_runner``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil

REPO_ROOT = Path(__file__).resolve().parents[2]
RUN_SUITE = REPO_ROOT / "run_suite.py"

CATALOG = """\
[tool.ci-runner]
registered-dir = "registered"

[[tool.ci-runner.suites]]
name = "cpu-suite"
hw = "cpu"
gpus-per-file = 0
timeout-per-file = 60

[[tool.ci-runner.suites]]
name = "gpu-suite"
hw = "cuda"
gpus-per-file = 1
timeout-per-file = 60

[[tool.ci-runner.suites]]
name = "gpu2-suite"
hw = "cuda"
gpus-per-file = 2
timeout-per-file = 60
"""

PYTEST_MAIN = 'if __name__ == "__main__":\n    sys.exit(pytest.main([__file__, "-q"]))\n'
SCRIPT_MAIN = 'if __name__ == "__main__":\n    sys.exit(main())\n'


def pytest_file(body: str, est: float = 1, suite: str = "cpu-suite", marker: str = "cpu") -> str:
    """A registered pytest file with ``body`` (test functions) and the standard main block."""
    return (
        f"import sys\n\nimport pytest\n\nfrom ci_runner import register_{marker}_ci\n\n"
        f'register_{marker}_ci(est_time={est}, suite="{suite}")\n\n'
        + textwrap.dedent(body).strip()
        + "\n\n\n"
        + PYTEST_MAIN
    )


def script_file(body: str, est: float = 1, suite: str = "cpu-suite", marker: str = "cpu") -> str:
    """A registered non-pytest file: ``body`` must define ``main() -> int``."""
    return (
        f"import sys\n\nfrom ci_runner import register_{marker}_ci\n\n"
        f'register_{marker}_ci(est_time={est}, suite="{suite}")\n\n'
        + textwrap.dedent(body).strip()
        + "\n\n\n"
        + SCRIPT_MAIN
    )


def make_tree(root: Path, files: dict[str, str]) -> Path:
    """Write the catalog and ``files`` (paths relative to ``registered/``) under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(CATALOG)
    for rel, text in files.items():
        path = root / "registered" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def runner_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS", "CUDA_VISIBLE_DEVICES")
        and not k.startswith("PYTEST_")
    }
    env["PYTHONPATH"] = str(REPO_ROOT)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # keeps each generated file under a second
    env.update(extra or {})
    return env


def run_suite(
    root: Path,
    *args: str,
    hw: str = "cpu",
    suite: str = "cpu-suite",
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``python run_suite.py --root root --hw hw --suite suite *args``; output as text."""
    return subprocess.run(
        [sys.executable, str(RUN_SUITE), "--root", str(root), "--hw", hw, "--suite", suite, *args],
        capture_output=True,
        text=True,
        errors="replace",
        env=runner_env(env),
        timeout=timeout,
        check=False,
    )


def processes_with_marker(marker: str) -> list[psutil.Process]:
    """Live processes whose command line contains ``marker`` (a unique string per test)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if any(marker in part for part in proc.info["cmdline"] or ()):
                found.append(proc)
        except psutil.Error:
            continue
    return found
