"""Render a selection and its plan: the human printout and the ``--dry-run --format json`` object."""

from __future__ import annotations

from ci_runner.model import shard_label
from ci_runner.plan.packing import Plan
from ci_runner.safe_text import one_line
from ci_runner.select import Selection


def _seconds(value: float) -> str:
    return f"{value:.1f}s" if value < 100 else f"{value:.0f}s"


def selection_lines(selection: Selection) -> list[str]:
    """Header, totals and the disabled files with their reasons."""
    lines = [
        f"ci_runner: hw={selection.hw} suite={','.join(s.name for s in selection.suites)} "
        f"nightly={'yes' if selection.nightly else 'no'}",
        f"selected {len(selection.files)} file(s), est total {_seconds(selection.est_total)}; "
        f"{len(selection.disabled)} disabled",
    ]
    lines.extend(
        f"  disabled: {one_line(d.path)} [{d.suite}] reason: {one_line(d.reason)}"
        for d in selection.disabled
    )
    lines.extend(
        f"  quarantined: {one_line(f.path)} [{f.suite}] reason: {one_line(f.quarantined)}"
        for f in selection.files
        if f.quarantined is not None
    )
    return lines


def _gpu_note(gpus: int, all_gpus: bool) -> str:
    """``, every GPU (at least 2)`` / ``, 2 GPUs``; nothing for the usual 0 or 1."""
    if all_gpus:
        return ", every GPU" + (f" (at least {gpus})" if gpus > 1 else "")
    return f", {gpus} GPUs" if gpus > 1 else ""


def _cases_note(cases: tuple[str, ...]) -> str:
    """``, 2 case(s): test_a, TestB::test_c`` when only some cases of the file run."""
    if not cases:
        return ""
    names = [case.partition("::")[2] for case in cases]
    shown = ", ".join(one_line(name) for name in names[:3])
    more = f", ... ({len(names) - 3} more)" if len(names) > 3 else ""
    return f", {len(cases)} case(s): {shown}{more}"


def plan_lines(plan: Plan, selection: Selection, shard_ids: list[int]) -> list[str]:
    """Plan figures, then each listed shard with its files (longest first)."""
    est = {f.path: f.est_time for f in selection.files}
    gpus = {f.path: _gpu_note(f.gpus, f.all_gpus) + _cases_note(f.cases) for f in selection.files}
    lines = [
        f"plan: {plan.shard_count} shard(s), predicted makespan {_seconds(plan.makespan)}, "
        f"lower bound {_seconds(plan.lower_bound)} (max(longest file, total/{plan.shard_count})), "
        f"ratio {plan.ratio:.3f}, plan hash {plan.plan_hash}"
    ]
    for shard_id in shard_ids:
        files = plan.shards[shard_id]
        lines.append(
            f"shard {shard_label(shard_id, plan.shard_count)} (--auto-partition-id {shard_id}): "
            f"{len(files)} file(s), est total {_seconds(plan.shard_totals[shard_id])}"
        )
        lines.extend(
            f"  - {one_line(path)} (est {_seconds(est[path])}{gpus[path]})" for path in files
        )
    return lines


def dry_run_document(selection: Selection, plan: Plan, shard_id: int | None) -> dict[str, object]:
    """The ``--dry-run --format json`` object (paths POSIX, relative to the root)."""
    return {
        "hw": selection.hw,
        "suites": [s.name for s in selection.suites],
        "nightly": selection.nightly,
        "shard_count": plan.shard_count,
        "auto_partition_id": shard_id,
        "files": [
            {
                "path": f.path,
                "est_time": f.est_time,
                "suite": f.suite,
                "gpus": f.gpus,
                "all_gpus": f.all_gpus,
                "cases": list(f.cases),
                "quarantined": f.quarantined,
            }
            for f in selection.files
        ],
        "disabled": [
            {"path": d.path, "suite": d.suite, "reason": d.reason} for d in selection.disabled
        ],
        "shards": [
            {"id": index, "est_total": total, "files": list(files)}
            for index, (files, total) in enumerate(zip(plan.shards, plan.shard_totals, strict=True))
        ],
        "lower_bound": plan.lower_bound,
        "makespan": plan.makespan,
        "ratio": plan.ratio,
        "lpt_makespan": plan.lpt_makespan,
        "algorithm": plan.algorithm,
        "plan_hash": plan.plan_hash,
    }
