"""A child's combined stdout/stderr lives in a file on disk, never in the runner's memory.

Reading it back is bounded: a tail of at most a few KiB for the reports, or a chunked copy to a
stream for the console. Bytes that are not UTF-8 are replaced, never fatal, and only a regular
file is read (a file that swapped its log for a FIFO cannot block the runner).
"""

from __future__ import annotations

import codecs
from pathlib import Path
from typing import TextIO

from ci_runner.file_safety import open_regular

TAIL_BYTES = 64 * 1024
CHUNK_BYTES = 1024 * 1024


def read_tail(path: Path | str, max_bytes: int = TAIL_BYTES) -> tuple[str, bool]:
    """The last ``max_bytes`` of the file decoded as UTF-8 (errors replaced), and truncated?"""
    try:
        with open_regular(path, follow_links=False) as handle:
            handle.seek(0, 2)
            size = handle.tell()
            start = max(0, size - max_bytes)
            handle.seek(start)
            data = handle.read(max_bytes)
    except OSError:
        return "", False
    return data.decode("utf-8", errors="replace"), start > 0


def copy_text(path: Path | str, stream: TextIO, chunk_bytes: int = CHUNK_BYTES) -> None:
    """Write the whole file to ``stream`` chunk by chunk, decoding UTF-8 with replacement."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    try:
        with open_regular(path, follow_links=False) as handle:
            while chunk := handle.read(chunk_bytes):
                stream.write(decoder.decode(chunk))
            stream.write(decoder.decode(b"", final=True))
    except OSError as exc:
        stream.write(f"[output unavailable: {exc}]\n")


def size_of(path: Path | str) -> int:
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0
