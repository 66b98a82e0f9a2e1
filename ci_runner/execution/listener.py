"""What the executor tells about a shard as it runs: the :class:`ShardListener` interface.

The executor knows nothing of the reports; the CLI hands it a listener (the reports of
:mod:`ci_runner.reports`), so JUnit XML and timings are still rewritten after every file, and
the console can follow a running file's output and case record. Calls come from the executor's
threads, one at a time per file, in this order: :meth:`~ShardListener.shard_started` once; then
for each file, for each attempt, :meth:`~ShardListener.attempt_started`,
:meth:`~ShardListener.attempt_stopped` and (when it failed) :meth:`~ShardListener.attempt_ended`,
then :meth:`~ShardListener.file_finished`; and :meth:`~ShardListener.shard_finished` last.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ci_runner.model import AttemptResult, FileResult, RunInfo, ShardOutcome


@dataclass(frozen=True)
class AttemptStart:
    """An attempt whose process just started: what a live view needs to follow it."""

    path: str
    number: int  # 1-based
    max_attempts: int
    est_time: float
    timeout: float  # this attempt's limit, seconds
    gpu_ids: tuple[str, ...]
    output: Path  # combined stdout+stderr, growing
    record: Path  # the case record, growing
    started: float  # time.monotonic() at the start
    note: str = ""  # what this process is, when not the attempt's first: "resumed after ..."


class ShardListener(Protocol):
    """Receives a shard's progress; must be safe to call from several threads."""

    def shard_started(self, info: RunInfo, results: Sequence[FileResult], to_run: int) -> None:
        """Before any file runs. ``results``: a placeholder per file in plan order (not_run for
        the ``to_run`` files to run, then skipped, then disabled). Raising ``OSError`` (an output
        that cannot be written) stops the shard with exit 2 before anything runs."""

    def attempt_started(self, start: AttemptStart) -> None:
        """An attempt's process started; its output and record grow until attempt_stopped."""

    def attempt_stopped(self, start: AttemptStart) -> None:
        """The attempt's processes are gone; its output and record are complete."""

    def attempt_ended(self, path: str, attempt: AttemptResult, why: str, again: bool) -> None:
        """A failed attempt of ``path``; ``again``: whether it is retried, ``why`` (not)."""

    def file_finished(self, index: int, result: FileResult, total: int) -> None:
        """The file at plan position ``index`` (of ``total`` to run) ended with ``result``."""

    def shard_finished(self, outcome: ShardOutcome) -> None:
        """Every file ended (or will not run); ``outcome`` holds the final results."""
