"""Which failures may be retried, and whether the next attempt happens.

A failure is *not retriable* when it cannot be flaky; the evidence is structured, never a regex
over the whole log:

* pytest exit codes 2 (interrupted / collection errors), 3 (internal error), 4 (usage error)
  and 5 (no tests collected), and a file that ran no test (``no_tests``);
* collection errors in the file's case record;
* for a file whose record holds no test session (it died before or without pytest and
  unittest): a Python traceback whose final line, in the captured tail, is a ``SyntaxError``,
  ``IndentationError``, ``ImportError`` or ``ModuleNotFoundError``.

Timeouts are retried only with ``--retry-timeouts``. Everything else (assertion failures,
crashes such as SIGSEGV) is retriable when ``--enable-retry`` is on. With the catalog's
``retry-on = "output-patterns"`` the attempt's output decides instead
(:mod:`ci_runner.execution.retry_patterns`, SGLang's rule).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ci_runner.catalog.execution_settings import RETRY_ANY_FAILURE, RETRY_OUTPUT_PATTERNS
from ci_runner.model import NO_TESTS, TIMEOUT, AttemptResult

# pytest's documented exit codes that mean "this file is broken, retrying cannot help".
PYTEST_INTERRUPTED = 2  # also: errors during collection
PYTEST_INTERNAL_ERROR = 3
PYTEST_USAGE_ERROR = 4
PYTEST_NO_TESTS = 5
UNITTEST_NO_TESTS = 5  # unittest.main() on Python >= 3.12 when no test ran
PYTEST_EXIT_REASONS: dict[int, str] = {
    PYTEST_INTERRUPTED: "pytest was interrupted or hit errors during collection (exit 2)",
    PYTEST_INTERNAL_ERROR: "pytest internal error (exit 3)",
    PYTEST_USAGE_ERROR: "pytest usage error (exit 4)",
    PYTEST_NO_TESTS: "no tests collected (pytest exit 5)",
}

_BROKEN_FILE_LINE = re.compile(
    r"^(SyntaxError|IndentationError|TabError|ImportError|ModuleNotFoundError)\b.*$",
    re.MULTILINE,
)


def broken_file_error(output_tail: str) -> str | None:
    """The last ``SyntaxError``/``ImportError``-like line of a traceback in the tail, if any."""
    lines = [match.group(0).strip() for match in _BROKEN_FILE_LINE.finditer(output_tail)]
    return lines[-1] if lines else None


def pytest_exit_blocks_retry(exit_code: int | None) -> str | None:
    """The reason a pytest exit code means the file is broken, else None."""
    if exit_code is None:
        return None
    return PYTEST_EXIT_REASONS.get(exit_code)


@dataclass(frozen=True)
class RetryPolicy:
    """``--enable-retry``, ``--max-attempts``, ``--retry-wait-seconds``, ``--retry-timeouts``,
    ``--retry-budget-seconds`` (the shard's total seconds for retry attempts; None = no cap);
    ``retry_on``: the catalog's ``retry-on``, which failures count as possibly flaky."""

    enabled: bool = False
    max_attempts: int = 1
    wait_seconds: float = 0.0
    retry_timeouts: bool = False
    budget_seconds: float | None = None
    retry_on: str = RETRY_ANY_FAILURE

    @property
    def judges_output(self) -> bool:
        """Retries are decided by the failed attempt's output (``retry-on = "output-patterns"``)."""
        return self.enabled and self.retry_on == RETRY_OUTPUT_PATTERNS

    def next_attempt(self, last: AttemptResult, budget_used: float) -> tuple[bool, str]:
        """Whether to run another attempt after ``last`` failed, and a one-line why (not)."""
        if not self.enabled:
            return False, "retry disabled"
        if last.number >= self.max_attempts:
            return False, f"no attempts left ({last.number}/{self.max_attempts})"
        if last.status == TIMEOUT and not self.retry_timeouts:
            return False, "timeouts are retried only with --retry-timeouts"
        if last.status == NO_TESTS:
            return False, "it ran no test (retrying cannot change that)"
        if not last.retriable:
            if self.retry_on == RETRY_OUTPUT_PATTERNS and last.status != TIMEOUT:
                return False, "its output shows no retriable symptom (retry-on = output-patterns)"
            return False, "it cannot be flaky (broken file)"
        if self.budget_seconds is not None and budget_used >= self.budget_seconds:
            return False, (
                f"retry budget exhausted ({budget_used:.1f}s of {self.budget_seconds:g}s used)"
            )
        return True, f"attempt {last.number + 1}/{self.max_attempts}"
