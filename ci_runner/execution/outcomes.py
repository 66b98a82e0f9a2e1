"""Outcome vocabulary of the executor: what happened to one attempt, one file, one shard.

Every file of a shard ends as exactly one of :data:`STATUSES`. The records here are plain data
shared by the executor and the reports; nothing in this module runs anything.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field

PASSED = "passed"
FAILED = "failed"
TIMEOUT = "timeout"
CRASHED = "crashed"  # ended by a signal it did not handle (SIGSEGV, SIGABRT, SIGKILL, ...)
FLAKY = "flaky"  # failed, then passed on a retry
NOT_RUN = "not_run"  # never started (fail-fast, interruption) or interrupted while running
DISABLED = "disabled"  # registered with disabled="reason"
SKIPPED = "skipped"  # needs more GPUs than the runner has; never started, does not fail the run

STATUSES: tuple[str, ...] = (PASSED, FAILED, TIMEOUT, CRASHED, FLAKY, NOT_RUN, DISABLED, SKIPPED)
# Statuses that make the shard fail (flaky only with --fail-on-flaky).
FAILING_STATUSES = frozenset({FAILED, TIMEOUT, CRASHED})

# Process exit codes of the runner (defined once, re-exported here for the executor).

# pytest's documented exit codes that mean "this file is broken, retrying cannot help".
PYTEST_INTERRUPTED = 2  # also: errors during collection
PYTEST_INTERNAL_ERROR = 3
PYTEST_USAGE_ERROR = 4
PYTEST_NO_TESTS = 5
PYTEST_EXIT_REASONS: dict[int, str] = {
    PYTEST_INTERRUPTED: "pytest was interrupted or hit errors during collection (exit 2)",
    PYTEST_INTERNAL_ERROR: "pytest internal error (exit 3)",
    PYTEST_USAGE_ERROR: "pytest usage error (exit 4)",
    PYTEST_NO_TESTS: "no tests collected (pytest exit 5)",
}


def signal_name(signum: int) -> str:
    """``11`` -> ``"SIGSEGV"``; unknown numbers become ``"signal 42"``."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


@dataclass(frozen=True)
class CaseResult:
    """One test case: a pytest case from the child's JUnit XML, or the whole file."""

    name: str
    classname: str
    time: float
    outcome: str  # "passed" | "failed" | "error" | "skipped"
    message: str = ""
    text: str = ""
    type: str = ""  # JUnit result type, e.g. "timeout", "crashed", "not_run"


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

    @property
    def final_attempt(self) -> AttemptResult | None:
        return self.attempts[-1] if self.attempts else None

    @property
    def failed_attempts(self) -> tuple[AttemptResult, ...]:
        return tuple(a for a in self.attempts if a.status != PASSED)


def case_counts(results: list[FileResult]) -> tuple[int, int, int]:
    """(passed, failed, skipped) test cases over ``results``; errors count as failed."""
    passed = failed = skipped = 0
    for result in results:
        for case in result.cases:
            if case.outcome == "passed":
                passed += 1
            elif case.outcome == "skipped":
                skipped += 1
            else:
                failed += 1
    return passed, failed, skipped
