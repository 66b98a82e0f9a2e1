"""How the files of a shard run: :class:`ExecutionOptions`, built once by the CLI from its flags.

Every value arrives parsed and checked (the CLI rejects bad flags with exit 2), so the executor
reads typed fields, never an ``argparse.Namespace``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ci_runner.execution.retry import RetryPolicy

DEFAULT_MAX_ATTEMPTS = 2
DEFAULT_RETRY_WAIT_SECONDS = 30.0
DEFAULT_KILL_GRACE_SECONDS = 5.0


@dataclass(frozen=True)
class ExecutionOptions:
    """Fail-fast, time limits, retries and GPU slots of one shard run."""

    continue_on_error: bool = False  # run every file even after a failure
    timeout_per_file: float | None = None  # flat limit, or the cap with timeout_from_est_time
    timeout_from_est_time: bool = False  # limit = min(max(3*est+60, 60), cap)
    kill_grace_seconds: float = DEFAULT_KILL_GRACE_SECONDS  # SIGTERM -> SIGKILL
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    fail_on_flaky: bool = False  # a file that passed only on a retry fails the run
    gpus: int | None = None  # --gpus N: run on N GPU slots
    gpu_ids: tuple[str, ...] | None = None  # --gpu-ids: these GPU ids (parsed, distinct)

    def describe(self) -> str:
        """``fail-fast, timeout from the suite catalog, retry up to 2 attempts``."""
        parts = ["continue-on-error" if self.continue_on_error else "fail-fast"]
        if self.timeout_from_est_time:
            parts.append("timeout from est_time")
        elif self.timeout_per_file is not None:
            parts.append(f"timeout {self.timeout_per_file:g}s per file")
        else:
            parts.append("timeout from the suite catalog")
        if self.retry.enabled:
            parts.append(
                f"retry up to {self.retry.max_attempts} attempts"
                + (" (timeouts too)" if self.retry.retry_timeouts else "")
            )
        return ", ".join(parts)
