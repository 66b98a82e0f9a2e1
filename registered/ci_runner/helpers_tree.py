"""Throwaway repository trees for the discovery, selection and CLI tests (not a test file)."""

from __future__ import annotations

import textwrap
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

CATALOG = """\
[tool.ci-runner]
registered-dir = "registered"

[[tool.ci-runner.suites]]
name = "unit-cpu"
hw = "cpu"
renamed-from = ["old-unit-cpu"]
gpus-per-file = 0
timeout-per-file = 60
runner = "ubuntu-latest"
job-timeout-minutes = 30

[[tool.ci-runner.suites]]
name = "extra-cpu"
hw = "cpu"
gpus-per-file = 0
runner = "ubuntu-latest"
job-timeout-minutes = 30

[[tool.ci-runner.suites]]
name = "unit-1-gpu"
hw = "cuda"
gpus-per-file = 1
runner = "1-gpu-h100"
job-timeout-minutes = 60

[[tool.ci-runner.suites]]
name = "unit-8-gpu"
hw = "cuda"
gpus-per-file = 8
runner = "8-gpu-h200"
job-timeout-minutes = 60

[[tool.ci-runner.suites]]
name = "nightly-1-gpu"
hw = "cuda"
nightly = true
runner = "1-gpu-h100"
job-timeout-minutes = 240
"""

MAIN_BLOCK = 'if __name__ == "__main__":\n    sys.exit(pytest.main([__file__, "-v"]))\n'


def registered_source(
    *registrations: str, main: str = MAIN_BLOCK, header: str | None = None
) -> str:
    """Source of a registered file: imports, the given marker lines, then the main block."""
    head = (
        header
        if header is not None
        else "import sys\n\nimport pytest\n\nfrom ci_runner import register_cpu_ci, register_cuda_ci\n"
    )
    return head + "\n" + "\n".join(registrations) + "\n\n" + main


def script_file(registration: str, exit_code: int = 0, sleep: float = 0.0) -> str:
    """A registered file that appends its path to ``ran.log`` in the cwd and exits ``exit_code``."""
    return (
        "import sys\nimport time\n\nfrom ci_runner import register_cpu_ci\n\n"
        f"{registration}\n\n"
        f'if __name__ == "__main__":\n    time.sleep({sleep})\n'
        '    with open("ran.log", "a") as log:  # the runner starts files from the root\n'
        "        log.write(__file__ + '\\n')\n"
        f"    sys.exit({exit_code})\n"
    )


def make_repo(root: Path, files: dict[str, str], catalog: str = CATALOG) -> Path:
    """Write ``pyproject.toml`` and ``files`` (path -> source, dedented) under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(catalog, encoding="utf-8")
    (root / "registered").mkdir(exist_ok=True)
    for rel, source in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source), encoding="utf-8")
    return root


def ran_files(root: Path) -> list[str]:
    """Paths the files of :func:`script_file` logged, in the order they ran (then clear)."""
    log = root / "ran.log"
    if not log.exists():
        return []
    lines = log.read_text(encoding="utf-8").splitlines()
    log.unlink()
    resolved = root.resolve()
    return [
        Path(line).resolve().relative_to(resolved).as_posix() if Path(line).is_absolute() else line
        for line in lines
    ]
