"""The blocks of a Python source, kept on disk by content across runs.

After each recorded file the runner cuts every source it ran into blocks
(:func:`ci_runner.impact.blocks.parse_blocks`): parsing and hashing them is most of what
``--record-deps`` costs the runner itself; a ``--deps-from`` selection cuts each changed file at
the recorded commit and now (the recorded side is usually on disk already). A source's blocks depend only on its bytes, the rules
of :mod:`ci_runner.impact.blocks` and the interpreter's ``ast``; so they are stored under
``<cache>/blocks/<rules>/<content sha256>.json``, where ``<rules>`` hashes the source of
``blocks.py`` and the interpreter's version (a change to either starts afresh), and reused by
any later recording run of any repository on the machine (``<cache>``:
:func:`~ci_runner.cache_location.cache_location`). An entry that is not of the shape written
here is parsed again and rewritten, with one notice; a cache that cannot be written only costs
time. Where there is no cache directory every source is parsed (one notice).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from ci_runner.cache_location import announce_damage, announce_no_cache, cache_location
from ci_runner.impact import blocks as blocks_module
from ci_runner.impact.blocks import MODULE, Block, parse_blocks

CACHE_NAME = "block cache"
SUBDIRECTORY = "blocks"
_HEX = frozenset("0123456789abcdef")


def _rules_key() -> str:
    """What the blocks of a source depend on besides its bytes: the rules and the ``ast``."""
    rules = Path(blocks_module.__file__).read_bytes()
    version = ".".join(map(str, sys.version_info[:2])).encode()
    return hashlib.sha256(rules + b"\0" + version).hexdigest()[:16]


def _encode(blocks: list[Block] | None) -> dict[str, object]:
    if blocks is None:
        return {"blocks": None}
    return {"blocks": [[b.key, b.digest, sorted(b.lines), b.text] for b in blocks]}


def _is_hex(value: object, length: int) -> bool:
    return isinstance(value, str) and len(value) == length and all(c in _HEX for c in value)


def _decode(data: object) -> list[Block] | None:
    """The blocks of an entry; ValueError naming what is wrong with it."""
    if not isinstance(data, dict) or "blocks" not in data:
        raise ValueError("not an object with a 'blocks' key")
    entries = data["blocks"]
    if entries is None:
        return None
    if not isinstance(entries, list) or not entries:
        raise ValueError("'blocks' is neither null nor a non-empty list")
    blocks = []
    for entry in entries:
        if not (
            isinstance(entry, list)
            and len(entry) == 4
            and isinstance(entry[0], str)
            and _is_hex(entry[1], 64)
            and isinstance(entry[2], list)
            and all(isinstance(n, int) and not isinstance(n, bool) for n in entry[2])
            and (entry[3] == "" or _is_hex(entry[3], 32))
        ):
            raise ValueError(f"block {str(entry)[:80]} is not [key, sha256, [lines], text key]")
        blocks.append(Block(entry[0], entry[1], frozenset(entry[2]), entry[3]))
    if blocks[0].key != MODULE or any(b.key == MODULE for b in blocks[1:]):
        raise ValueError(f"the first block, and only it, must be {MODULE}")
    return blocks


class BlockCache:
    """:func:`parse_blocks` by content digest, from the disk when an earlier run parsed it."""

    def __init__(self, environ: dict[str, str] | None = None) -> None:
        location = cache_location(environ)
        announce_no_cache(location)
        self.directory = (
            None if location.directory is None else location.directory / SUBDIRECTORY / _rules_key()
        )

    def blocks(self, source: bytes, digest: str, like: Sequence[Block] = ()) -> list[Block] | None:
        """The blocks of ``source`` (whose sha256 is ``digest``); None when it does not parse.
        ``like`` (an earlier version's blocks) spares dumping the functions it has unchanged."""
        if self.directory is None:
            return parse_blocks(source, like)
        path = self.directory / f"{digest}.json"
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = None  # not cached yet (or unreadable: parsed and written again)
        if text is not None:
            try:
                return _decode(json.loads(text))
            except ValueError as exc:  # JSONDecodeError is a ValueError
                announce_damage(CACHE_NAME, path, [str(exc)])
        blocks = parse_blocks(source, like)
        self._store(path, blocks)
        return blocks

    def _store(self, path: Path, blocks: list[Block] | None) -> None:
        temporary = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_text(json.dumps(_encode(blocks)), encoding="utf-8")
            os.replace(temporary, path)  # whole or absent for a concurrent reader
        except OSError:  # a cache that cannot be written costs only time
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)
