"""Quarantine: a file's failure that fails no job, because the file or its failing cases are
quarantined (``quarantined=`` in its registrations, or ``[tool.ci-runner.quarantine]``)."""

from __future__ import annotations

import dataclasses

from ci_runner.catalog.node_ids import case_node_id
from ci_runner.catalog.quarantine import QuarantineEntry, entries_for, quarantine_reason
from ci_runner.model import FileResult

_FAILED = ("failed", "error")


def apply_quarantine(
    result: FileResult, file_reason: str | None, entries: tuple[QuarantineEntry, ...]
) -> FileResult:
    """``result`` marked quarantined when the whole file is (``file_reason``), or when it failed
    and every failing case is covered by a quarantine entry of its file. A failure no case
    names (a crash, a timeout, exit 5) is quarantined only with the whole file."""
    if file_reason is not None:
        return dataclasses.replace(result, quarantined=file_reason)
    mine = entries_for(entries, result.path)
    if not mine or not result.fails_unquarantined:
        return result
    failing = [
        case.case_id or case_node_id(result.path, case.classname, case.name)
        for case in result.cases
        if case.outcome in _FAILED
    ]
    reason = quarantine_reason(mine, failing)
    if reason is None:
        return result
    return dataclasses.replace(result, quarantined=reason)
