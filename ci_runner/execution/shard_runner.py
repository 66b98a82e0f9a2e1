"""The shard loop: hand files to free slots longest first, collect results, stop when told.

Scheduling: files are taken in plan order (longest est first); whenever slots are free, the
first waiting file that fits starts (a file needs ``max(gpus, 1)`` slots, or every slot when its
suite has ``gpus-per-file = "all"``), so smaller files fill slots a bigger one cannot use yet. With fail-fast (the default) no file starts after the
first failure; files already running finish and are reported; the rest are not_run. On SIGTERM,
SIGHUP or SIGINT the running files' process trees are killed and every unfinished file is not_run.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ci_runner.catalog.quarantine import QuarantineEntry
from ci_runner.execution.child_env import AttemptFiles
from ci_runner.execution.file_runner import CancelToken, RetryBudget, RunSettings, run_file
from ci_runner.execution.gpu_slots import SlotPool, SlotSet, slots_needed
from ci_runner.execution.listener import ShardListener
from ci_runner.execution.quarantine import apply_quarantine
from ci_runner.execution.signals import StopRequest, signal_name
from ci_runner.exit_codes import EXIT_OK, EXIT_SIGNAL_BASE, EXIT_TEST_FAILURES
from ci_runner.model import (
    FAILED,
    NOT_RUN,
    FileResult,
    ShardOutcome,
    fails_run,
    placeholder,
)

POLL_SECONDS = 0.1


@dataclass(frozen=True)
class Job:
    """One file to run: its plan position, what it needs, and its time limit."""

    index: int  # position in the report order
    path: str
    suite: str
    est_time: float
    gpus: int
    timeout: float
    all_gpus: bool = False  # takes every slot of the shard
    quarantined: str | None = None  # the whole file is quarantined, and why
    cases: tuple[str, ...] = ()  # node ids of the cases to run; () = all


@dataclass
class _Running:
    job: Job
    thread: threading.Thread
    cancel: CancelToken
    slot_ids: tuple[str, ...]


def _cleanup(result: FileResult) -> None:
    for attempt in result.attempts:
        AttemptFiles(Path(attempt.output_path)).remove()


class ShardRunner:
    """Runs ``jobs`` on ``slots`` and tells ``listener`` about every attempt and file.

    ``results``: the shard's results in plan order, starting as placeholders (the jobs' own
    positions first); each finished file replaces its placeholder.
    """

    def __init__(
        self,
        jobs: Sequence[Job],
        slots: SlotSet,
        settings: RunSettings,
        listener: ShardListener,
        stop: StopRequest,
        results: Sequence[FileResult],
        continue_on_error: bool,
        fail_on_flaky: bool,
        failure_exit_status: int = EXIT_TEST_FAILURES,
        quarantine: tuple[QuarantineEntry, ...] = (),
    ) -> None:
        self.jobs = sorted(jobs, key=lambda j: j.index)  # plan order: longest first as packed
        self.slots = slots
        self.pool = SlotPool(slots.ids)
        self.settings = settings
        self.listener = listener
        self.results = list(results)
        self.stop = stop
        self.continue_on_error = continue_on_error
        self.fail_on_flaky = fail_on_flaky
        self.failure_exit_status = failure_exit_status
        self.quarantine = quarantine
        self.budget = RetryBudget()
        self._done: queue.Queue[tuple[int, FileResult]] = queue.Queue()
        self._first_failure: FileResult | None = None

    def _is_failure(self, result: FileResult) -> bool:
        return fails_run(result, self.fail_on_flaky)

    def _worker(self, job: Job, gpu_ids: tuple[str, ...], cancel: CancelToken) -> None:
        try:
            result = run_file(
                job.path, job.suite, job.est_time, self.settings,
                gpu_ids if self.slots.pinned and job.gpus > 0 else (),
                self.slots.pinned and job.gpus > 0, job.timeout, cancel, self.budget,
                self.listener, job.cases,
            )  # fmt: skip
            result = apply_quarantine(result, job.quarantined, self.quarantine)
        except Exception as exc:  # an executor bug must not hang the shard
            result = FileResult(
                path=job.path, suite=job.suite, est_time=job.est_time, status=FAILED,
                elapsed=0.0, reason=f"runner error: {type(exc).__name__}: {exc}",
            )  # fmt: skip
        self._done.put((job.index, result))

    def _launch(self, waiting: list[Job], running: dict[int, _Running]) -> None:
        for job in list(waiting):
            ids = self.pool.try_take(self.pool.size if job.all_gpus else slots_needed(job.gpus))
            if ids is None:
                continue
            waiting.remove(job)
            cancel = CancelToken()
            thread = threading.Thread(
                target=self._worker, args=(job, ids, cancel), name=f"file-{job.index}", daemon=True
            )
            running[job.index] = _Running(job, thread, cancel, ids)
            thread.start()

    def _collect(self, running: dict[int, _Running], timeout: float | None) -> bool:
        try:
            index, result = self._done.get(timeout=timeout)
        except queue.Empty:
            return False
        entry = running.pop(index)
        entry.thread.join()
        self.pool.give_back(entry.slot_ids)
        self.results[index] = result
        self.listener.file_finished(index, result, len(self.jobs))
        _cleanup(result)
        if self._is_failure(result) and self._first_failure is None:
            self._first_failure = result
        return True

    def run(self) -> tuple[list[Job], int | None]:
        """Run until done, fail-fast or a stop; return (jobs never started, stop signal)."""
        waiting = list(self.jobs)
        running: dict[int, _Running] = {}
        while True:
            if self.stop.requested:
                break
            if self._first_failure is None or self.continue_on_error:
                self._launch(waiting, running)
            if not running:
                break
            self._collect(running, POLL_SECONDS)
        signum = self.stop.signum if self.stop.requested else None
        if running:
            stoppers = [
                threading.Thread(target=entry.cancel.cancel, args=(signum or 15,), daemon=True)
                for entry in running.values()
            ]
            for thread in stoppers:
                thread.start()
            while running:
                self._collect(running, None)
            for thread in stoppers:
                thread.join()
        return waiting, signum

    def not_run_reason(self, signum: int | None) -> str:
        if signum is not None:
            return f"not started: the run was interrupted by {signal_name(signum)}"
        failure = self._first_failure
        if failure is not None:
            return (
                f"not started: fail-fast after {failure.path} {failure.status} "
                "(pass --continue-on-error to run every file)"
            )
        return "not started"

    def exit_code(self, results: Sequence[FileResult]) -> int:
        if any(self._is_failure(r) for r in results):
            return self.failure_exit_status
        return EXIT_OK


def run_jobs(runner: ShardRunner, outcome: ShardOutcome) -> None:
    """Drive ``runner`` and fill ``outcome`` (results, wall, exit code, interruption)."""
    start = time.monotonic()
    never_started, signum = runner.run()
    reason = runner.not_run_reason(signum)
    results = list(runner.results)
    for job in never_started:
        results[job.index] = dataclasses.replace(
            placeholder(job.path, job.suite, job.est_time, NOT_RUN, reason),
            quarantined=job.quarantined,
        )
    outcome.results = results
    outcome.wall = time.monotonic() - start
    if signum is not None:
        outcome.interrupted_by = signal_name(signum)
        outcome.exit_code = EXIT_SIGNAL_BASE + signum
    else:
        outcome.exit_code = runner.exit_code(results)
