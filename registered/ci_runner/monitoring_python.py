"""A Python >= 3.12 interpreter for tests of the ``sys.monitoring`` recorder (not a test file).

The recorder runs in the tested processes, whichever interpreter they use; CI's own interpreter
may be older. :func:`monitoring_python` finds one: this one when it is new enough, else a
``python3.1x`` on ``PATH`` or under pyenv's root (``$PYENV_ROOT``, ``~/.pyenv``) that answers.
The recorder itself needs only the standard library, so the repository on ``PYTHONPATH`` is
enough.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NONE_FOUND = "no Python >= 3.12 (sys.monitoring) on PATH or under pyenv's root"


def _answers(executable: str) -> bool:
    try:
        done = subprocess.run(
            [executable, "-c", "import sys; sys.exit(0 if hasattr(sys, 'monitoring') else 1)"],
            capture_output=True, timeout=60, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@functools.cache
def monitoring_python() -> str | None:
    """An interpreter with ``sys.monitoring``, or None."""
    if hasattr(sys, "monitoring"):
        return sys.executable
    candidates = [shutil.which(f"python3.{minor}") for minor in range(12, 20)]
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    candidates += sorted(str(p) for p in pyenv.glob("3.1[2-9]*/bin/python3"))
    return next((c for c in candidates if c and _answers(c)), None)


def run_monitored(script: str, *args: str, cwd: Path | None = None) -> str:
    """Run ``script`` under :func:`monitoring_python` with the repository importable; stdout."""
    python = monitoring_python()
    assert python is not None, NONE_FOUND
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for variable in ("CI_RUNNER_RECORD_DEPS", "COVERAGE_PROCESS_START", "CI_RUNNER_RECORD_CASE"):
        env.pop(variable, None)  # this test's own recording, if any, stays out of it
    done = subprocess.run(
        [python, "-c", script, *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout
