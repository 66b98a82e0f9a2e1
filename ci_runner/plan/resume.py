"""``--resume-from TIMINGS``: skip the files a previous attempt of the same shard passed.

GitHub's "Re-run failed jobs" runs a failed shard again, from the start. Given the ``--timings-out``
file of the previous attempt, the shard runs only the files that did not pass there; the ones
that did are reported with their earlier status and time, marked as carried over, so the shard's
reports stay complete (the merge check still finds every planned file once).

What is trusted, and what is not (never skipping what cannot be shown to have passed):

* the file must have been written for the **same plan** (its ``plan_hash``) and the **same shard**
  (``shard``); otherwise the shard runs every file, with a notice saying why: a plan that differs
  means the shard's files (or their estimates) differ, and running again is never wrong;
* a missing file is a notice too (the first attempt has none), and every file runs;
* a file that exists but is not such a timings file is an error naming the file and line: it
  would silently decide what runs;
* only ``passed`` files are skipped, and ``flaky`` ones unless ``--fail-on-flaky`` (where a flaky
  file failed the job, so it runs again).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ci_runner.catalog.limits import MAX_SECONDS, is_finite_number
from ci_runner.file_safety import read_regular_text, why
from ci_runner.model import FLAKY, PASSED, FileResult, FileToRun, whole_file_case

RESUMED = "resumed"  # the JUnit type of a carried file's case


class ResumeError(ValueError):
    """The previous attempt's timings cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class Resume:
    """The files carried over from the previous attempt, and the notice saying what was done."""

    carried: tuple[FileResult, ...]
    notice: str


@dataclass(frozen=True)
class _Row:
    path: str
    suite: str
    status: str
    elapsed: float
    plan_hash: str
    shard: str


def _rows(path: Path) -> list[_Row]:
    try:
        text = read_regular_text(path)
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as exc:  # not a regular file, not UTF-8, no permission
        raise ResumeError(f"--resume-from {path}: cannot read it: {why(exc)}") from None
    rows = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"--resume-from {path}:{number}"
        try:
            raw = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ResumeError(f"{where}: not a JSON line ({exc})") from None
        if not isinstance(raw, dict):
            raise ResumeError(f"{where}: expected a JSON object written by --timings-out")
        fields = {}
        for key in ("path", "suite", "status", "plan_hash", "shard"):
            value = raw.get(key)
            if not isinstance(value, str):
                raise ResumeError(
                    f"{where}: key {key!r} must be a string, got {repr(value)[:40]}; expected a "
                    "line written by --timings-out"
                )
            fields[key] = value
        elapsed = raw.get("elapsed")
        if not is_finite_number(elapsed) or not 0 <= elapsed <= MAX_SECONDS:
            raise ResumeError(
                f"{where}: key 'elapsed' must be a number of seconds from 0 to {MAX_SECONDS}, "
                f"got {repr(elapsed)[:40]}"
            )
        rows.append(_Row(elapsed=float(elapsed), **fields))
    return rows


def load_resume(
    path: Path,
    plan_hash: str,
    shard: str,
    files: Sequence[FileToRun],
    fail_on_flaky: bool,
) -> Resume:
    """The files of ``files`` (this shard's) that the previous attempt in ``path`` passed."""
    everything = f"running every file of shard {shard}"
    try:
        rows = _rows(path)
    except FileNotFoundError:
        return Resume((), f"--resume-from {path}: not found (no previous attempt); {everything}")
    hashes = sorted({row.plan_hash for row in rows})
    shards = sorted({row.shard for row in rows})
    if not rows:
        return Resume((), f"--resume-from {path}: holds no file; {everything}")
    if hashes != [plan_hash]:
        return Resume(
            (),
            f"--resume-from {path}: written for plan {', '.join(hashes)}, this run's plan is "
            f"{plan_hash} (the selection, estimates or shard count differ); {everything}",
        )
    if shards != [shard]:
        return Resume(
            (),
            f"--resume-from {path}: written for shard {', '.join(shards)}, this is shard "
            f"{shard}; {everything}",
        )
    passing = {PASSED} if fail_on_flaky else {PASSED, FLAKY}
    previous = {(row.path, row.suite): row for row in rows if row.status in passing}
    carried = []
    for file in files:
        row = previous.get((file.path, file.suite))
        if row is not None:
            carried.append(_carried(file, row, path))
    rest = len(files) - len(carried)
    notice = (
        f"--resume-from {path}: {len(carried)} of {len(files)} file(s) of shard {shard} passed "
        f"in the previous attempt (plan {plan_hash}) and are not run again; running {rest}"
    )
    return Resume(tuple(carried), notice)


def _carried(file: FileToRun, row: _Row, path: Path) -> FileResult:
    reason = (
        f"{row.status} in a previous attempt of this shard (--resume-from {path}); not run again"
    )
    return FileResult(
        path=file.path,
        suite=file.suite,
        est_time=file.est_time,
        status=row.status,
        elapsed=row.elapsed,
        reason=reason,
        cases=(whole_file_case(file.path, "skipped", 0.0, reason, "", RESUMED),),
        quarantined=file.quarantined,
        resumed=True,
    )
