"""How a change selection is shown: lines for the console and dry run, and the JSON fragment."""

from __future__ import annotations

from ci_runner.impact.selection import ChangeImpact
from ci_runner.safe_text import one_line


def _seconds(value: float) -> str:
    return f"{value:.1f}s" if value < 100 else f"{value:.0f}s"


def impact_lines(impact: ChangeImpact) -> list[str]:
    """The summary, then one reason chain per kept file (or why the whole suite runs)."""
    full, kept = impact.full, impact.selection
    share = kept.est_total / full.est_total if full.est_total else 1.0
    lines = [
        f"change impact ({one_line(impact.source)}): {len(impact.changes)} changed file(s); "
        f"keeps {len(kept.files)} of {len(full.files)} file(s), est {_seconds(kept.est_total)} "
        f"of {_seconds(full.est_total)} ({share:.0%}), saves {_seconds(impact.saved)}; "
        f"analysis {impact.seconds:.2f}s"
    ]
    lines += [f"  {one_line(line)}" for line in impact.record_lines]
    if impact.run_everything:
        lines.append("  runs the whole suite:")
        lines += [f"    {one_line(reason)}" for reason in impact.run_everything]
        return lines
    if not impact.changes:
        lines.append("  no changed file: nothing to run")
    lines += [
        f"  {one_line(path)}: {one_line(reason.text())}" for path, reason in impact.reasons.items()
    ]
    lines += [f"  unused by this suite: {one_line(path)}" for path in impact.unreached]
    return lines


def impact_document(impact: ChangeImpact) -> dict[str, object]:
    """The ``change_impact`` member of ``--dry-run --format json``."""
    return {
        "source": impact.source,
        "changes": [
            {"path": c.path, "status": c.status, "old_path": c.old_path} for c in impact.changes
        ],
        "runs_everything": bool(impact.run_everything),
        "run_everything_reasons": list(impact.run_everything),
        "kept": [
            {
                "path": path,
                "chain": [{"path": link.path, "how": link.how} for link in reason.chain],
                "note": reason.note,
            }
            for path, reason in impact.reasons.items()
        ],
        "unused_changes": list(impact.unreached),
        "files_before": len(impact.full.files),
        "files_after": len(impact.selection.files),
        "est_before": impact.full.est_total,
        "est_after": impact.selection.est_total,
        "est_saved": impact.saved,
        "analysis_seconds": round(impact.seconds, 3),
        "records": list(impact.record_lines),
    }
