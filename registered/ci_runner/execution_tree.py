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
import repo_root  # noqa: F401  (the repository root on sys.path)

sys.path.insert(0, str(Path(__file__).parent))

from testing.tree_builder import REPO_ROOT, catalog_toml, suite_toml, write_tree

RUN_SUITE = REPO_ROOT / "run_suite.py"

CATALOG = catalog_toml(
    suite_toml("cpu-suite", "cpu", gpus_per_file=0, timeout_per_file=60),
    suite_toml("gpu-suite", "cuda", gpus_per_file=1, timeout_per_file=60),
    suite_toml("gpu2-suite", "cuda", gpus_per_file=2, timeout_per_file=60),
    suite_toml("gpu-all-suite", "cuda", gpus_per_file="all", timeout_per_file=60),
    registered_dir="registered",
)

PYTEST_MAIN = 'if __name__ == "__main__":\n    sys.exit(pytest.main([__file__, "-q"]))\n'
SCRIPT_MAIN = 'if __name__ == "__main__":\n    sys.exit(main())\n'


def _registered_file(body: str, est: float, suite: str, marker: str, use_pytest: bool) -> str:
    """Imports, one registration, dedented ``body``, then the pytest or script main block."""
    imports = "import sys\n\nimport pytest\n\n" if use_pytest else "import sys\n\n"
    return (
        f"{imports}from ci_runner import register_{marker}_ci\n\n"
        f'register_{marker}_ci(est_time={est}, suite="{suite}")\n\n'
        + textwrap.dedent(body).strip()
        + "\n\n\n"
        + (PYTEST_MAIN if use_pytest else SCRIPT_MAIN)
    )


def pytest_file(body: str, est: float = 1, suite: str = "cpu-suite", marker: str = "cpu") -> str:
    """A registered pytest file with ``body`` (test functions) and the standard main block."""
    return _registered_file(body, est, suite, marker, use_pytest=True)


def script_file(body: str, est: float = 1, suite: str = "cpu-suite", marker: str = "cpu") -> str:
    """A registered non-pytest file: ``body`` must define ``main() -> int``."""
    return _registered_file(body, est, suite, marker, use_pytest=False)


FLAKY_CASE = """
def test_second_time_lucky():
    marker = Path(__file__).with_suffix(".ran")
    first = not marker.exists()
    marker.write_text("x")
    assert not first, "fails on the first attempt only"
"""  # a pytest case that fails on its file's first attempt only (needs pathlib's Path)


def gpu_recorder(est: float, seconds: float, suite: str = "gpu-suite", extra: str = "") -> str:
    """A CUDA-registered script that sleeps, then appends a JSON line to ``$SLOT_LOG``: its file,
    ``CUDA_VISIBLE_DEVICES`` and start/end times. ``extra`` is appended to the registration
    call's arguments (e.g. ``", min_gpus=2"``)."""
    body = (
        "import json\nimport os\nimport time\n\n\ndef main():\n"
        "    start = time.time()\n"
        f"    time.sleep({seconds})\n"
        "    record = {'file': __file__, 'gpus': os.environ.get('CUDA_VISIBLE_DEVICES'),"
        " 'start': start, 'end': time.time()}\n"
        "    with open(os.environ['SLOT_LOG'], 'a') as log:\n"
        "        log.write(json.dumps(record) + '\\n')\n"
        "    return 0\n"
    )
    text = script_file(body, est=est, suite=suite, marker="cuda")
    return text.replace(f'suite="{suite}")', f'suite="{suite}"{extra})', 1)


def make_tree(root: Path, files: dict[str, str]) -> Path:
    """Write the catalog and ``files`` (paths relative to ``registered/``) under ``root``."""
    return write_tree(root, CATALOG, files, under="registered")


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
