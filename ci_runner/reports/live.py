"""Following running files: their output streamed to the console, and a heartbeat when late.

One background thread polls every :data:`POLL_SECONDS`. A running attempt's output stays in
its file on disk; the thread copies what is new to the console (at most :data:`CHUNK_BYTES` per
file per poll, so the runner's memory stays flat however much a test prints), decoded as UTF-8
with replacement. With one slot the text is copied as it is; when several files run at once
each line is prefixed with ``<file> | `` so the interleaved lines stay attributable. When an
attempt stops, the rest of its output is copied before anything else about it is printed.

The heartbeat: once an attempt has run longer than its file's est_time, a line saying how long
it has run, the case running now (from its case record) and its last line of output; then again
every ``max(60 s, (limit - est) / 20)``, so an attempt prints at most 20 heartbeats however long
its limit, and never more than one a minute.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO

from ci_runner.execution.captured_output import read_tail
from ci_runner.execution.case_record import running_case
from ci_runner.execution.listener import AttemptStart
from ci_runner.file_safety import open_regular
from ci_runner.safe_text import one_line

POLL_SECONDS = 0.2
CHUNK_BYTES = 1024 * 1024  # read per file per poll while it runs
PENDING_CHARS = 64 * 1024  # a prefixed line longer than this is printed in pieces
HEARTBEAT_MIN_INTERVAL = 60.0
HEARTBEATS_PER_ATTEMPT = 20
LAST_LINE_CHARS = 200


def heartbeat_interval(est_time: float, limit: float) -> float:
    """Seconds between heartbeats of an attempt (see the module docstring)."""
    return max(HEARTBEAT_MIN_INTERVAL, (limit - est_time) / HEARTBEATS_PER_ATTEMPT)


def format_seconds(seconds: float) -> str:
    """``12.3s``, ``4m05s``, ``1h02m``."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def last_output_line(path) -> str:
    """The last non-empty line of an output file, one line, clipped."""
    text, _ = read_tail(path, 4096)
    lines = [line for line in text.replace("\r", "\n").split("\n") if line.strip()]
    if not lines:
        return "(none yet)"
    line = one_line(lines[-1].strip())
    return line if len(line) <= LAST_LINE_CHARS else line[:LAST_LINE_CHARS] + "..."


def heartbeat_line(start: AttemptStart, label: str, elapsed: float) -> str:
    """``[3/9] running registered/test_x.py for 1m05s (est 30s, limit 20m00s); case: ...;
    last output: ...``."""
    case = running_case(start.record)
    return (
        f"{label} running {one_line(start.path)} for {format_seconds(elapsed)} (est "
        f"{start.est_time:g}s, limit {format_seconds(start.timeout)}); case: "
        f"{one_line(case) if case else 'none recorded'}; last output: "
        f"{last_output_line(start.output)}"
    )


@dataclass
class _Followed:
    start: AttemptStart
    label: str  # "[3/9]"
    next_heartbeat: float  # seconds after the start
    handle: BinaryIO | None = None
    decoder: codecs.IncrementalDecoder = field(
        default_factory=lambda: codecs.getincrementaldecoder("utf-8")(errors="replace")
    )
    pending: str = ""  # a prefixed line not finished yet
    closed: bool = False


class LiveOutput:
    """The follower thread; ``emit(text, streamed)`` writes to the console under its lock:
    a file's output (``streamed``: as it is) or a heartbeat line."""

    def __init__(
        self,
        emit: Callable[[str, bool], None],
        stream: bool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.emit = emit
        self.stream = stream  # copy the output (False with --quiet: heartbeats only)
        self.prefixed = False  # several files at once: prefix each line with its file
        self.clock = clock
        self._followed: dict[int, _Followed] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, prefixed: bool) -> None:
        self.prefixed = prefixed
        self._thread = threading.Thread(target=self._run, name="live-output", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def follow(self, start: AttemptStart, label: str) -> None:
        first = max(start.est_time, 1.0)
        with self._lock:
            self._followed[id(start)] = _Followed(start, label, first)

    def finish(self, start: AttemptStart) -> None:
        """Copy the rest of the attempt's output and stop following it."""
        with self._lock:
            followed = self._followed.pop(id(start), None)
            if followed is not None:
                self._copy(followed, limit=None)
                self._close(followed)

    def _run(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            with self._lock:
                for followed in list(self._followed.values()):
                    self._copy(followed, limit=CHUNK_BYTES)
                    self._beat(followed)

    def _beat(self, followed: _Followed) -> None:
        elapsed = self.clock() - followed.start.started
        if elapsed < followed.next_heartbeat:
            return
        start = followed.start
        followed.next_heartbeat = elapsed + heartbeat_interval(start.est_time, start.timeout)
        self.emit(heartbeat_line(start, followed.label, elapsed), False)

    def _copy(self, followed: _Followed, limit: int | None) -> None:
        if not self.stream or followed.closed:
            return
        if followed.handle is None:
            try:
                if os.lstat(followed.start.output).st_size == 0:
                    return  # nothing written yet (or ever): no need to open it
                followed.handle = open_regular(followed.start.output, follow_links=False)
            except OSError:
                followed.closed = True  # the file swapped its log for something else
                return
        left = limit
        while left is None or left > 0:
            try:
                chunk = followed.handle.read(
                    CHUNK_BYTES if left is None else min(left, CHUNK_BYTES)
                )
            except OSError:
                chunk = b""
            if not chunk:
                break
            if left is not None:
                left -= len(chunk)
            self._write(followed, followed.decoder.decode(chunk))
        if limit is None:
            self._write(followed, followed.decoder.decode(b"", final=True))
            if followed.pending:
                self._write_lines(followed, [followed.pending])
                followed.pending = ""

    def _write(self, followed: _Followed, text: str) -> None:
        if not text:
            return
        if not self.prefixed:
            self.emit(text, True)
            return
        parts = (followed.pending + text).split("\n")
        followed.pending = parts.pop()
        if len(followed.pending) > PENDING_CHARS:
            parts.append(followed.pending)
            followed.pending = ""
        self._write_lines(followed, parts)

    def _write_lines(self, followed: _Followed, lines: list[str]) -> None:
        if lines:
            name = one_line(followed.start.path)
            self.emit("".join(f"{name} | {line}\n" for line in lines), True)

    def _close(self, followed: _Followed) -> None:
        followed.closed = True
        if followed.handle is not None:
            with contextlib.suppress(OSError):
                followed.handle.close()
