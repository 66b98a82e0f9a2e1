"""Data handed from the planner to the executor, and the executor's entry points.

Minimal first version: runs files one by one with ``python <file>`` from the root and judges them
by exit code. Hardened execution (timeouts, process trees, retries, reports) replaces the body of
:func:`execute_shard` without changing these signatures.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class FileToRun:
    """One selected, enabled file of the current shard."""

    path: str  # POSIX, relative to the root
    suite: str
    est_time: float
    gpus: int = 1  # GPUs the file needs (the suite's gpus-per-file); 0 = none


@dataclass(frozen=True)
class DisabledFile:
    """A selected file whose registration is disabled: listed with its reason, never run."""

    path: str
    suite: str
    reason: str


@dataclass(frozen=True)
class ShardContext:
    """What the executor needs to know about the plan it is running a slice of."""

    root: Path
    hw: str
    suites: tuple[str, ...]
    nightly: bool
    shard_id: int  # 0-based
    shard_count: int
    predicted_makespan: float  # est seconds of the slowest shard
    shard_est_total: float  # est seconds of this shard
    lower_bound: float
    plan_hash: str
    disabled: tuple[DisabledFile, ...] = ()
    suite_timeouts: dict[str, float | None] = field(default_factory=dict)


def add_execution_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the flags that control how files run."""
    group = parser.add_argument_group("execution")
    group.add_argument(
        "--continue-on-error",
        action="store_true",
        help="run every file even after a failure (default: stop at the first failing file)",
    )


def validate_execution_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Reject inconsistent execution flags with ``parser.error`` (exit 2)."""


def execute_shard(files: Sequence[FileToRun], ctx: ShardContext, args: argparse.Namespace) -> int:
    """Run ``files`` in order; return the exit code (0 all passed, 1 failures)."""
    passed = failed = 0
    not_run: list[str] = []
    for index, item in enumerate(files, start=1):
        if failed and not args.continue_on_error:
            not_run.append(item.path)
            continue
        start = time.monotonic()
        code = subprocess.call([sys.executable, item.path], cwd=ctx.root)
        status = "passed" if code == 0 else "failed"
        passed += code == 0
        failed += code != 0
        print(
            f"[{index}/{len(files)}] {item.path}  {status}  {time.monotonic() - start:.1f}s "
            f"(est {item.est_time:g}s)",
            flush=True,
        )
    for path in not_run:
        print(f"not_run: {path}")
    print(f"summary: {passed} passed, {failed} failed, {len(ctx.disabled)} skipped", flush=True)
    return 1 if failed else 0
