"""``--timings-out PATH``: JSON lines, one per file, the raw material for refreshing est_time.

Each line: ``path``, ``suite``, ``est_time``, ``elapsed`` (seconds over all attempts and retry
waits), ``status``, ``attempts``, ``shard`` ("0/4"), plus ``attempt_elapsed`` (per attempt; the
one to compare with est_time), ``timeout``, ``reason``, ``gpu_ids``, ``plan_hash``, and when they
apply ``tolerated`` (a ``no_tests`` file the policy allows: why it does not fail the run),
``quarantined`` (the reason) and ``resumed`` (true: carried over by ``--resume-from``). Rewritten
atomically after every file; files not yet run appear as not_run. Lines are ASCII JSON (a
non-ASCII character is a ``\\uXXXX`` escape, so no name can split a line), and a lone surrogate
from a non-UTF-8 name becomes ``\\xNN`` (:func:`~ci_runner.safe_text.printable`).
"""

from __future__ import annotations

import json
from pathlib import Path

from ci_runner.file_safety import write_atomic
from ci_runner.model import FileResult, RunInfo
from ci_runner.safe_text import printable


def timing_record(result: FileResult, info: RunInfo) -> dict[str, object]:
    """The JSON object of one file."""
    record: dict[str, object] = {
        "path": printable(result.path),
        "suite": printable(result.suite),
        "est_time": result.est_time,
        "elapsed": round(result.elapsed, 3),
        "status": result.status,
        "attempts": len(result.attempts),
        "shard": info.shard,
        "attempt_elapsed": [round(a.elapsed, 3) for a in result.attempts],
        "timeout": result.timeout_limit,
        "reason": printable(result.reason),
        "gpu_ids": [printable(gpu) for gpu in result.gpu_ids],
        "plan_hash": info.plan_hash,
        **({"tolerated": printable(result.tolerated)} if result.tolerated else {}),
    }
    if result.quarantined is not None:
        record["quarantined"] = printable(result.quarantined)
    if result.resumed:
        record["resumed"] = True
    return record


def write_timings(path: Path, results: list[FileResult], info: RunInfo) -> None:
    """Write one line per file to ``path`` atomically."""
    # ASCII JSON (non-ASCII escaped): no U+2028 or U+0085 in a name can split a line
    text = "".join(json.dumps(timing_record(r, info)) + "\n" for r in results)
    write_atomic(path, text.encode("utf-8"))
