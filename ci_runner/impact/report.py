"""How a change selection is shown: one summary line for a run, the reasons for a dry run, and
the JSON fragment of ``--dry-run --format json``."""

from __future__ import annotations

from ci_runner.impact.selection import ChangeImpact
from ci_runner.safe_text import one_line


def _seconds(value: float) -> str:
    return f"{value:.1f}s" if value < 100 else f"{value:.0f}s"


def impact_summary(impact: ChangeImpact) -> str:
    """One line: what changed, what is kept and dropped, the time saved, and why the selection
    failed open (the whole suite, or files kept because the analysis cannot bound them)."""
    full, kept = impact.full, impact.selection
    share = kept.est_total / full.est_total if full.est_total else 1.0
    ignored = f", {len(impact.ignored)} ignored" if impact.ignored else ""
    line = (
        f"change impact ({one_line(impact.source)}): {len(impact.changes)} changed file(s)"
        f"{ignored}; keeps {len(kept.files)} of {len(full.files)} file(s), drops "
        f"{len(full.files) - len(kept.files)}, est {_seconds(kept.est_total)} of "
        f"{_seconds(full.est_total)} ({share:.0%}), saves {_seconds(impact.saved)}"
    )
    if impact.run_everything:
        more = len(impact.run_everything) - 1
        line += f"; fails open: {one_line(impact.run_everything[0])}"
        line += f" (and {more} more)" if more else ""
    elif impact.unbounded:
        line += f"; {impact.unbounded} kept for what the analysis cannot bound"
    partial = sum(1 for kept in impact.cases.values() if 0 < len(kept.cases) < kept.total)
    if partial and not impact.run_everything:
        line += f"; {partial} file(s) run only the cases the change reaches"
    return line + f"; analysis {impact.seconds:.2f}s"


def impact_lines(impact: ChangeImpact) -> list[str]:
    """The summary, then why: one reason chain per kept file (or why the whole suite runs),
    the ignored paths and the changes no selected test reaches."""
    lines = [impact_summary(impact)]
    lines += [f"  not ignored: {one_line(text)}" for text in impact.not_ignored]
    lines += [
        f"  ignored: {one_line(path)} (ignore {one_line(pattern)!s})"
        for path, pattern in impact.ignored
    ]
    lines += [f"  {one_line(line)}" for line in impact.record_lines]
    if impact.run_everything:
        lines.append("  runs the whole suite:")
        lines += [f"    {one_line(reason)}" for reason in impact.run_everything]
        return lines
    if not impact.changes:
        lines.append("  no changed file: nothing to run")
    for path, reason in impact.reasons.items():
        lines.append(f"  {one_line(path)}: {one_line(reason.text())}")
        lines += _case_lines(impact, path)
    lines += [f"  unused by this suite: {one_line(path)}" for path in impact.unreached]
    return lines


def _case_lines(impact: ChangeImpact, path: str) -> list[str]:
    """Which cases of a kept file run and why, or why every case runs (a per-case record)."""
    kept = impact.cases.get(path)
    if kept is None:
        return []
    if not kept.cases:
        return [f"    every case of {kept.total} runs: {one_line(kept.whole)}"]
    shown = [f"{case.partition('::')[2]} [{why}]" for case, why in kept.cases.items()]
    return [f"    runs {len(kept.cases)} of {kept.total} case(s): {one_line(', '.join(shown))}"]


def _case_document(impact: ChangeImpact, path: str) -> dict[str, object] | None:
    kept = impact.cases.get(path)
    if kept is None:
        return None
    return {
        "of": kept.total,
        "run": [{"id": case, "why": why} for case, why in kept.cases.items()] or None,
        "every_case_because": kept.whole,
    }


def impact_document(impact: ChangeImpact) -> dict[str, object]:
    """The ``change_impact`` member of ``--dry-run --format json``."""
    return {
        "source": impact.source,
        "changes": [
            {"path": c.path, "status": c.status, "old_path": c.old_path} for c in impact.changes
        ],
        "runs_everything": bool(impact.run_everything),
        "run_everything_reasons": list(impact.run_everything),
        "ignored": [{"path": path, "pattern": pattern} for path, pattern in impact.ignored],
        "not_ignored": list(impact.not_ignored),
        "kept": [
            {
                "path": path,
                "chain": [{"path": link.path, "how": link.how} for link in reason.chain],
                "note": reason.note,
                "cases": _case_document(impact, path),
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
