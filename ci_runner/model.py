"""Records produced by discovery and consumed by selection, planning and the lints."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Registration:
    """One ``register_<backend>_ci(...)`` call found in a file."""

    path: str  # POSIX, relative to the root
    backend: str  # "cuda", "cpu", ... (see ci_runner.registration_syntax)
    suite: str  # "" only for a disabled placeholder registration (it belongs to no suite)
    est_time: float  # 0 only for a disabled registration
    nightly: bool = False
    disabled: str | None = None  # None = enabled; a string = why it is disabled
    line: int = 0
    col: int = 0
    min_gpus: int | None = None  # min_gpus=N: the file needs at least N GPUs
    # suite-template fields the suite name was composed from, e.g. (("stage", "base-b"), ...)
    composed_from: tuple[tuple[str, str], ...] = ()

    @property
    def suite_origin(self) -> str:
        """`` (from stage='base-b', runner_config='1-gpu-large')`` for a composed suite name."""
        if not self.composed_from:
            return ""
        return " (from " + ", ".join(f"{k}={v!r}" for k, v in self.composed_from) + ")"


@dataclass(frozen=True)
class Problem:
    """A registration or discovery error, printed as ``path:line:col: message``."""

    path: str  # POSIX, relative to the root
    line: int
    col: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.message}"
