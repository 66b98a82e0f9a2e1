"""Throwaway repository trees for the discovery, selection and CLI tests (not a test file)."""

from __future__ import annotations

import sys
from pathlib import Path

import repo_root  # noqa: F401  (the repository root on sys.path)

sys.path.insert(0, str(Path(__file__).parent))

from testing.tree_builder import (
    REPO_ROOT as REPO_ROOT,  # re-exported: the tests import it from here
)
from testing.tree_builder import catalog_toml, suite_toml, write_tree

CATALOG = catalog_toml(
    suite_toml(
        "unit-cpu",
        "cpu",
        renamed_from=["old-unit-cpu"],
        gpus_per_file=0,
        timeout_per_file=60,
        runner="ubuntu-latest",
        job_timeout_minutes=30,
    ),
    suite_toml("extra-cpu", "cpu", gpus_per_file=0, runner="ubuntu-latest", job_timeout_minutes=30),
    suite_toml("unit-1-gpu", "cuda", gpus_per_file=1, runner="1-gpu-h100", job_timeout_minutes=60),
    suite_toml("unit-8-gpu", "cuda", gpus_per_file=8, runner="8-gpu-h200", job_timeout_minutes=60),
    suite_toml("nightly-1-gpu", "cuda", nightly=True, runner="1-gpu-h100", job_timeout_minutes=240),
    registered_dir="registered",
)

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
    write_tree(root, catalog, files, dedent=True)
    (root / "registered").mkdir(exist_ok=True)
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
