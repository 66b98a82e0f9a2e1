"""Run a module's compile and link steps through ninja, in the module's staging directory.

ninja runs the independent compile steps (host C++ and CUDA) in parallel and the link after
them; on failure it prints ``FAILED: <output>``, the command and the compiler's output, which we
turn into a :class:`BuildStepError` naming the failing step. A compile step writes the
compiler's dependency file (``-MD -MF``), which ninja reads (``deps = gcc``);
:func:`compiler_inputs` then lists every file the compilers read, as ninja parsed them.

No path from the environment is ever interpreted by a shell. ninja runs each command through
``/bin/sh``, so every word is quoted (``shlex``) and ninja's ``$`` escaped. nvcc then runs its own
sub-steps through a shell *without* quoting, so :func:`nvcc_command` gives it only shell-safe
paths: the sources and outputs relative to the staging directory (itself a safe path), -I
directories and -ccbin through links inside it, nvcc by its real path, and ``TMPDIR`` inside it.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from jit_kernel.compiler.toolchain import JitToolchainError, shell_safe

NINJA_FILE = "build.ninja"
_FAILED = re.compile(r"^FAILED: (?:\[code=(\d+)\] )?(\S+)", re.MULTILINE)


@dataclass(frozen=True)
class BuildStep:
    """One command producing ``output`` (relative to the staging dir) from ``inputs``."""

    output: str
    inputs: tuple[str, ...]
    command: tuple[str, ...]
    source: Path  # the generated source a failure is reported against
    depfile: str | None = None  # the dependency file the command writes (make syntax)


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
            *([f"  depfile = {_escape(step.depfile)}", "  deps = gcc"] if step.depfile else []),
            "",
            f"build {_escape(step.output)}: step{index} {' '.join(map(_escape, step.inputs))}",
            "",
        ]
    path = staging / NINJA_FILE
    path.write_text("\n".join(lines))
    return path


def _linked(staging: Path, target: str, name: str) -> str:
    """A shell-safe path inside ``staging`` that links to ``target``."""
    link = staging / "links" / name
    link.parent.mkdir(exist_ok=True)
    link.symlink_to(os.path.realpath(target))
    return str(link)


def nvcc_command(nvcc: Path, flags: Sequence[str], staging: Path, *args: str) -> tuple[str, ...]:
    """``nvcc <flags> <args>`` with every path nvcc would hand a shell made shell-safe (see the
    module docstring); ``staging``'s real path must be safe already."""
    program = os.path.realpath(nvcc)
    if not shell_safe(program):
        raise JitToolchainError(
            f"nvcc is at {program}, a path with characters nvcc would pass to a shell unquoted; "
            "install the CUDA toolkit at a plain path (letters, digits, _ . / + @ % , : = -)"
        )
    safe: list[str] = []
    pending_ccbin = False
    for index, flag in enumerate(flags):
        if pending_ccbin:
            found = shutil.which(flag) or flag
            real = os.path.realpath(found)
            name = re.sub(r"[^A-Za-z0-9_.+-]", "_", os.path.basename(real)) or "c++"
            safe.append(real if shell_safe(real) else _linked(staging, real, name))
            pending_ccbin = False
        elif flag == "-ccbin":
            safe.append(flag)
            pending_ccbin = True
        elif flag.startswith("-I") and len(flag) > 2 and not shell_safe(flag[2:]):
            safe.append("-I" + _linked(staging, flag[2:], f"include{index}"))
        else:
            safe.append(flag)
    return (program, *safe, *args)


def _jobs() -> list[str]:
    """``-j N`` from ``MAX_JOBS`` (a positive whole number), else nothing."""
    jobs = os.environ.get("MAX_JOBS", "").strip()
    if not jobs:
        return []
    if not jobs.isdigit() or int(jobs) < 1:
        raise JitToolchainError(f"MAX_JOBS={jobs!r} is not a positive whole number of jobs")
    return ["-j", jobs]


def run_ninja(staging: Path, steps: list[BuildStep], verbose: bool = False) -> None:
    """Build every step in ``staging``; raise :class:`BuildStepError` for the first failure."""
    write_ninja_file(staging, steps)
    command = [find_ninja(), "-C", str(staging), *_jobs()]
    if verbose:
        command.append("-v")
    (staging / "tmp").mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(staging / "tmp")}  # nvcc's temporary files: a safe path
    proc = subprocess.run(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    if verbose and proc.stdout:
        print(proc.stdout, end="")
    if proc.returncode == 0:
        return
    match = _FAILED.search(proc.stdout)
    by_output = {step.output: step for step in steps}
    step = by_output.get(match.group(2)) if match else None
    code = int(match.group(1)) if match and match.group(1) else proc.returncode
    raise BuildStepError(step or steps[-1], code, proc.stdout)


def compiler_inputs(staging: Path) -> list[str]:
    """Every file the compile steps in ``staging`` read, as their compilers reported them
    (paths relative to ``staging`` or absolute), from ninja's record of their dependency files."""
    command = [find_ninja(), "-C", str(staging), "-t", "deps"]
    done = subprocess.run(command, capture_output=True, check=False)
    if done.returncode != 0:
        raise JitToolchainError(
            f"`{shlex.join(command)}` failed (exit code {done.returncode}), so the files the "
            f"compilers read are unknown:\n{os.fsdecode(done.stdout + done.stderr).rstrip()}"
        )
    return [os.fsdecode(line[4:]) for line in done.stdout.split(b"\n") if line.startswith(b"    ")]
