"""The least a safe selection runs for a mutant (lab tool, see ``tools/impact_replay.py``).

A case whose record says it ran the mutated function, or opened the mutated file, has that
function's code or that file's bytes among its inputs: a selection that keeps every case whose
recorded inputs changed must run it, whatever else it proves. The *floor* of a mutant is the
share of case time of those cases (a file whose code or opens are recorded outside every case
counts whole), from the records that judged it; a code base whose median floor is above a
target cannot meet that target with such a selection.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping

from ci_runner.impact.blocks import MODULE, parse_blocks
from ci_runner.impact.record_format import FileRecord
from tools.impact_replay_judge import Key, junit_key


def mutated_block(source: str, line: int) -> str:
    """The key of the block holding ``line`` of ``source`` (the module level if no function)."""
    for block in (parse_blocks(source) or [])[1:]:
        if line in block.lines:
            return block.key
    return MODULE


def _reads(code: Mapping[str, Iterable[str]], opened: Iterable[str], path: str, key: str) -> bool:
    return key in code.get(path, ()) or path in opened


def floor_keys(
    records: Mapping[str, FileRecord], case_files: Mapping[Key, str], path: str, key: str
) -> set[Key]:
    """The cases whose record ran block ``key`` of ``path`` or opened ``path``."""
    kept: set[Key] = set()
    for test, record in records.items():
        file_opened = record.file_opened if record.file_opened is not None else record.opened
        if _reads(record.file_code, file_opened, path, key):
            kept |= {k for k, f in case_files.items() if f == test}
            continue
        for case, data in record.cases.items():
            if _reads(data.code, data.opened, path, key):
                kept.add(junit_key(case))
    return kept


def floor_share(row: dict, base: dict, records: Mapping[str, FileRecord], source: str) -> float:
    """The floor of the mutant ``row`` (``source``: the mutated file at the commit, unmutated)."""
    case_time = {(c, n): t for c, n, t, _ in base["case_time"]}
    case_files = {(c, n): f for c, n, _, f in base["case_time"]}
    total = sum(case_time.values()) or 1.0
    keys = floor_keys(records, case_files, row["file"], mutated_block(source, row["line"]))
    return sum(case_time.get(k, 0.0) for k in keys) / total


def floor_lines(name: str, floors: list[float], rows: list[dict]) -> list[str]:
    """The summary: the floor's median and mean beside ours and testmon's."""
    ours = [r["ours_share"] for r in rows]
    testmon = [r["testmon_share"] for r in rows]
    below = sum(1 for f, o in zip(floors, ours, strict=True) if o + 1e-4 < f)
    return [
        f"{name}: {len(rows)} mutants; median share floor / ours / testmon: "
        f"{statistics.median(floors):.1%} / {statistics.median(ours):.1%} / "
        f"{statistics.median(testmon):.1%}; mean {statistics.mean(floors):.1%} / "
        f"{statistics.mean(ours):.1%} / {statistics.mean(testmon):.1%}",
        f"{name}: mutants where ours runs less than the floor: {below}",
    ]
