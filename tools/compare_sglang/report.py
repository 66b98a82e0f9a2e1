"""Print a comparison report, and its full JSON form."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from statistics import mean

from tools.compare_sglang.comparison import Report
from tools.compare_sglang.partition_check import partition_lines

EXAMPLES = 3


def _cases_line(report: Report) -> str:
    outcomes = report.outcomes
    sharded = sum(1 for o in outcomes if o.case.size is not None)
    return (
        f"cases: {len(outcomes)} ({len(outcomes) - sharded} whole-suite, {sharded} sharded at "
        f"their workflow's shard count; {report.runs_of_ours} run(s) of ours)"
    )


def summary_lines(report: Report) -> list[str]:
    """Cases, identical, differing by reason, makespans, then what the tool could not resolve."""
    outcomes = report.outcomes
    identical = [o for o in outcomes if o.identical]
    both_fail = [o for o in identical if o.both_fail]
    empty = [o for o in identical if not o.both_fail and not o.upstream_files]
    lines = [
        f"checkout: {report.checkout} (commit {report.commit})",
        f"upstream: {report.collected_files} collected file(s), {report.registrations} "
        f"registration(s); suite tables: {', '.join(report.tables) or 'none'}",
        _cases_line(report),
        f"identical: {len(identical)} (of them {len(empty)} select no enabled file; "
        f"{len(both_fail)} fail on both sides)",
        f"differing: {len(outcomes) - len(identical)}",
    ]
    groups: dict[str, list] = defaultdict(list)
    for outcome in outcomes:
        for group in dict.fromkeys(outcome.groups):
            groups[group].append(outcome)
    for group, members in sorted(groups.items(), key=lambda item: -len(item[1])):
        lines.append(f"  {len(members):4d}  {group}")
        lines.extend(f"          e.g. {o.case.label}: {o.reasons[0]}" for o in members[:EXAMPLES])
    lines.append(
        f"our catalog: {report.catalog}"
        + ('; plan = "upstream": shards compared file by file' if report.upstream_plan else "")
    )
    lines += makespan_lines(report)
    lines += partition_lines(report.partitions)
    lines += _side_lines(report)
    return lines


def makespan_lines(report: Report) -> list[str]:
    rows = [
        o
        for o in report.outcomes
        if o.case.size is not None and o.ours_makespan is not None and o.upstream_makespan
    ]
    if not rows:
        sharded = sum(1 for o in report.outcomes if o.case.size is not None)
        return [f"makespan: no sharded case ran on both sides ({sharded} sharded case(s))"]
    ratios = [o.ours_makespan / o.upstream_makespan for o in rows]
    lines = [f"makespan, ours / upstream, {len(rows)} sharded case(s): mean {mean(ratios):.3f}"]
    lines += [
        f"  {o.case.label}: {o.ours_makespan:.0f} s / {o.upstream_makespan:.0f} s = {r:.3f}"
        for o, r in zip(rows, ratios, strict=True)
    ]
    return lines


def _side_lines(report: Report) -> list[str]:
    scan = report.workflows
    lines = [
        f"workflows: {len(scan.invocations)} resolved run_suite.py call(s), "
        f"{len(scan.unresolved)} unresolved, {len(scan.other_scripts)} call(s) of other scripts"
    ]
    lines += [f"  unresolved: {u.where}: {u.reason}" for u in scan.unresolved]
    lines += [f"  error: {e}" for e in [*scan.errors, *report.partition_errors.values()]]
    lines += [f"  note: {note}" for note in scan.notes]
    lines += [
        f"  shard counts from compute_partitions.py --pr-test-yml {yml}"
        for yml in report.partition_sizes
    ]
    lines.append(f"ours init: exit {report.init_rc}; our dry runs: {report.mode}")
    if report.cli_checked:
        lines.append(
            f"cli sample: {report.cli_checked} case(s) also run through the real CLI, "
            f"{len(report.cli_mismatches)} differ from the in-process run"
            + (f": {', '.join(report.cli_mismatches)}" if report.cli_mismatches else "")
        )
    if report.our_problems:
        total = sum(p["count"] for p in report.our_problems)
        lines.append(f"our registration problems on this tree: {total}")
        lines += [f"  {p['count']:4d}  {p['message']}" for p in report.our_problems]
    lines.append("upstream traits (what a stricter runner must accept to match):")
    for name, findings in report.traits.items():
        shown = "; ".join(findings[:EXAMPLES])
        more = f" (+{len(findings) - EXAMPLES})" if len(findings) > EXAMPLES else ""
        lines.append(f"  {len(findings):4d}  {name}" + (f": {shown}{more}" if findings else ""))
    seconds = ", ".join(f"{k} {v:.1f} s" for k, v in report.seconds.items())
    lines.append(f"time: {seconds}")
    return lines


def to_json(report: Report) -> dict:
    """The whole report: every case with both sides' files, reasons and notes."""
    document = dataclasses.asdict(report)
    for outcome, entry in zip(report.outcomes, document["outcomes"], strict=True):
        entry["case"] = dataclasses.asdict(outcome.case) | {"label": outcome.case.label}
        entry["identical"] = outcome.identical
    return document
