"""Running one file: its attempts, each in its own session, judged by exit status and case record.

``python <file> [file-arguments]`` (or ``python -m pytest <file> [file-arguments]`` with the
``pytest`` launcher) from the working directory (the root unless the catalog names another; then
the file's path is absolute), stdout+stderr to a file on disk, a timer that dumps the stacks of
the file's Python processes and then kills the whole tree at the limit, and after every attempt
a sweep that kills whatever the file left behind (see :mod:`ci_runner.execution.process_tree`).
The case record the child writes (:mod:`ci_runner.execution.case_record`) names every case, and
the one that was running when the file was stopped.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import psutil

from ci_runner.catalog.execution_settings import LAUNCHER_PYTEST, LAUNCHER_PYTHON
from ci_runner.collect.defined_tests import file_defines_tests
from ci_runner.execution import process_tree
from ci_runner.execution.captured_output import TAIL_BYTES, read_tail, size_of
from ci_runner.execution.case_record import CaseRecord, read_record
from ci_runner.execution.case_results import attempt_cases, judge_exit, while_running
from ci_runner.execution.case_resume import CrashResume
from ci_runner.execution.case_selection import EVERY_CASE, CaseSelection
from ci_runner.execution.child_env import AttemptFiles, child_environment
from ci_runner.execution.dep_recording import DepRecorder
from ci_runner.execution.listener import AttemptStart, ShardListener
from ci_runner.execution.retry import RetryPolicy
from ci_runner.execution.retry_patterns import output_retry_verdict
from ci_runner.execution.signals import signal_name
from ci_runner.execution.stacks import dump_stacks, format_stacks
from ci_runner.file_safety import append_regular
from ci_runner.model import (
    CRASHED,
    FAILED,
    FLAKY,
    NO_TESTS,
    NOT_RUN,
    PASSED,
    TIMEOUT,
    AttemptResult,
    CaseResult,
    FileResult,
    ProcessStack,
    whole_file_case,
)

# retry-on = "output-patterns" reads this much of a failed attempt's output (the end of it).
JUDGED_OUTPUT_BYTES = 32 * 1024 * 1024
CASE_STACKS_CHARS = 64 * 1024  # stacks kept in the hung case's report text


@dataclass
class RunSettings:
    """What every file of the shard runs with."""

    root: Path
    workdir: Path  # private temporary directory for outputs and case records
    base_env: Mapping[str, str]
    nightly: bool
    kill_grace_seconds: float
    retry: RetryPolicy
    python: str = sys.executable
    cwd: Path | None = None  # where files run; None = the root
    file_arguments: tuple[str, ...] = ()  # after the file's path
    launcher: str = LAUNCHER_PYTHON  # the execution table's launcher
    suite_launchers: Mapping[str, str] = field(default_factory=dict)  # suite overrides
    no_tests_fail: bool = True  # a file that ran no test fails the run (strict policy)
    recorder: DepRecorder | None = None  # --record-deps: record what each file runs

    def command(self, path: str, suite: str = "") -> tuple[list[str], Path]:
        """The argv and working directory of one attempt of ``path`` (relative to the root)."""
        cwd = self.cwd or self.root
        shown = path if cwd == self.root else str(self.root / path)
        launcher = self.suite_launchers.get(suite, self.launcher)
        prefix = [self.python, "-m", "pytest"] if launcher == LAUNCHER_PYTEST else [self.python]
        return [*prefix, shown, *self.file_arguments], cwd


class RetryBudget:
    """Seconds spent on retries (attempts after the first, and the waits), shared by threads."""

    def __init__(self) -> None:
        self.used = 0.0
        self._lock = threading.Lock()

    def spend(self, seconds: float) -> None:
        with self._lock:
            self.used += seconds


class RunningAttempt:
    """The live process of one attempt; the timer or the signal handler can stop its tree.

    Stopping dumps the stacks of the file's Python processes first
    (:func:`~ci_runner.execution.stacks.dump_stacks`), then kills them.
    """

    def __init__(self, root: psutil.Process, token: str, grace: float, files: AttemptFiles) -> None:
        self.root = root
        self.token = token
        self.grace = grace
        self.files = files
        self.timed_out = False
        self.interrupted_by: int | None = None
        self.stacks: tuple[ProcessStack, ...] = ()
        self.stacks_omitted = 0
        self._lock = threading.Lock()
        self._stopping = False

    @property
    def ended_by_runner(self) -> bool:
        """The runner killed the file (time limit or signal) rather than it exiting by itself."""
        return self.timed_out or self.interrupted_by is not None

    def _stop(self) -> None:
        with self._lock:
            first, self._stopping = not self._stopping, True
        if first:
            processes = process_tree.find_file_processes(self.root, self.token)
            stacks, omitted = dump_stacks(processes, self.files.stack_file, self.root.pid)
            self.stacks, self.stacks_omitted = tuple(stacks), omitted
        process_tree.kill_file_processes(self.root, self.token, self.grace)

    def expire(self) -> None:
        with self._lock:
            if self.interrupted_by is None:
                self.timed_out = True
        self._stop()

    def interrupt(self, signum: int) -> None:
        with self._lock:
            if not self.timed_out:
                self.interrupted_by = signum
        self._stop()


@dataclass
class CancelToken:
    """Lets the executor stop a file between or during attempts (SIGTERM/SIGHUP/SIGINT)."""

    event: threading.Event = field(default_factory=threading.Event)
    signum: int | None = None
    running: RunningAttempt | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def attach(self, attempt: RunningAttempt) -> bool:
        """Register the running attempt; False if a stop was already requested."""
        with self.lock:
            self.running = attempt
            return not self.event.is_set()

    def detach(self) -> None:
        with self.lock:
            self.running = None

    def cancel(self, signum: int) -> None:
        with self.lock:
            self.signum = signum
            self.event.set()
            attempt = self.running
        if attempt is not None:
            attempt.interrupt(signum)


def _stacks_text(stacks: tuple[ProcessStack, ...], omitted: int) -> str:
    text = format_stacks(stacks, omitted)
    if len(text) > CASE_STACKS_CHARS:
        text = text[:CASE_STACKS_CHARS] + "\n[... more stacks in the console ...]"
    return text


def _case_text(tail: str, truncated: bool, out_path: Path, stacks: str = "") -> str:
    if truncated:
        tail = (
            f"[... output truncated: last {TAIL_BYTES // 1024} KiB of {size_of(out_path)} "
            f"bytes ...]\n{tail}"
        )
    if stacks:
        return f"===== stacks before the kill =====\n{stacks}\n\n===== output =====\n{tail}"
    return tail


def _failed_to_start(path: str, number: int, reason: str, files: AttemptFiles, timeout: float):
    return AttemptResult(
        number, FAILED, 0.0, None, reason, False,
        (whole_file_case(path, "failed", 0.0, reason, reason, FAILED),),
        False, str(files.output), size_of(files.output), reason, False, timeout,
    )  # fmt: skip


@dataclass(frozen=True)
class _AttemptOf:
    """What every process of one attempt of a file shares."""

    path: str
    suite: str
    number: int
    settings: RunSettings
    gpu_ids: tuple[str, ...]
    pin_gpus: bool
    cancel: CancelToken
    listener: ShardListener | None
    est_time: float


def _run_process(
    shared: _AttemptOf, timeout: float, selection: CaseSelection, note: str = ""
) -> tuple[AttemptResult, CaseRecord]:
    """Run the file once in a fresh process tree (see :meth:`RunSettings.command`), with the
    cases of ``selection``, and judge it; the case record comes back too."""
    path, suite, number, settings = shared.path, shared.suite, shared.number, shared.settings
    gpu_ids, pin_gpus, cancel, listener = (
        shared.gpu_ids, shared.pin_gpus, shared.cancel, shared.listener
    )  # fmt: skip
    files = AttemptFiles(settings.workdir / f"{uuid.uuid4().hex[:12]}-{number}.log")
    token = uuid.uuid4().hex
    settings.workdir.mkdir(parents=True, exist_ok=True)  # a previous file may have removed it
    if selection.active:
        selection.write(files.selection)
    env = child_environment(
        settings.base_env, settings.root, settings.nightly, files, gpu_ids=gpu_ids,
        pin_gpus=pin_gpus, attempt=number, token=token, selects_cases=selection.active,
    )  # fmt: skip
    if settings.recorder is not None:
        env = settings.recorder.environment(files.output.with_suffix(".deps"), env)
    argv, cwd = settings.command(path, suite)
    start = time.monotonic()
    with open(files.output, "wb") as output, process_tree.spawn_guard():
        try:
            proc = process_tree.spawn_in_new_session(argv, cwd, env, output)
        except OSError as exc:
            reason = f"could not start {' '.join(argv[:-1] or argv)} {path}: {exc}"
            output.write(reason.encode())
            return _failed_to_start(path, number, reason, files, timeout), CaseRecord()
        process_tree.register_root(proc.pid)
    watch = AttemptStart(
        path, number, settings.retry.max_attempts if settings.retry.enabled else 1,
        shared.est_time,
        timeout, gpu_ids, files.output, files.record, start, note,
    )  # fmt: skip
    if listener is not None:
        listener.attempt_started(watch)
    try:
        root = psutil.Process(proc.pid)
    except psutil.Error:
        root = None
    running = RunningAttempt(root, token, settings.kill_grace_seconds, files) if root else None
    timer: threading.Timer | None = None
    if running is not None:
        if not cancel.attach(running):
            running.interrupt(cancel.signum or 15)
        timer = threading.Timer(timeout, running.expire)
        timer.daemon = True
        timer.start()
    try:
        exit_code = proc.wait()
    finally:
        elapsed = time.monotonic() - start
        if timer is not None:
            timer.cancel()
            timer.join()
        cancel.detach()
        process_tree.unregister_root(proc.pid)
    leftovers = (
        process_tree.kill_file_processes(
            running.root,
            token,
            settings.kill_grace_seconds,
            settle_seconds=0.0 if running.ended_by_runner else process_tree.SETTLE_SECONDS,
        )
        if running is not None
        else 0
    )
    if listener is not None:
        listener.attempt_stopped(watch)
    return _judged(
        path, number, settings, files, exit_code, elapsed, timeout, running, leftovers, selection
    )


def _judged(
    path: str,
    number: int,
    settings: RunSettings,
    files: AttemptFiles,
    exit_code: int,
    elapsed: float,
    timeout: float,
    running: RunningAttempt | None,
    leftovers: int,
    selection: CaseSelection,
) -> tuple[AttemptResult, CaseRecord]:
    """The :class:`AttemptResult` of an attempt whose processes are all gone, and its record."""
    tail, truncated = read_tail(files.output, TAIL_BYTES)
    record: CaseRecord = read_record(files.record)
    term_signal = -exit_code if exit_code < 0 else None
    stacks = running.stacks if running is not None else ()
    omitted = running.stacks_omitted if running is not None else 0
    if running is not None and running.interrupted_by is not None:
        status, retriable = NOT_RUN, False
        reason = f"interrupted by {signal_name(running.interrupted_by)} after {elapsed:.1f}s"
    elif running is not None and running.timed_out:
        status, retriable = TIMEOUT, True
        reason = f"timed out after {timeout:g}s limit"
    else:
        status, reason, retriable = judge_exit(
            exit_code, record, tail, lambda: file_defines_tests(settings.root / path)
        )

    case_reason = reason.replace(while_running(record), "") + " while running this case"
    if status in (NOT_RUN, TIMEOUT):
        reason += while_running(record)
    if settings.retry.judges_output and status in (FAILED, CRASHED):
        retriable, verdict = output_retry_verdict(read_tail(files.output, JUDGED_OUTPUT_BYTES)[0])
        reason = f"{reason}; {verdict}"
    if leftovers and status != NOT_RUN:
        note = f"[ci_runner] killed {leftovers} process(es) left behind by {path}\n"
        with contextlib.suppress(OSError):  # the file may have replaced its own log
            append_regular(files.output, note)
        tail += note
    detail = _case_text(tail, truncated, files.output, _stacks_text(stacks, omitted))
    cases = (
        (whole_file_case(path, "skipped", elapsed, reason, "", NOT_RUN),)
        if status == NOT_RUN
        else attempt_cases(path, status, reason, elapsed, record, detail, case_reason)
    )
    attempt = AttemptResult(
        number=number,
        status=status,
        elapsed=elapsed,
        exit_code=exit_code if exit_code >= 0 else None,
        reason=reason,
        retriable=retriable,
        cases=cases,
        is_pytest="pytest" in record.runners,
        output_path=str(files.output),
        output_bytes=size_of(files.output),
        output_tail="" if status == PASSED else tail,  # keep memory flat over many files
        tail_truncated=truncated,
        timeout_limit=timeout,
        term_signal=term_signal,
        leftover_processes=leftovers,
        stacks=stacks,
        stacks_omitted=omitted,
        running=tuple(case.id for case in record.culprits),
    )
    return attempt, record


def run_attempt(
    path: str,
    suite: str,
    number: int,
    settings: RunSettings,
    gpu_ids: tuple[str, ...],
    pin_gpus: bool,
    timeout: float,
    cancel: CancelToken,
    listener: ShardListener | None = None,
    est_time: float = 0.0,
    selection: CaseSelection = EVERY_CASE,
) -> AttemptResult:
    """One attempt of the file: its cases of ``selection``, within ``timeout`` seconds.

    When its process dies in a case (a crash, a lost CUDA context, an exit mid-case), the cases
    not run yet run in a fresh process, again and again while each one gets further, at most
    :data:`~ci_runner.execution.case_resume.RESUME_LIMIT` times (:mod:`.case_resume`).
    """
    deadline = time.monotonic() + timeout
    shared = _AttemptOf(
        path, suite, number, settings, gpu_ids, pin_gpus, cancel, listener, est_time
    )  # fmt: skip
    resume = CrashResume(selection, *_run_process(shared, timeout, selection))
    while left := resume.next_selection(deadline - time.monotonic(), cancel.event.is_set()):
        resume.add(*_run_process(shared, deadline - time.monotonic(), left, resume.note()))
    attempt = resume.merged(path)
    if attempt.status == NO_TESTS and selection.active:  # every case it was to run is gone
        why = "check the node ids" if selection.only is not None else "do their ids change?"
        attempt = replace(
            attempt, status=FAILED, retriable=False,
            reason=f"none of {selection.describe()} ran ({attempt.reason}): {why}",
        )  # fmt: skip
    return attempt


def run_file(
    path: str,
    suite: str,
    est_time: float,
    settings: RunSettings,
    gpu_ids: tuple[str, ...],
    pin_gpus: bool,
    timeout: float,
    cancel: CancelToken,
    budget: RetryBudget,
    listener: ShardListener | None = None,
    cases: tuple[str, ...] = (),
) -> FileResult:
    """All attempts of one file; the final status folds them (failed then passed = flaky).

    ``cases``: the node ids to run (``--tests``, ``--from-junit``); empty runs every case. A
    retry runs only what did not pass when every failure is a named case
    (:func:`retry_selection`), else the whole file again.
    """
    start = time.monotonic()
    attempts: list[AttemptResult] = []
    base = CaseSelection(only=cases or None)
    selection = base
    while True:
        attempt = run_attempt(
            path, suite, len(attempts) + 1, settings, gpu_ids, pin_gpus, timeout, cancel,
            listener, est_time, selection,
        )  # fmt: skip
        if attempts:
            budget.spend(attempt.elapsed)
        attempts.append(attempt)
        if attempt.status in (PASSED, NOT_RUN):
            break
        again, why = settings.retry.next_attempt(attempt, budget.used)
        if listener is not None:
            listener.attempt_ended(path, attempt, why, again)
        if not again:
            break
        waited = time.monotonic()
        if cancel.event.wait(settings.retry.wait_seconds):
            break
        budget.spend(time.monotonic() - waited)
        selection = retry_selection(base, attempts)
    result = fold_attempts(path, suite, est_time, attempts, time.monotonic() - start, gpu_ids)
    if settings.recorder is not None and result.status != NOT_RUN:
        scratch = Path(attempts[-1].output_path).with_suffix(".deps")
        settings.recorder.write(path, result, len(attempts), base.only is not None, scratch)
    if result.status == NO_TESTS and not settings.no_tests_fail and attempts[-1].exit_code == 0:
        result = replace(result, tolerated=NO_TESTS_TOLERATED)
    return result


NO_TESTS_TOLERATED = (
    "not failing: the policy's strict-checks = \"warning\" keeps the file's exit status 0"
)


def _failures(cases: tuple[CaseResult, ...]) -> list[CaseResult]:
    return [case for case in cases if case.outcome in ("failed", "error")]


def latest_cases(attempts: list[AttemptResult]) -> dict[str, CaseResult]:
    """Each named case's result in the last attempt that ran it (in first-run order)."""
    latest: dict[str, CaseResult] = {}
    for attempt in attempts:
        for case in attempt.cases:
            if case.case_id:
                latest[case.case_id] = case
    return latest


def retry_selection(base: CaseSelection, attempts: list[AttemptResult]) -> CaseSelection:
    """The cases of the next attempt: ``base`` without every case whose latest result is no
    failure, when each failure of the last attempt is a named case (a failing, crashed or hung
    case); else ``base`` (the whole file: its failure is the file's own)."""
    failing = _failures(attempts[-1].cases)
    if not failing or any(not case.case_id for case in failing):
        return base
    latest = latest_cases(attempts)
    return base.skipping(cid for cid, case in latest.items() if not _failures((case,)))


def fold_attempts(
    path: str,
    suite: str,
    est_time: float,
    attempts: list[AttemptResult],
    elapsed: float,
    gpu_ids: tuple[str, ...],
) -> FileResult:
    """One :class:`FileResult` from the attempts of a file."""
    last = attempts[-1]
    ran = [a for a in attempts if a.status != NOT_RUN]
    decisive = ran[-1] if ran else last
    if decisive.status == PASSED:
        status = FLAKY if len(ran) > 1 else PASSED
        reason = (
            f"passed on attempt {decisive.number} after: " + "; ".join(a.reason for a in ran[:-1])
            if status == FLAKY
            else ""
        )
    else:
        status, reason = decisive.status, decisive.reason
        if decisive is not last:
            reason += f"; retry {last.reason}"
    return FileResult(
        path=path,
        suite=suite,
        est_time=est_time,
        status=status,
        elapsed=elapsed,
        attempts=tuple(attempts),
        reason=reason,
        gpu_ids=gpu_ids,
        timeout_limit=last.timeout_limit,
        cases=_folded_cases(ran, decisive) if len(ran) > 1 else decisive.cases,
    )


def _folded_cases(ran: list[AttemptResult], decisive: AttemptResult) -> tuple[CaseResult, ...]:
    """A retried file's cases: each named case's latest result (a retry runs only what did
    not pass), then the decisive attempt's own case for the whole file, if it has one."""
    own = [case for case in decisive.cases if not case.case_id]
    return (*latest_cases(ran).values(), *own)
