"""SIGTERM/SIGHUP/SIGINT while a shard runs: remember the signal, let the executor stop cleanly.

The handlers only set a flag (a cancelled CI job sends SIGTERM, a closed terminal or SSH session
SIGHUP, Ctrl-C SIGINT); the executor polls it, kills the running files' process trees, marks the
rest not_run, writes every report and exits ``128 + signal``. They are installed only for the duration of
:func:`ci_runner.execution.execute_shard` and restored afterwards. A reader that closes stdout or
stderr (``run_suite.py ... | head``) stops the shard the same way, as SIGPIPE (exit 141).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from types import FrameType, TracebackType
from typing import Any

from ci_runner.cli_errors import on_output_closed

PIPE_CLOSED = getattr(signal, "SIGPIPE", 13)  # what a closed stdout or stderr stops a shard as

HANDLED_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, name)
)


def signal_name(signum: int) -> str:
    """``11`` -> ``"SIGSEGV"``; unknown numbers become ``"signal 42"``."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class StopRequest:
    """Context manager that turns SIGTERM/SIGHUP/SIGINT into :attr:`signum` + :attr:`event`."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}
        self._output = contextlib.ExitStack()

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum
        self.event.set()

    @property
    def requested(self) -> bool:
        return self.event.is_set()

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():
            for signum in HANDLED_SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        self._output.enter_context(on_output_closed(lambda: self._handle(PIPE_CLOSED, None)))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()
        self._output.close()
