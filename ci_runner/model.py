"""Records produced by discovery and consumed by selection, planning and the lints."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Registration:
    """One ``register_<backend>_ci(...)`` call found in a file."""

    path: str  # POSIX, relative to the root
    backend: str  # "cuda", "cpu", ... (see ci_runner.markers.MARKER_BACKENDS)
    suite: str
    est_time: float
    nightly: bool = False
    disabled: str | None = None  # None = enabled; a string = why it is disabled
    line: int = 0
    col: int = 0


@dataclass(frozen=True)
class Problem:
    """A registration or discovery error, printed as ``path:line:col: message``."""

    path: str  # POSIX, relative to the root
    line: int
    col: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.message}"
