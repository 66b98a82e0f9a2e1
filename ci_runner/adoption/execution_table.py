"""The ``[tool.ci-runner.execution]`` table ``init`` drafts when the tree's runner is SGLang's.

SGLang runs ``test/run_suite.py`` (it imports ``sglang.test.ci``) from ``test/``, next to
``test/registered/``. When ``init`` finds such a runner beside the registered directory, it
writes the execution table that makes this runner behave as that one does (timeouts, retries,
working directory, ``-f``, the TIMINGS block, CUDA coredumps, one file at a time on cuda), so
day one runs like the day before. Anything else gets no table: this runner's own defaults.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from ci_runner.adoption.tables import DraftedTable
from ci_runner.file_safety import read_regular_text

RUNNER_FILE = "run_suite.py"
# Text that only SGLang's runner holds: its imports of the sglang CI package.
SGLANG_RUNNER_SIGNS = ("sglang.test.ci", "run_unittest_files")
COREDUMP = {
    "switch-variable": "SGLANG_CUDA_COREDUMP",
    "dir-variable": "SGLANG_CUDA_COREDUMP_DIR",
    "dir-name": "sglang_cuda_coredumps",
}


def sglang_runner_directory(root: Path, registered_dir: str) -> str | None:
    """The root-relative directory of SGLang's ``run_suite.py`` beside ``registered_dir``, or
    None when there is none (or it is not SGLang's)."""
    parent = PurePosixPath(registered_dir).parent.as_posix()
    try:
        text = read_regular_text(root / parent / RUNNER_FILE)
    except (OSError, ValueError):
        return None
    return parent if any(sign in text for sign in SGLANG_RUNNER_SIGNS) else None


def execution_table(root: Path, registered_dir: str) -> DraftedTable | None:
    """The table that reproduces SGLang's runner beside ``registered_dir``, or None for this
    runner's defaults."""
    directory = sglang_runner_directory(root, registered_dir)
    if directory is None:
        return None
    where = f"{directory}/{RUNNER_FILE}" if directory != "." else RUNNER_FILE
    return DraftedTable(
        "execution",
        {
            "est-timeout": "sglang",
            "retry-timeout-increase": 600,
            "retry-wait-seconds": 60,
            "retry-on": "output-patterns",
            "retry-timeouts": True,
            "working-directory": directory,
            "file-arguments": ["-f"],
            "timings-block": "stderr",
            "one-file-at-a-time": True,
            "cuda-coredump": COREDUMP,
            "failure-exit-status": 255,
        },
        comments=(
            f"How {where} (SGLang's runner) runs files; see docs/adopting.md, \"Flags and",
            "behaviour compared with SGLang's run_suite.py\". Delete a key for this runner's "
            "default.",
        ),
        notes={
            "est-timeout": "--timeout-from-est-time: max(1.5*est, est+1800), no cap",
            "retry-timeout-increase": "--enable-retry adds 600 s to a flat limit",
            "retry-on": "retry accuracy/performance symptoms only",
            "working-directory": f"files run from here, as after 'cd {directory}'",
            "file-arguments": "python <file> -f: unittest stops at the first failure",
            "timings-block": "TIMINGS BEGIN/END for dashboards, on stderr as SGLang's logger",
            "one-file-at-a-time": "on cuda, unless --gpus/--gpu-ids",
            "failure-exit-status": "sys.exit(-1) in SGLang's runner",
        },
    )


def pytest_launcher_table(files: int) -> DraftedTable:
    """The table ``init`` writes for a tree whose test files have no ``__main__`` block."""
    return DraftedTable(
        "execution",
        {"launcher": "pytest"},
        comments=(
            f'None of the {files} registered file(s) has an `if __name__ == "__main__":` block',
            "that runs its tests, so each runs as `python -m pytest <file>`; see "
            "docs/running-and-reports.md.",
        ),
    )
