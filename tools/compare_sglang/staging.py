"""Copy what the comparison reads from an SGLang checkout into a scratch directory.

The user's checkout is only read. The copy holds upstream's runner and registry, the registered
tests, the jit_kernel tests/benchmarks some commits also collect, the workflows, and the CI
scripts (``compute_partitions.py``); not the root ``pyproject.toml``, so ``init`` starts from
nothing, as on a repository that never had a catalog.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

REQUIRED = ("test/run_suite.py", "test/registered", "python/sglang/test/ci/ci_register.py")
COPIED_DIRS = (
    "test/registered",
    "python/sglang/test/ci",
    "python/sglang/jit_kernel",
    ".github",
    "scripts/ci",
)
COPIED_FILES = ("test/run_suite.py",)


class StagingError(Exception):
    """The path is not an SGLang checkout this tool can compare; the message says what is missing."""


def _ignore(directory: str, names: list[str]) -> set[str]:
    return {n for n in names if n == "__pycache__" or n.endswith(".pyc")}


def stage(checkout: Path, into: Path | None = None) -> Path:
    """A fresh copy of the parts of ``checkout`` the comparison reads; returns its root."""
    checkout = checkout.resolve()
    if not checkout.is_dir():
        raise StagingError(f"{checkout}: not a directory")
    missing = [rel for rel in REQUIRED if not (checkout / rel).exists()]
    if missing:
        raise StagingError(
            f"{checkout}: missing {', '.join(missing)} (the comparison needs a checkout whose "
            "test/run_suite.py selects from test/registered via ci_register.py)"
        )
    root = Path(tempfile.mkdtemp(prefix="compare-sglang-", dir=into))
    for rel in COPIED_DIRS:
        if (checkout / rel).is_dir():
            shutil.copytree(checkout / rel, root / rel, ignore=_ignore, symlinks=True)
    for rel in COPIED_FILES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(checkout / rel, root / rel)
    return root
