"""What the reports are written from: the shard's identity and every file's result so far."""

from __future__ import annotations

from dataclasses import dataclass, field

from ci_runner.execution.outcomes import (
    DISABLED,
    FAILING_STATUSES,
    FLAKY,
    NOT_RUN,
    SKIPPED,
    CaseResult,
    FileResult,
)


@dataclass(frozen=True)
class RunInfo:
    """The plan this shard belongs to."""

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

    @property
    def shard(self) -> str:
        """``"0/4"``: 0-based shard id / shard count (the JUnit and timings spelling)."""
        return f"{self.shard_id}/{self.shard_count}"


def placeholder(path: str, suite: str, est_time: float, status: str, reason: str) -> FileResult:
    """A file that did not run (not_run, skipped or disabled): one skipped case that says why."""
    case = CaseResult(
        name=path.rsplit("/", 1)[-1],
        classname=path.removesuffix(".py").replace("/", "."),
        time=0.0,
        outcome="skipped",
        message=f"{status}: {reason}",
        type=status,
    )
    return FileResult(
        path=path, suite=suite, est_time=est_time, status=status, elapsed=0.0, reason=reason,
        cases=(case,),
    )  # fmt: skip


@dataclass
class ShardOutcome:
    """The shard's results in plan order (finished, not_run and disabled files alike)."""

    info: RunInfo
    results: list[FileResult] = field(default_factory=list)
    wall: float = 0.0
    exit_code: int = 0
    interrupted_by: str | None = None  # "SIGTERM" / "SIGINT"

    def with_status(self, *statuses: str) -> list[FileResult]:
        return [r for r in self.results if r.status in statuses]

    @property
    def failing(self) -> list[FileResult]:
        return [r for r in self.results if r.status in FAILING_STATUSES]

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


def format_seconds(seconds: float) -> str:
    """``12.3s``, ``4m05s``, ``1h02m``."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
