"""``run_suite.py ... | head``: when stdout's reader goes away, end quietly.

A Unix tool dies of SIGPIPE there; Python instead raises :class:`BrokenPipeError` on the next
write and again when it flushes stdout at exit, printing a traceback. The command catches the
first, points stdout at ``/dev/null`` (so the last flush has somewhere to go) and exits with
``128 + SIGPIPE`` (141), printing nothing. While files run, SIGPIPE stops the shard like SIGTERM
(:mod:`ci_runner.execution.signals`), so nothing a file started outlives the runner.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

from ci_runner.exit_codes import EXIT_SIGNAL_BASE

EXIT_BROKEN_PIPE = EXIT_SIGNAL_BASE + int(getattr(signal, "SIGPIPE", 13))


def quiet_stdout() -> int:
    """Send the rest of stdout to /dev/null; return the exit code of a broken pipe."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    return EXIT_BROKEN_PIPE
