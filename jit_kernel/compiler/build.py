"""Run a module's compile and link steps through ninja, in the module's staging directory.

ninja runs the independent compile steps (host C++ and CUDA) in parallel and the link after
them; on failure it prints ``FAILED: <output>``, the command and the compiler's output, which we
turn into a :class:`BuildStepError` naming the failing step.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

NINJA_FILE = "build.ninja"
_FAILED = re.compile(r"^FAILED: (?:\[code=(\d+)\] )?(\S+)", re.MULTILINE)


@dataclass(frozen=True)
class BuildStep:
    """One command producing ``output`` (relative to the staging dir) from ``inputs``."""

    output: str
    inputs: tuple[str, ...]
    command: tuple[str, ...]
    source: Path  # the generated source a failure is reported against


class BuildStepError(Exception):
    """A step failed: which one, its exit code and what ninja printed."""

    def __init__(self, step: BuildStep, exit_code: int, output: str) -> None:
        super().__init__(f"{step.output}: exit code {exit_code}")
        self.step = step
        self.exit_code = exit_code
        self.output = output


def find_ninja() -> str:
    """The ninja executable: PATH, else the ``ninja`` package's bundled binary."""
    found = shutil.which("ninja")
    if found:
        return found
    try:
        import ninja  # the PyPI package ships the binary
    except ImportError:
        raise RuntimeError(
            "ninja not found: install it with `pip install ninja` (part of the `jit` extra) "
            "or put a ninja binary on PATH"
        ) from None
    return str(Path(ninja.BIN_DIR) / "ninja")


def _escape(text: str) -> str:
    return text.replace("$", "$$")


def write_ninja_file(staging: Path, steps: list[BuildStep]) -> Path:
    """Write ``build.ninja``: one rule per step (the commands differ in every flag)."""
    lines = ["ninja_required_version = 1.3", ""]
    for index, step in enumerate(steps):
        lines += [
            f"rule step{index}",
            f"  command = {_escape(shlex.join(step.command))}",
            f"  description = {_escape(step.output)}",
            "",
            f"build {_escape(step.output)}: step{index} {' '.join(map(_escape, step.inputs))}",
            "",
        ]
    path = staging / NINJA_FILE
    path.write_text("\n".join(lines))
    return path


def run_ninja(staging: Path, steps: list[BuildStep], verbose: bool = False) -> None:
    """Build every step in ``staging``; raise :class:`BuildStepError` for the first failure."""
    write_ninja_file(staging, steps)
    command = [find_ninja(), "-C", str(staging)]
    if verbose:
        command.append("-v")
    jobs = os.environ.get("MAX_JOBS")
    if jobs:
        command += ["-j", jobs]
    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if verbose and proc.stdout:
        print(proc.stdout, end="")
    if proc.returncode == 0:
        return
    match = _FAILED.search(proc.stdout)
    by_output = {step.output: step for step in steps}
    step = by_output.get(match.group(2)) if match else None
    code = int(match.group(1)) if match and match.group(1) else proc.returncode
    raise BuildStepError(step or steps[-1], code, proc.stdout)
