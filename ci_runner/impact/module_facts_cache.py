"""The :class:`~ci_runner.impact.module_facts.ModuleFacts` of Python sources, cached by content.

An entry is keyed by the SHA-256 of a file's bytes, so it is valid whatever the file's path or
timestamps (no racy-timestamp case: the content is read and hashed every run). Each entry is
one small JSON file under ``module-facts-<format>-py<version>/`` in
:func:`~ci_runner.cache_location.cache_location` (``ast`` differs between Python versions; the
format is a digest of ``module_facts.py``, so facts computed by other code are not read), so
a run reads only the entries of the files it looks at. A missing, damaged or unwritable entry
only costs time (a damaged one is parsed again and rewritten).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from pathlib import Path

from ci_runner.cache_location import cache_location
from ci_runner.impact import module_facts as module_facts_module
from ci_runner.impact.module_facts import Import, ModuleFacts, Reads, Statement, module_facts

# The facts' format is the code that computes them: facts written by another version of
# module_facts.py (another checkout sharing the cache directory) are never read.
FORMAT = hashlib.sha256(Path(module_facts_module.__file__).read_bytes()).hexdigest()[:16]


class ModuleFactsCache:
    """Facts by content digest, each entry written as soon as it is parsed."""

    def __init__(self) -> None:
        location = cache_location()
        self.directory: Path | None = None
        if location.directory is not None:
            version = f"{sys.version_info[0]}.{sys.version_info[1]}"
            self.directory = location.directory / f"module-facts-{FORMAT}-py{version}"

    def facts(self, source: bytes) -> ModuleFacts | None:
        """The facts of ``source`` (None: it does not parse)."""
        digest = hashlib.sha256(source).hexdigest()
        path = self.directory / digest[:2] / f"{digest}.json" if self.directory else None
        if path is not None:
            with contextlib.suppress(OSError, ValueError, RecursionError, TypeError, IndexError):
                return _decode(json.loads(path.read_text(encoding="utf-8")))
        facts = module_facts(source)
        if path is not None:
            temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            with contextlib.suppress(OSError):
                path.parent.mkdir(parents=True, exist_ok=True)
                temporary.write_text(
                    json.dumps(_encode(facts), separators=(",", ":")), encoding="utf-8"
                )
                os.replace(temporary, path)
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)
        return facts

    def save(self) -> None:
        """Nothing is pending: entries are written as they are parsed."""


def _encode(facts: ModuleFacts | None) -> list:
    if facts is None:
        return []
    statements = [
        [
            s.scope, s.digest, s.line, sorted(s.binds), _reads(s.reads), s.effect,
            sorted(s.needs), [[i.module, i.level, list(i.names)] for i in s.imports],
            list(s.bases), list(s.builtins), [list(m) for m in s.modules],
            [list(f) for f in s.froms], s.hooks, s.is_class, list(s.constants), s.constant,
            list(s.exports),
        ]
        for s in facts.statements
    ]  # fmt: skip
    blocks = {key: _reads(reads) for key, reads in facts.blocks.items()}
    return [statements, blocks, facts.star_import]


def _reads(reads: Reads) -> list:
    return [sorted(reads.names), sorted(reads.attrs), reads.dynamic]


def _decode_reads(entry: list) -> Reads:
    names, attrs, dynamic = entry
    return Reads(frozenset(names), frozenset(attrs), str(dynamic))


def _decode(entry: list) -> ModuleFacts | None:
    if not entry:
        return None
    statements, blocks, star = entry
    decoded = tuple(
        Statement(
            scope=str(s[0]),
            digest=str(s[1]),
            line=int(s[2]),
            binds=frozenset(s[3]),
            reads=_decode_reads(s[4]),
            effect=str(s[5]),
            needs=frozenset(s[6]),
            imports=tuple(Import(str(m), int(level), tuple(names)) for m, level, names in s[7]),
            bases=tuple(s[8]),
            builtins=tuple(s[9]),
            modules=tuple((str(a), str(b)) for a, b in s[10]),
            froms=tuple((str(a), str(b)) for a, b in s[11]),
            hooks=bool(s[12]),
            is_class=bool(s[13]),
            constants=tuple(s[14]),
            constant=bool(s[15]),
            exports=tuple(s[16]),
        )
        for s in statements
    )
    return ModuleFacts(decoded, {str(k): _decode_reads(v) for k, v in blocks.items()}, bool(star))
