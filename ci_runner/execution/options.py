"""How the files of a shard run: :class:`ExecutionOptions`, built once by the CLI from its flags
and the catalog's ``[tool.ci-runner.execution]`` table.

Every value arrives parsed and checked (the CLI rejects bad flags with exit 2, the catalog bad
keys), so the executor reads typed fields, never an ``argparse.Namespace``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ci_runner.catalog.execution_settings import (
    DEFAULT_RETRY_WAIT_SECONDS,
    EST_TIMEOUT_CI_RUNNER,
    LAUNCHER_PYTHON,
    CudaCoredump,
)
from ci_runner.catalog.quarantine import QuarantineEntry
from ci_runner.execution.retry import RetryPolicy
from ci_runner.exit_codes import EXIT_TEST_FAILURES

DEFAULT_MAX_ATTEMPTS = 2
DEFAULT_KILL_GRACE_SECONDS = 5.0

__all__ = [
    "DEFAULT_KILL_GRACE_SECONDS",
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_RETRY_WAIT_SECONDS",
    "ExecutionOptions",
]


@dataclass(frozen=True)
class ExecutionOptions:
    """Fail-fast, time limits, retries, GPU slots and the child's command line of one shard."""

    continue_on_error: bool = False  # run every file even after a failure
    timeout_per_file: float | None = None  # flat limit, or the cap with timeout_from_est_time
    timeout_from_est_time: bool = False  # limit from est_time by est_timeout's rule
    est_timeout: str = EST_TIMEOUT_CI_RUNNER  # the catalog's est-timeout rule
    retry_timeout_increase: float = 0.0  # added to a flat limit when retries are on
    kill_grace_seconds: float = DEFAULT_KILL_GRACE_SECONDS  # SIGTERM -> SIGKILL
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    fail_on_flaky: bool = False  # a file that passed only on a retry fails the run
    gpus: int | None = None  # --gpus N: run on N GPU slots
    gpu_ids: tuple[str, ...] | None = None  # --gpu-ids: these GPU ids (parsed, distinct)
    jobs: int = 1  # --jobs N: files at a time on a backend other than cuda
    one_file_at_a_time: bool = False  # cuda without --gpus/--gpu-ids: one unpinned slot
    working_directory: str = "."  # where files run, relative to the root
    file_arguments: tuple[str, ...] = ()  # python <file> <file_arguments...>
    cuda_coredump: CudaCoredump | None = None  # collect CUDA coredumps when its switch is on
    launcher: str = LAUNCHER_PYTHON  # the execution table's launcher (suites may override it)
    no_tests_fail: bool = True  # a no_tests file fails the run (policy strict-checks = "error")
    failure_exit_status: int = EXIT_TEST_FAILURES  # the exit status of a shard with a failure
    quarantine: tuple[QuarantineEntry, ...] = ()  # the catalog's quarantined cases
    record_deps: Path | None = None  # --record-deps DIR: record what each file runs

    def describe(self) -> str:
        """``fail-fast, timeout from the suite catalog, retry up to 2 attempts``."""
        parts = ["continue-on-error" if self.continue_on_error else "fail-fast"]
        if self.timeout_from_est_time:
            rule = "" if self.est_timeout == EST_TIMEOUT_CI_RUNNER else f" ({self.est_timeout})"
            parts.append(f"timeout from est_time{rule}")
        elif self.timeout_per_file is not None:
            parts.append(f"timeout {self.timeout_per_file:g}s per file")
        else:
            parts.append("timeout from the suite catalog")
        if self.retry.enabled:
            parts.append(
                f"retry up to {self.retry.max_attempts} attempts"
                + (" (timeouts too)" if self.retry.retry_timeouts else "")
                + (" on output patterns" if self.retry.judges_output else "")
            )
            if self.retry_timeout_increase and not self.timeout_from_est_time:
                parts.append(f"limit +{self.retry_timeout_increase:g}s")
        return ", ".join(parts)
