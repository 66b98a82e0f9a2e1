"""Every record that crosses a stage of the runner, and the statuses of a file's result.

Discovery produces :class:`Registration` and :class:`Problem`; selection turns registrations into
:class:`FileToRun` and :class:`DisabledFile`; planning adds a :class:`ShardContext`; execution
produces :class:`AttemptResult`, :class:`FileResult` and a :class:`ShardOutcome`, which the
reports render with the shard's :class:`RunInfo`. Plain data: this module imports nothing else of
the runner, so every stage can depend on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

# ---------------------------------------------------------------------------- discovery


@dataclass(frozen=True)
class Registration:
    """One ``register_<backend>_ci(...)`` call found in a file."""

    path: str  # POSIX, relative to the root
    backend: str  # "cuda", "cpu", ... (see ci_runner.catalog.syntax)
    suite: str  # "" only for a disabled placeholder registration (it belongs to no suite)
    est_time: float  # 0 only for a disabled registration
    nightly: bool = False
    disabled: str | None = None  # None = enabled; a string = why it is disabled
    line: int = 0
    col: int = 0
    min_gpus: int | None = None  # min_gpus=N: the file needs at least N GPUs
    # suite-template fields the suite name was composed from, e.g. (("stage", "base-b"), ...)
    composed_from: tuple[tuple[str, str], ...] = ()
    quarantined: str | None = None  # quarantined="reason": runs, but never fails the job

    @property
    def suite_origin(self) -> str:
        """`` (from stage='base-b', runner_config='1-gpu-large')`` for a composed suite name."""
        if not self.composed_from:
            return ""
        return " (from " + ", ".join(f"{k}={v!r}" for k, v in self.composed_from) + ")"


MAIN_BLOCK = "main-block"  # an enabled file whose __main__ block is missing or calls nothing


@dataclass(frozen=True)
class Problem:
    """A registration or discovery error, printed as ``path:line:col: message``."""

    path: str  # POSIX, relative to the root
    line: int
    col: int
    message: str
    # a check beyond selection (policy strict-checks): a warning under strict-checks = "warning"
    lint: bool = field(default=False, compare=False)
    rule: str = field(default="", compare=False)  # which lint: MAIN_BLOCK, or "" (any other)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.message}"


# ---------------------------------------------------------------------------- selection and plan


@dataclass(frozen=True)
class FileToRun:
    """One selected, enabled file (one entry per file, whatever its number of registrations)."""

    path: str  # POSIX, relative to the root
    suite: str
    est_time: float
    gpus: int = 1  # GPUs the file needs (exactly; at least, with all_gpus); 0 = none
    all_gpus: bool = False  # gpus-per-file = "all": the file gets every GPU of the runner
    gpus_from: str = field(default="", compare=False)  # where the need comes from (skip reason)
    quarantined: str | None = None  # why its failures never fail the job (None: they do)
    cases: tuple[str, ...] = ()  # node ids of the cases to run (--tests, --from-junit); () = all


@dataclass(frozen=True)
class DisabledFile:
    """A selected file whose registration is disabled: listed with its reason, never run."""

    path: str
    suite: str
    reason: str
    est_time: float = 0.0


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
    suite_launchers: dict[str, str] = field(default_factory=dict)  # suite -> its own launcher
    # files a previous attempt of this shard passed (--resume-from): reported, not run again
    carried: tuple[FileResult, ...] = ()


# ---------------------------------------------------------------------------- results

PASSED = "passed"
FAILED = "failed"
TIMEOUT = "timeout"
CRASHED = "crashed"  # ended by a signal it did not handle (SIGSEGV, SIGABRT, SIGKILL, ...)
FLAKY = "flaky"  # failed, then passed on a retry
NOT_RUN = "not_run"  # never started (fail-fast, interruption) or interrupted while running
DISABLED = "disabled"  # registered with disabled="reason"
SKIPPED = "skipped"  # needs more GPUs than the runner has; never started, does not fail the run
NO_TESTS = "no_tests"  # ran, but no test case ran (none collected, or tests it never started)

# Every file of a shard ends as exactly one of these.
STATUSES: tuple[str, ...] = (
    PASSED, FAILED, TIMEOUT, CRASHED, FLAKY, NO_TESTS, NOT_RUN, DISABLED, SKIPPED,
)  # fmt: skip
# Statuses that make the shard fail (flaky only with --fail-on-flaky; no_tests unless the
# policy tolerates it: FileResult.tolerated).
FAILING_STATUSES = frozenset({FAILED, TIMEOUT, CRASHED})


@dataclass(frozen=True)
class CaseResult:
    """One test case (a pytest or unittest case from the case record), or the whole file."""

    name: str
    classname: str
    time: float
    outcome: str  # "passed" | "failed" | "error" | "skipped"
    message: str = ""
    text: str = ""
    type: str = ""  # JUnit result type, e.g. "timeout", "crashed", "not_run"
    case_id: str = ""  # "path::Class::test[param]" (root-relative); "" for the whole file
    file: str = ""  # root-relative file that defines the case
    line: int = 0  # 1-based line of its definition; 0 unknown


@dataclass(frozen=True)
class ProcessStack:
    """The Python stacks of one process of a file, dumped before the runner killed it."""

    pid: int
    command: str  # its command line, one line
    text: str  # faulthandler's dump: every thread, most recent call first


@dataclass(frozen=True)
class AttemptResult:
    """One run of one file."""

    number: int  # 1-based
    status: str  # passed | failed | timeout | crashed | not_run (interrupted)
    elapsed: float
    exit_code: int | None  # None when killed by a signal (see ``signal``) or never started
    reason: str  # one line: why it is not passed ("" when passed)
    retriable: bool
    cases: tuple[CaseResult, ...]
    is_pytest: bool
    output_path: str  # combined stdout+stderr on disk
    output_bytes: int
    output_tail: str  # last 64 KiB of the output, errors="replace"; "" for a passed attempt
    tail_truncated: bool
    timeout_limit: float
    term_signal: int | None = None
    leftover_processes: int = 0  # descendants still alive after the file ended (then killed)
    stacks: tuple[ProcessStack, ...] = ()  # dumped before a timeout or interruption kill
    stacks_omitted: int = 0  # processes that dumped beyond those kept in ``stacks``
    running: tuple[str, ...] = ()  # ids of the cases running when it was stopped or died


@dataclass(frozen=True)
class FileResult:
    """The final word on one file of the shard."""

    path: str
    suite: str
    est_time: float
    status: str
    elapsed: float  # wall time across all attempts and retry waits
    attempts: tuple[AttemptResult, ...] = ()
    reason: str = ""
    gpu_ids: tuple[str, ...] = ()
    timeout_limit: float | None = None
    cases: tuple[CaseResult, ...] = field(default=())
    tolerated: str = ""  # no_tests: why it does not fail the run (the policy), "" = it does
    quarantined: str | None = None  # set: the file is quarantined, its failure fails no job
    resumed: bool = False  # carried over from a previous attempt of the shard (--resume-from)

    @property
    def fails_unquarantined(self) -> bool:
        """Its status fails the run unless the file is quarantined (failed, timeout, crashed,
        no_tests the policy does not tolerate)."""
        return self.status in FAILING_STATUSES or (self.status == NO_TESTS and not self.tolerated)

    @property
    def failing(self) -> bool:
        """It fails the run: :attr:`fails_unquarantined`, and not quarantined (flaky files only
        with --fail-on-flaky: :func:`fails_run`)."""
        return self.fails_unquarantined and self.quarantined is None

    @property
    def final_attempt(self) -> AttemptResult | None:
        return self.attempts[-1] if self.attempts else None

    @property
    def failed_attempts(self) -> tuple[AttemptResult, ...]:
        return tuple(a for a in self.attempts if a.status != PASSED)


def fails_run(result: FileResult, fail_on_flaky: bool) -> bool:
    """Whether ``result`` makes the shard fail (exit 1) and, with fail-fast, stops it."""
    if result.quarantined is not None:
        return False
    return result.failing or (fail_on_flaky and result.status == FLAKY)


def whole_file_case(
    path: str, outcome: str, time: float, message: str, text: str, kind: str
) -> CaseResult:
    """The one case that stands for a whole file (a non-pytest file, a crash, a runner error)."""
    return CaseResult(
        name=path.rsplit("/", 1)[-1],
        classname=path.removesuffix(".py").replace("/", "."),
        time=time,
        outcome=outcome,
        message=message,
        text=text,
        type=kind,
        file=path,
    )


def placeholder(path: str, suite: str, est_time: float, status: str, reason: str) -> FileResult:
    """A file that did not run (not_run, skipped or disabled): one skipped case that says why."""
    case = whole_file_case(path, "skipped", 0.0, f"{status}: {reason}", "", status)
    return FileResult(
        path=path, suite=suite, est_time=est_time, status=status, elapsed=0.0, reason=reason,
        cases=(case,),
    )  # fmt: skip


_FAILED_OUTCOMES = ("failed", "error")
_NOT_STARTED = frozenset({NOT_RUN, DISABLED, SKIPPED})


def report_cases(result: FileResult) -> tuple[CaseResult, ...]:
    """The cases every report counts for ``result``: its own, plus one for the whole file when
    they would hide its status (a failing file without a failing case, a file without cases),
    so a failed file is never reported as 0 passed, 0 failed, 0 skipped."""
    cases = result.cases
    if result.fails_unquarantined:
        if any(case.outcome in _FAILED_OUTCOMES for case in cases):
            return cases
        outcome = "failed" if result.status in (FAILED, NO_TESTS) else "error"
    elif result.status == NO_TESTS:  # tolerated by the policy: flagged, never a pass
        outcome = "skipped"
    elif cases:
        return cases
    else:
        outcome = "skipped" if result.status in _NOT_STARTED else "passed"
    extra = whole_file_case(result.path, outcome, result.elapsed, result.reason, "", result.status)
    return (*cases, extra)


def case_counts(results: list[FileResult]) -> tuple[int, int, int]:
    """(passed, failed, skipped) test cases over ``results`` (see :func:`report_cases`); errors
    count as failed, except those of a quarantined file (:func:`quarantined_failures`)."""
    passed = failed = skipped = 0
    for result in results:
        for case in report_cases(result):
            if case.outcome == "passed":
                passed += 1
            elif case.outcome == "skipped":
                skipped += 1
            elif result.quarantined is None:
                failed += 1
    return passed, failed, skipped


def shard_label(shard_id: int, shard_count: int) -> str:
    """``"1/4"``: the shard's ``--auto-partition-id`` (0-based) / the shard count; every output
    (console, dry run, JUnit, timings, step summary) names a shard this one way."""
    return f"{shard_id}/{shard_count}"


def quarantined_failures(results: list[FileResult]) -> int:
    """Failed and error cases of quarantined files: reported, but failing no job."""
    return sum(
        case.outcome in _FAILED_OUTCOMES
        for result in results
        if result.quarantined is not None
        for case in report_cases(result)
    )


@dataclass(frozen=True)
class RunInfo:
    """The plan this shard belongs to, and how it runs (what every report is headed with)."""

    hw: str
    suites: tuple[str, ...]
    nightly: bool
    shard_id: int
    shard_count: int
    plan_hash: str
    predicted_makespan: float
    shard_est_total: float
    lower_bound: float
    slots: str = ""
    mode: str = ""
    slot_count: int = 1  # files that may run at once

    @property
    def shard(self) -> str:
        """``"0/4"``: see :func:`shard_label`."""
        return shard_label(self.shard_id, self.shard_count)


@dataclass
class ShardOutcome:
    """The shard's results in plan order (finished, not_run and disabled files alike)."""

    info: RunInfo
    results: list[FileResult] = field(default_factory=list)
    wall: float = 0.0
    exit_code: int = 0
    interrupted_by: str | None = None  # "SIGTERM" / "SIGHUP" / "SIGINT"

    def with_status(self, *statuses: str) -> list[FileResult]:
        return [r for r in self.results if r.status in statuses]

    @property
    def failing(self) -> list[FileResult]:
        """Files that fail the run (quarantined ones do not)."""
        return [r for r in self.results if r.failing]

    @property
    def no_tests(self) -> list[FileResult]:
        """Files that ran no test case (failing or tolerated)."""
        return self.with_status(NO_TESTS)

    @property
    def quarantined(self) -> list[FileResult]:
        """Quarantined files whose status would fail the run: reported, failing no job."""
        return [r for r in self.results if r.quarantined is not None and r.fails_unquarantined]

    @property
    def flaky(self) -> list[FileResult]:
        return self.with_status(FLAKY)

    @property
    def not_run(self) -> list[FileResult]:
        return self.with_status(NOT_RUN)

    @property
    def disabled(self) -> list[FileResult]:
        return self.with_status(DISABLED)

    @property
    def skipped(self) -> list[FileResult]:
        return self.with_status(SKIPPED)
