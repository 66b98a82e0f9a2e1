"""``--timings-out PATH``: JSON lines, one per file, the raw material for refreshing est_time.

Each line: ``path``, ``suite``, ``est_time``, ``elapsed`` (seconds over all attempts and retry
waits), ``status``, ``attempts``, ``shard`` ("0/4"), plus ``attempt_elapsed`` (per attempt; the
one to compare with est_time), ``timeout``, ``reason``, ``gpu_ids``, ``plan_hash``. Rewritten
atomically after every file; files not yet run appear as not_run.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from ci_runner.model import FileResult, RunInfo


def timing_record(result: FileResult, info: RunInfo) -> dict[str, object]:
    """The JSON object of one file."""
    return {
        "path": result.path,
        "suite": result.suite,
        "est_time": result.est_time,
        "elapsed": round(result.elapsed, 3),
        "status": result.status,
        "attempts": len(result.attempts),
        "shard": info.shard,
        "attempt_elapsed": [round(a.elapsed, 3) for a in result.attempts],
        "timeout": result.timeout_limit,
        "reason": result.reason,
        "gpu_ids": list(result.gpu_ids),
        "plan_hash": info.plan_hash,
    }


def write_timings(path: Path, results: list[FileResult], info: RunInfo) -> None:
    """Write one line per file to ``path`` atomically."""
    text = "".join(json.dumps(timing_record(r, info), ensure_ascii=False) + "\n" for r in results)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
