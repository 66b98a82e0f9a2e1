"""Running one file: its attempts, each in its own session, judged by exit status and JUnit.

``python <file> [file-arguments]`` from the working directory (the root unless the catalog names
another; then the file's path is absolute), stdout+stderr to a file on disk, a timer that kills the whole
process tree at the limit, and after every attempt a sweep that kills whatever the file left
behind (see :mod:`ci_runner.execution.process_tree`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from ci_runner.env import RUN_FULL_TESTS
from ci_runner.execution import process_tree
from ci_runner.execution.captured_output import TAIL_BYTES, read_tail, size_of
from ci_runner.execution.dep_recording import DepRecorder
from ci_runner.execution.gpu_slots import VISIBLE_DEVICES
from ci_runner.execution.pytest_results import (
    ADDOPTS_VARIABLE,
    ChildReportError,
    PytestReport,
    child_addopts,
)
from ci_runner.execution.retry import RetryPolicy, broken_file_error, pytest_exit_blocks_retry
from ci_runner.execution.retry_patterns import output_retry_verdict
from ci_runner.execution.signals import signal_name
from ci_runner.file_safety import append_regular
from ci_runner.model import (
    CRASHED,
    FAILED,
    FAILING_STATUSES,
    FLAKY,
    NOT_RUN,
    PASSED,
    TIMEOUT,
    AttemptResult,
    CaseResult,
    FileResult,
    whole_file_case,
)

ATTEMPT_VARIABLE = "CI_RUNNER_ATTEMPT"
# retry-on = "output-patterns" reads this much of a failed attempt's output (the end of it).
JUDGED_OUTPUT_BYTES = 32 * 1024 * 1024


@dataclass
class RunSettings:
    """What every file of the shard runs with."""

    root: Path
    workdir: Path  # private temporary directory for outputs and JUnit files
    base_env: Mapping[str, str]
    nightly: bool
    kill_grace_seconds: float
    retry: RetryPolicy
    python: str = sys.executable
    cwd: Path | None = None  # where files run; None = the root
    file_arguments: tuple[str, ...] = ()  # after the file's path
    recorder: DepRecorder | None = None  # --record-deps: record what each file runs

    def command(self, path: str) -> tuple[list[str], Path]:
        """The argv and working directory of one attempt of ``path`` (relative to the root)."""
        cwd = self.cwd or self.root
        shown = path if cwd == self.root else str(self.root / path)
        return [self.python, shown, *self.file_arguments], cwd


class RetryBudget:
    """Seconds spent on retries (attempts after the first, and the waits), shared by threads."""

    def __init__(self) -> None:
        self.used = 0.0
        self._lock = threading.Lock()

    def spend(self, seconds: float) -> None:
        with self._lock:
            self.used += seconds


class RunningAttempt:
    """The live process of one attempt; the timer or the signal handler can kill its tree."""

    def __init__(self, root: psutil.Process, token: str, grace: float) -> None:
        self.root = root
        self.token = token
        self.grace = grace
        self.timed_out = False
        self.interrupted_by: int | None = None
        self._lock = threading.Lock()

    @property
    def ended_by_runner(self) -> bool:
        """The runner killed the file (time limit or signal) rather than it exiting by itself."""
        return self.timed_out or self.interrupted_by is not None

    def expire(self) -> None:
        with self._lock:
            if self.interrupted_by is None:
                self.timed_out = True
        process_tree.kill_file_processes(self.root, self.token, self.grace)

    def interrupt(self, signum: int) -> None:
        with self._lock:
            if not self.timed_out:
                self.interrupted_by = signum
        process_tree.kill_file_processes(self.root, self.token, self.grace)


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


def child_environment(
    settings: RunSettings,
    gpu_ids: tuple[str, ...],
    pin_gpus: bool,
    junit_path: Path,
    attempt: int,
    token: str,
) -> dict[str, str]:
    """The environment of one attempt (see the README: what the runner sets for a file)."""
    env = dict(settings.base_env)
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = f"{settings.root}{os.pathsep}{existing}" if existing else str(settings.root)
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.setdefault("PYTHONFAULTHANDLER", "1")
    if settings.nightly and not env.get(RUN_FULL_TESTS, "").strip():
        env[RUN_FULL_TESTS] = "1"
    env[ADDOPTS_VARIABLE] = child_addopts(settings.base_env, junit_path)
    if pin_gpus:
        env[VISIBLE_DEVICES] = ",".join(gpu_ids)
    env[ATTEMPT_VARIABLE] = str(attempt)
    env[process_tree.TOKEN_VARIABLE] = token
    return env


def judge_exit(exit_code: int, report: PytestReport | None, tail: str) -> tuple[str, str, bool]:
    """(status, reason, retriable) of an attempt that exited on its own."""
    if exit_code < 0:
        return CRASHED, f"killed by {signal_name(-exit_code)}", True
    if report is not None:
        if exit_code == 0:
            if report.failures:
                return (
                    FAILED,
                    (
                        f"pytest reported {report.failures} failing case(s) but the file exited 0: "
                        "its __main__ block must sys.exit(pytest.main(...))"
                    ),
                    True,
                )
            return PASSED, "", False
        blocked = pytest_exit_blocks_retry(exit_code)
        if report.collection_errors:
            return (
                FAILED,
                f"{report.collection_errors} collection error(s) (exit {exit_code})",
                False,
            )
        if blocked:
            return FAILED, blocked, False
        return FAILED, f"{report.failures} failing test case(s) (exit {exit_code})", True
    if exit_code == 0:
        return PASSED, "", False
    broken = broken_file_error(tail)
    if broken:
        return FAILED, f"{broken} (exit {exit_code})", False
    return FAILED, f"exit code {exit_code}", True


def _cases_for(
    path: str, status: str, reason: str, elapsed: float, report: PytestReport | None, tail: str
) -> tuple[CaseResult, ...]:
    cases = list(report.cases) if report is not None else []
    if status in FAILING_STATUSES and not any(c.outcome in ("failed", "error") for c in cases):
        outcome = "failed" if status == FAILED else "error"
        cases.append(whole_file_case(path, outcome, elapsed, reason, tail, status))
    if not cases:
        cases.append(whole_file_case(path, "passed", elapsed, "", "", ""))
    return tuple(cases)


def _case_text(tail: str, truncated: bool, out_path: Path) -> str:
    if not truncated:
        return tail
    return f"[... output truncated: last {TAIL_BYTES // 1024} KiB of {size_of(out_path)} bytes ...]\n{tail}"


def run_attempt(
    path: str,
    number: int,
    settings: RunSettings,
    gpu_ids: tuple[str, ...],
    pin_gpus: bool,
    timeout: float,
    cancel: CancelToken,
) -> AttemptResult:
    """Run ``python <path>`` once (see :meth:`RunSettings.command`) and judge it."""
    stem = f"{uuid.uuid4().hex[:12]}-{number}"
    out_path = settings.workdir / f"{stem}.log"
    junit_path = settings.workdir / f"{stem}.xml"
    token = uuid.uuid4().hex
    env = child_environment(settings, gpu_ids, pin_gpus, junit_path, number, token)
    if settings.recorder is not None:
        env.update(settings.recorder.environment(out_path.with_suffix(".deps")))
    start = time.monotonic()
    settings.workdir.mkdir(parents=True, exist_ok=True)  # a previous file may have removed it
    argv, cwd = settings.command(path)
    with open(out_path, "wb") as output, process_tree.spawn_guard():
        try:
            proc = process_tree.spawn_in_new_session(argv, cwd, env, output)
        except OSError as exc:
            reason = f"could not start {settings.python} {path}: {exc}"
            output.write(reason.encode())
            return AttemptResult(
                number, FAILED, 0.0, None, reason, False,
                (whole_file_case(path, "failed", 0.0, reason, reason, FAILED),),
                False, str(out_path), size_of(out_path), reason, False, timeout,
            )  # fmt: skip
        process_tree.register_root(proc.pid)
    try:
        root = psutil.Process(proc.pid)
    except psutil.Error:
        root = None
    running = RunningAttempt(root, token, settings.kill_grace_seconds) if root else None
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
    tail, truncated = read_tail(out_path, TAIL_BYTES)
    report_error = ""
    try:
        report = PytestReport.load(junit_path)
    except ChildReportError as exc:
        report, report_error = None, f"runner error: {exc}"
    term_signal = -exit_code if exit_code < 0 else None
    if running is not None and running.interrupted_by is not None:
        status = NOT_RUN
        reason = f"interrupted by {signal_name(running.interrupted_by)} after {elapsed:.1f}s"
        retriable = False
    elif running is not None and running.timed_out:
        status, reason, retriable = TIMEOUT, f"timed out after {timeout:g}s limit", True
    elif report_error:  # its cases cannot be trusted: the file fails, counted as one case
        status, reason, retriable = FAILED, f"{report_error} (exit {exit_code})", False
    else:
        status, reason, retriable = judge_exit(exit_code, report, tail)
    if settings.retry.judges_output and status in (FAILED, CRASHED):
        retriable, verdict = output_retry_verdict(read_tail(out_path, JUDGED_OUTPUT_BYTES)[0])
        reason = f"{reason}; {verdict}"
    if leftovers and status != NOT_RUN:
        note = f"[ci_runner] killed {leftovers} process(es) left behind by {path}\n"
        with contextlib.suppress(OSError):  # the file may have replaced its own log
            append_regular(out_path, note)
        tail += note
    cases = (
        (whole_file_case(path, "skipped", elapsed, reason, "", NOT_RUN),)
        if status == NOT_RUN
        else _cases_for(
            path, status, reason, elapsed, report, _case_text(tail, truncated, out_path)
        )
    )
    return AttemptResult(
        number=number,
        status=status,
        elapsed=elapsed,
        exit_code=exit_code if exit_code >= 0 else None,
        reason=reason,
        retriable=retriable,
        cases=cases,
        is_pytest=report is not None,
        output_path=str(out_path),
        output_bytes=size_of(out_path),
        output_tail="" if status == PASSED else tail,  # keep memory flat over many files
        tail_truncated=truncated,
        timeout_limit=timeout,
        term_signal=term_signal,
        leftover_processes=leftovers,
    )


RetryNotice = Callable[[str, AttemptResult, str, bool], None]


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
    on_attempt_end: RetryNotice | None = None,
) -> FileResult:
    """All attempts of one file; the final status folds them (failed then passed = flaky)."""
    start = time.monotonic()
    attempts: list[AttemptResult] = []
    while True:
        attempt = run_attempt(path, len(attempts) + 1, settings, gpu_ids, pin_gpus, timeout, cancel)
        if attempts:
            budget.spend(attempt.elapsed)
        attempts.append(attempt)
        if attempt.status in (PASSED, NOT_RUN):
            break
        again, why = settings.retry.next_attempt(attempt, budget.used)
        if on_attempt_end is not None:
            on_attempt_end(path, attempt, why, again)
        if not again:
            break
        waited = time.monotonic()
        if cancel.event.wait(settings.retry.wait_seconds):
            break
        budget.spend(time.monotonic() - waited)
    result = fold_attempts(path, suite, est_time, attempts, time.monotonic() - start, gpu_ids)
    if settings.recorder is not None and result.status != NOT_RUN:
        scratch = Path(attempts[-1].output_path).with_suffix(".deps")
        settings.recorder.write(path, result.status, len(attempts), scratch)
    return result


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
        cases=decisive.cases,
    )
