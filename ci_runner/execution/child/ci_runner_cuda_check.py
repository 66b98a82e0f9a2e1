"""After each case: is the process's CUDA context still usable? If not, end the process.

A kernel fault (an illegal memory access, a device-side assert) loses the CUDA context for good:
every later CUDA call of the process fails, so every later case of the file would fail too and
name the wrong culprit. After each case of a process that initialized CUDA through torch, the
device is synchronized; when that raises, the case is recorded as the one that lost the context
(an ``abort`` line of the case record) and the process ends at once with
:data:`CONTEXT_LOST_EXIT`. The runner reports that case as crashed and runs the cases not run
yet in a fresh process. A process that never imported torch, or never used CUDA, pays nothing.
Standard library only (torch is used only when the test already imported it).
"""

from __future__ import annotations

import os
import sys

import ci_runner_case_record as record

CONTEXT_LOST_EXIT = 86  # the exit status of a process ended for a lost CUDA context


def lost_context() -> str:
    """The error that shows the CUDA context is lost, or ``""`` when it is fine (or unused)."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    try:
        if cuda is None or not cuda.is_initialized():
            return ""
        cuda.synchronize()
    except Exception as error:
        return record.first_line(f"{type(error).__name__}: {error}") or type(error).__name__
    return ""


def end_if_lost(writer, case_id: str) -> None:
    """Record and end the process when the CUDA context is lost after ``case_id`` ran."""
    reason = lost_context()
    if not reason:
        return
    writer.write("abort", id=case_id, reason=f"the CUDA context was lost: {reason}")
    try:
        sys.stdout.flush()
        sys.stderr.write(
            f"\n[ci_runner] the CUDA context was lost after {case_id}: {reason}; ending the "
            "process so the remaining cases run in a fresh one\n"
        )
        sys.stderr.flush()
    except Exception:
        pass
    os._exit(CONTEXT_LOST_EXIT)
