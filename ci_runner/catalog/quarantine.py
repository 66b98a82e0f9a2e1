"""``[tool.ci-runner.quarantine]``: test cases (or whole files) whose failures fail no job.

Each key is a node id, ``"registered/test_x.py::TestX::test_a[2]"``, or a file's path; each value
the reason, best an issue URL::

    [tool.ci-runner.quarantine]
    "registered/test_x.py::test_flaky" = "https://github.com/org/repo/issues/12"

A key names a case, every case of a class or of a parametrized test (``test_a`` covers
``test_a[1]``), or the whole file (see :func:`~ci_runner.catalog.node_ids.covers`). The cases
still run and are reported everywhere; a file whose every failing case is quarantined does not
fail the job. A file is quarantined in its registration instead with ``quarantined="reason"``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ci_runner.catalog.node_ids import NodeId, NodeIdError, covers, parse_node_id

KEY = "quarantine"


class QuarantineError(ValueError):
    """The quarantine table is malformed; the message names the key."""


@dataclass(frozen=True)
class QuarantineEntry:
    """One quarantined case, class, parametrized test or file, and why."""

    target: NodeId
    reason: str


def parse_quarantine(table: dict, where: str) -> tuple[QuarantineEntry, ...]:
    """The validated entries of ``[tool.ci-runner.quarantine]`` (absent: none), sorted."""
    raw = table.get(KEY, {})
    where = f"{where} {KEY}"
    if not isinstance(raw, dict):
        raise QuarantineError(
            f"{where}: must be a table of node id = reason, e.g. [tool.ci-runner.{KEY}] "
            '"registered/test_x.py::test_a" = "https://github.com/org/repo/issues/12"'
        )
    entries = []
    for key, reason in raw.items():
        try:
            target = parse_node_id(key, "key", case_required=False)
        except NodeIdError as exc:
            raise QuarantineError(f"{where}: {exc}") from None
        if not isinstance(reason, str) or not reason.strip():
            raise QuarantineError(
                f"{where}: {key!r} must be a non-empty reason string (or an issue URL), got "
                f"{reason!r}"
            )
        entries.append(QuarantineEntry(target, reason.strip()))
    return tuple(sorted(entries, key=lambda e: e.target))


def quarantine_reason(entries: tuple[QuarantineEntry, ...], node_ids: list[str]) -> str | None:
    """Why every one of ``node_ids`` (the failing cases of one file) is quarantined, or None when
    one of them is not (or there are none)."""
    reasons: dict[str, str] = {}
    for node_id in node_ids:
        entry = next((e for e in entries if covers(e.target, node_id)), None)
        if entry is None:
            return None
        reasons.setdefault(entry.reason, node_id)
    if not reasons:
        return None
    return "; ".join(
        f"{node_id.partition('::')[2] or node_id}: {reason}" for reason, node_id in reasons.items()
    )


def entries_for(entries: tuple[QuarantineEntry, ...], path: str) -> tuple[QuarantineEntry, ...]:
    """The entries that name ``path`` or a case of it."""
    return tuple(e for e in entries if e.target.path == path)
