"""Run every ``python ...`` command of the docs' shell code blocks; each must exit 0.

A helper of ``test_docs.py`` (not a test file). The convention, documented in
docs/ci-wiring.md#the-docs-check:

* A command is a line (``\\`` continuations joined) of a fenced block whose info string is
  ``bash``, ``sh``, ``shell``, ``console`` or empty, starting with ``python`` or ``python3``
  (after optional ``VAR=value`` assignments or a ``$`` prompt).
* ``# gpu-only`` (needs a GPU) or ``# no-check: reason`` (recursive, slow, needs CI
  artifacts, ...) at the end of the command marks it as not run here. The same comment on a
  line of its own marks every command below it in that block.
* Every other command runs with ``bash -c`` in a fresh copy of the working tree (so whatever it
  writes is thrown away, a JIT cache included), with the running interpreter's ``bin`` first on
  ``PATH``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from docs_markdown import MarkdownDoc, Problem

SHELL_INFOS = {"", "bash", "sh", "shell", "console", "zsh"}
MARKER = re.compile(r"(?:^|\s)#\s*(gpu-only|no-check)\b")
PROMPT = re.compile(r"^\$\s+")
COMMAND = re.compile(r"^(?:\$\s+)?(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*python3?(?:\s|$)")
COPY_IGNORE = shutil.ignore_patterns(
    ".git",
    ".venv*",
    "__pycache__",
    "*.egg-info",
    ".ci-cache",
    ".ruff_cache",
    ".pytest_cache",
    "build",
    "dist",
    "out",
    ".clangd",
)
# Set by the runner for this test file; a command must not write into them.
DROPPED_ENV = (
    "PYTEST_ADDOPTS",
    "PYTHONPATH",
    "GITHUB_STEP_SUMMARY",
    "GITHUB_OUTPUT",
    "GITHUB_ENV",
    "JIT_KERNEL_BENCH_JSON",
    "JIT_KERNEL_BENCH_PLOT",
)


@dataclass(frozen=True)
class DocCommand:
    """One command of a doc: where it is, its text, and its marker (None: it must run)."""

    path: str
    line: int
    text: str
    marker: str | None


def _logical_lines(block_lines: Iterable[str], start: int) -> list[tuple[int, str]]:
    """Lines with ``\\`` continuations joined, each with the number of its first line."""
    joined: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for offset, raw in enumerate(block_lines):
        number = start + offset
        text = raw.rstrip()
        if pending is not None:
            number, text = pending[0], pending[1] + " " + text.lstrip()
        if text.endswith("\\"):
            pending = (number, text[:-1].rstrip())
            continue
        pending = None
        joined.append((number, text))
    if pending is not None:
        joined.append(pending)
    return joined


def doc_commands(doc: MarkdownDoc) -> list[DocCommand]:
    """Every ``python`` command in the shell blocks of ``doc``, with its marker."""
    commands: list[DocCommand] = []
    for block in doc.blocks:
        if block.info not in SHELL_INFOS:
            continue
        block_marker: str | None = None
        for number, text in _logical_lines(block.lines, block.start):
            stripped = text.strip()
            marker = MARKER.search(stripped)
            if stripped.startswith("#"):
                block_marker = marker.group(1) if marker else block_marker
                continue
            if COMMAND.match(stripped):
                own = marker.group(1) if marker else None
                text = PROMPT.sub("", stripped)
                commands.append(DocCommand(doc.rel, number, text, own or block_marker))
    return commands


def _environment(tree: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in DROPPED_ENV}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(tree)
    env["JIT_KERNEL_CACHE_DIR"] = str(tree.parent / "jit-cache")  # nothing lands in the real one
    return env


def run_command(command: DocCommand, root: Path, timeout: float) -> Problem | None:
    """Run ``command`` in a throwaway copy of ``root``; a Problem unless it exits 0."""
    with tempfile.TemporaryDirectory(prefix="docs-cmd-") as scratch:
        tree = Path(scratch) / "repo"
        shutil.copytree(root, tree, ignore=COPY_IGNORE, symlinks=True)
        try:
            proc = subprocess.run(
                ["bash", "-c", command.text],
                cwd=tree,
                env=_environment(tree),
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return Problem(
                command.path,
                command.line,
                f"`{command.text}` did not finish in {timeout:.0f}s; make it cheaper or mark "
                "it `# no-check: <reason>`",
            )
    if proc.returncode == 0:
        return None
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
    return Problem(
        command.path,
        command.line,
        f"`{command.text}` exited {proc.returncode} (mark it `# gpu-only` or "
        f"`# no-check: <reason>` if it cannot run on a CPU machine); output tail:\n{tail}",
    )


def run_commands(
    commands: list[DocCommand], root: Path, timeout: float = 90, workers: int | None = None
) -> list[Problem]:
    """Run the unmarked ``commands`` in parallel; the problems, in document order."""
    runnable = [command for command in commands if command.marker is None]
    workers = workers or max(2, os.cpu_count() or 2)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(lambda c: run_command(c, root, timeout), runnable))
    return [problem for problem in results if problem is not None]
