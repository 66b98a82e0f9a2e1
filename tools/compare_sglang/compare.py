"""Compare upstream's and our selection for one case; say why they differ.

Identical means the same exit status class (0 vs non-zero) and, when both exit 0, the same
enabled files and the same disabled files; for a sharded case the union of the shards must be
equal and every file must be in exactly one of our shards. Different est_time values are
recorded as notes, and the makespans of both plans are kept for sharded cases.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from tools.compare_sglang.cases import Case
from tools.compare_sglang.ours import OursResult
from tools.compare_sglang.upstream import Selection

_PROBLEM_COUNT = re.compile(r"^\d+ registration problem\(s\) in \d+ file\(s\)")
EXAMPLES = 3


@dataclass
class Outcome:
    """One case, compared. ``reasons`` are exact; ``groups`` their templates, for counting."""

    case: Case
    sources: list[str]
    upstream_rc: int
    ours_rc: int
    upstream_message: str
    ours_message: str
    upstream_files: list[str]
    ours_files: list[str]
    upstream_disabled: list[str]
    ours_disabled: list[str]
    ours_stderr: str = ""
    upstream_shards: list[list[str]] = field(default_factory=list)
    ours_shards: list[list[str]] = field(default_factory=list)
    upstream_makespan: float | None = None
    ours_makespan: float | None = None
    reasons: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.reasons

    @property
    def both_fail(self) -> bool:
        return self.upstream_rc != 0 and self.ours_rc != 0

    def differ(self, group: str, reason: str) -> None:
        self.groups.append(group)
        self.reasons.append(reason)


def template(text: str) -> str:
    """``text`` with names, paths, numbers and suggestions masked, so equal messages group."""
    text = re.sub(r"; (known \S+ suites|did you mean)\b.*$", "", text)
    text = re.sub(r"\S+\.py(:\d+)*:?", "<file>", text)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)
    return re.sub(r"\b\d+(\.\d+)?\b", "N", text)


def ours_error(stderr: str) -> str:
    """The line of our stderr that says why it stopped."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if not lines:
        return "(no message)"
    if _PROBLEM_COUNT.match(lines[-1]):
        return lines[-1]
    errors = [line for line in lines if line.startswith("error:") or ": error:" in line]
    return errors[0] if errors else lines[-1]


def _examples(paths: list[str]) -> str:
    shown = ", ".join(paths[:EXAMPLES])
    return shown + (f" and {len(paths) - EXAMPLES} more" if len(paths) > EXAMPLES else "")


def compare(
    case: Case,
    sources: list[str],
    upstream: list[Selection],
    ours: list[OursResult],
    exact_shards: bool = False,
) -> Outcome:
    """Upstream's selections (one per shard) against ours (one per shard run); with
    ``exact_shards`` (``plan = "upstream"``) every shard must hold upstream's files in its order."""
    up_rc = next((s.rc for s in upstream if s.rc != 0), 0)
    our_rc = next((r.rc for r in ours if r.rc != 0), 0)
    up_files = [path for s in upstream for path in s.files]
    first = ours[0]
    outcome = Outcome(
        case=case,
        sources=sources,
        upstream_rc=up_rc,
        ours_rc=our_rc,
        upstream_message=next((s.message for s in upstream if s.rc != 0), upstream[0].message),
        ours_message=ours_error(first.stderr) if our_rc else first.broken,
        upstream_files=sorted(up_files),
        ours_files=sorted(first.files),
        upstream_disabled=sorted(set(upstream[0].disabled)),
        ours_disabled=sorted(set(first.disabled)),
        ours_stderr=first.stderr,
    )
    if case.size is not None and up_rc == 0:
        outcome.upstream_shards = [list(s.files) for s in upstream]
        outcome.upstream_makespan = max(
            (sum(s.est.get(path, 0.0) for path in s.files) for s in upstream), default=0.0
        )
    if up_rc == 0 and our_rc != 0:
        message = outcome.ours_message
        outcome.differ(f"ours exit {our_rc}: {template(message)}", f"ours exit {our_rc}: {message}")
        return outcome
    if up_rc != 0 and our_rc == 0:
        message = outcome.upstream_message
        outcome.differ(
            f"upstream exit {up_rc}: {template(message)}", f"upstream exit {up_rc}: {message}"
        )
        return outcome
    if up_rc != 0:
        return outcome
    broken = next((r.broken for r in ours if r.broken), "")
    if broken:
        outcome.differ(f"ours: {broken}", f"ours: {broken}")
        return outcome
    up_est = {path: est for s in upstream for path, est in s.est.items()}
    _compare_files(outcome, up_files, up_est, first)
    if case.size is not None:
        _compare_shards(outcome, ours)
        if exact_shards and outcome.ours_shards != outcome.upstream_shards:
            different = [
                i
                for i, (a, b) in enumerate(
                    zip(outcome.ours_shards, outcome.upstream_shards, strict=False)
                )
                if a != b
            ]
            outcome.differ(
                "plan = upstream: a shard differs from upstream's (files or order)",
                f"shard(s) {different or 'count'} differ from upstream's",
            )
    return outcome


def _compare_files(
    outcome: Outcome, up_files: list[str], up_est: dict[str, float], ours: OursResult
) -> None:
    up_count, our_count = Counter(up_files), Counter(ours.files)
    twice = sorted(path for path, n in up_count.items() if n > 1)
    if twice:
        outcome.differ(
            "upstream selects a file more than once (registered twice for one hw/suite/nightly)",
            f"upstream selects {len(twice)} file(s) more than once: {_examples(twice)}",
        )
    only_up = sorted(set(up_count) - set(our_count))
    only_ours = sorted(set(our_count) - set(up_count))
    if only_up:
        outcome.differ(
            "upstream selects files ours does not",
            f"{len(only_up)} enabled file(s) only upstream selects: {_examples(only_up)}",
        )
    if only_ours:
        outcome.differ(
            "ours selects files upstream does not",
            f"{len(only_ours)} enabled file(s) only ours selects: {_examples(only_ours)}",
        )
    up_disabled, our_disabled = set(outcome.upstream_disabled), set(outcome.ours_disabled)
    if up_disabled != our_disabled:
        outcome.differ(
            "disabled files differ",
            f"disabled: only upstream {_examples(sorted(up_disabled - our_disabled)) or '-'}; "
            f"only ours {_examples(sorted(our_disabled - up_disabled)) or '-'}",
        )
    changed = sorted(p for p, est in ours.est.items() if p in up_est and up_est[p] != est)
    if changed:
        outcome.notes.append(f"est_time differs for {len(changed)} file(s): {_examples(changed)}")


def _compare_shards(outcome: Outcome, ours: list[OursResult]) -> None:
    plan = ours[0].shards
    placed = Counter(path for shard in plan for path in shard)
    repeated = sorted(path for path, n in placed.items() if n > 1)
    if repeated:
        outcome.differ(
            "a file is in more than one of our shards",
            f"{len(repeated)} file(s) in more than one of our shards: {_examples(repeated)}",
        )
    if len(plan) != outcome.case.size:
        outcome.differ(
            "our plan has another shard count",
            f"our plan has {len(plan)} shard(s), the workflow runs {outcome.case.size}",
        )
    for shard_id, result in enumerate(ours):
        if len(ours) > 1 and (result.plan_hash != ours[0].plan_hash or result.shards != plan):
            outcome.differ(
                "our shard runs disagree on the plan",
                f"shard run {shard_id} planned differently from shard run 0",
            )
            break
    outcome.ours_makespan = ours[0].makespan
    outcome.ours_shards = [list(shard) for shard in plan]
