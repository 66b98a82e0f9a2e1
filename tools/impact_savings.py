"""Measure what ``--changed-since`` would have saved over a repository's history.

Run from the repo root (results: docs/change-impact.md)::

    python -m tools.impact_savings history --root /work/main --git /work/main --rev main
    python -m tools.impact_savings history --root /tmp/sgl-full \\
        --git /work/.mirror/bytedance-iaas+sglang/repo --rev d55f1c28e2 --last 200
    python -m tools.impact_savings change --root /tmp/sgl-full \\
        python/sglang/srt/layers/rotary_embedding.py

The selection uses the library API of :mod:`ci_runner.impact` on one tree (``--root``, which must
hold a catalog): every enabled registration of every suite, nightly flags aside (so a tree the
runner's strict checks reject can still be measured). ``history`` takes the changed files of
each first-parent commit of ``--rev`` (``git diff-tree`` against its first parent, in the git
directory ``--git``) and selects against that one tree's dependency graph: a file the tree no
longer has counts as deleted (the whole suite runs). For each commit and each suite it reports
the selected share of the suite's est_time; the summary gives the median and the distribution
per suite and for all suites together (est-weighted).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from ci_runner.catalog import load_catalog
from ci_runner.collect import collect
from ci_runner.impact import ChangeSet, select_changed
from ci_runner.impact.changes import ADDED, DELETED, MODIFIED, RENAMED, Change, parse_raw_diff
from ci_runner.model import FileToRun
from ci_runner.select import Selection
from tools.direct_importers import TestImports, Tree


def all_suites(root: Path):
    """``(catalog, union selection, {suite: {path: est_time}})`` of every enabled registration."""
    catalog = load_catalog(root)
    collection = collect(catalog)
    per_suite: dict[str, dict[str, float]] = defaultdict(dict)
    for reg in collection.registrations:
        if reg.disabled is None and reg.suite:
            files = per_suite[reg.suite]
            files[reg.path] = max(files.get(reg.path, 0.0), reg.est_time)
    union: dict[str, float] = {}
    for files in per_suite.values():
        for path, est in files.items():
            union[path] = max(union.get(path, 0.0), est)
    selection = Selection(
        hw="any",
        suites=(),
        nightly=False,
        files=tuple(FileToRun(path, "any", est) for path, est in sorted(union.items())),
        disabled=(),
    )
    return catalog, selection, dict(per_suite)


def commit_changes(git_dir: str, commit: str, root: Path) -> tuple[Change, ...]:
    """The files ``commit`` changed against its first parent, as changes of the tree ``root``
    (with their modes: a submodule bump or a changed link is known as such)."""
    out = subprocess.run(
        ["git", "--git-dir", git_dir, "diff-tree", "-r", "-M", "--no-commit-id", "--raw",
         "--no-abbrev", "--root", "-z", commit],
        capture_output=True,
        check=True,
    ).stdout  # fmt: skip
    changes = []
    for change in parse_raw_diff(out):
        if change.status in (MODIFIED, ADDED) and not (root / change.path).is_file():
            change = Change(change.path, DELETED)  # gone (or not in the measured tree)
        changes.append(change)
    return tuple(changes)


def measure(root: Path, changes: tuple[Change, ...], setup, importers=None) -> dict:
    """Per suite: (est selected, est full); why everything runs, if it does; and the direct
    importers of a changed module the selection dropped (``importers``: a
    :class:`tools.direct_importers.TestImports`)."""
    catalog, selection, per_suite = setup
    impact = select_changed(selection, catalog, ChangeSet("history", changes))
    kept = {f.path for f in impact.selection.files}
    suites = {
        name: (sum(e for p, e in files.items() if p in kept), sum(files.values()))
        for name, files in per_suite.items()
    }
    gone = any(c.status in (DELETED, RENAMED) for c in changes)
    dropped: dict[str, list[str]] = {}
    checked = 0
    if importers is not None:
        found = importers.importers(c.path for c in changes if c.status in (MODIFIED, ADDED))
        for path, tests in found.items():
            checked += len(tests)
            missing = sorted(tests - kept)
            if missing:
                dropped[path] = missing
    return {
        "suites": suites,
        "all": list(impact.run_everything),
        "gone": gone,
        "seconds": impact.seconds,
        "unbounded": impact.unbounded,
        "ignored": len(impact.ignored),
        "importers": checked,
        "dropped": dropped,
    }


def reason_class(reason: str) -> str:
    """The kind of a fail-open reason, for the summary."""
    if " was deleted" in reason or " was renamed" in reason:
        return "deleted or renamed (or not in the measured tree)"
    if "(run-everything" in reason:
        return "run-everything " + reason.split("(run-everything ")[1].split(" in the")[0]
    if "neither a Python file" in reason:
        return "other file (docs, data, config)"
    if reason.endswith(")"):
        return reason.rsplit("(", 1)[1].rstrip(")")
    return reason


def distribution(shares: list[float]) -> str:
    if not shares:
        return "no commits"
    ordered = sorted(shares)
    quantiles = statistics.quantiles(ordered, n=4) if len(ordered) > 1 else ordered * 3
    full = sum(1 for s in ordered if s >= 0.9999)
    none = sum(1 for s in ordered if s == 0)
    return (
        f"median {statistics.median(ordered):.0%}, quartiles {quantiles[0]:.0%}/"
        f"{quantiles[2]:.0%}, mean {statistics.fmean(ordered):.0%}; whole suite {full}, "
        f"nothing {none}, of {len(ordered)}"
    )


def history(args: argparse.Namespace) -> int:
    root = Path(args.root).resolve()
    setup = all_suites(root)
    commits = subprocess.run(
        ["git", "--git-dir", args.git, "rev-list", "--first-parent", args.rev]
        + ([f"--max-count={args.last}"] if args.last else []),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    importers = TestImports(Tree(root), [f.path for f in setup[1].files])
    rows, seconds = [], []
    for commit in commits:
        result = measure(root, commit_changes(args.git, commit, root), setup, importers)
        seconds.append(result["seconds"])
        rows.append({"commit": commit, **result})
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    per_suite: dict[str, list[float]] = defaultdict(list)
    weighted: list[float] = []
    for row in rows:
        kept = total = 0.0
        for name, (after, before) in row["suites"].items():
            if before:
                per_suite[name].append(after / before)
            kept, total = kept + after, total + before
        weighted.append(kept / total if total else 1.0)
    everything = sum(1 for row in rows if row["all"])
    print(f"{len(rows)} commits of {args.rev}; whole suite (fail open) in {everything}")
    print(f"all suites, est-weighted: {distribution(weighted)}")
    sizes = {name: before for name, (_a, before) in rows[0]["suites"].items()} if rows else {}
    shown = sorted(per_suite, key=lambda n: -sizes.get(n, 0))[: args.top]
    for name in [*args.report_suite, *(n for n in shown if n not in args.report_suite)]:
        print(f"  {name} (est {sizes.get(name, 0):.0f}s): {distribution(per_suite[name])}")
    unbounded = sum(1 for row in rows if not row["all"] and row["unbounded"])
    print(
        f"commits narrowed but keeping tests the analysis cannot bound: {unbounded}; "
        f"with ignored files: {sum(1 for row in rows if row['ignored'])}"
    )
    checked = sum(row["importers"] for row in rows)
    dropped = [row for row in rows if row["dropped"]]
    print(
        f"direct importers of a changed module (tools.direct_importers): {checked} checked, "
        f"{sum(len(t) for row in dropped for t in row['dropped'].values())} not kept, in "
        f"{len(dropped)} commit(s)"
    )
    for row in dropped:
        for path, tests in row["dropped"].items():
            print(f"  {row['commit'][:10]} {path}: {', '.join(tests)}")
    reasons: dict[str, int] = defaultdict(int)
    for row in rows:
        for reason in {reason_class(r) for r in row["all"]}:
            reasons[reason] += 1
    print("fail-open reasons (commits):", dict(sorted(reasons.items(), key=lambda kv: -kv[1])))
    present = [w for w, row in zip(weighted, rows, strict=True) if not row["gone"]]
    print(f"commits whose files all exist in the tree: {distribution(present)}")
    print(f"analysis per commit: median {statistics.median(seconds):.2f}s, max {max(seconds):.2f}s")
    return 0


def change(args: argparse.Namespace) -> int:
    root = Path(args.root).resolve()
    setup = all_suites(root)
    changes = tuple(Change(p, MODIFIED if (root / p).is_file() else DELETED) for p in args.paths)
    for attempt in ("first (cache as found)", "second (cache warm)"):
        started = time.perf_counter()
        catalog, selection, _ = setup
        impact = select_changed(selection, catalog, ChangeSet("change", changes))
        print(
            f"{attempt}: keeps {len(impact.selection.files)} of {len(selection.files)} "
            f"registered files in {time.perf_counter() - started:.2f}s "
            f"(parsed {impact.parsed} Python files)"
        )
    if impact.run_everything:
        print("whole suite:", impact.run_everything)
    for path, reason in impact.reasons.items():
        print(f"  {path}: {reason.text()}" if args.verbose else f"  {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.impact_savings")
    sub = parser.add_subparsers(dest="command", required=True)
    hist = sub.add_parser("history", help="the selected share over first-parent commits")
    hist.add_argument("--root", required=True, help="the tree to select in (holds a catalog)")
    hist.add_argument("--git", required=True, help="the git directory holding --rev")
    hist.add_argument("--rev", required=True)
    hist.add_argument("--last", type=int, default=0, help="only the last N commits")
    hist.add_argument("--top", type=int, default=8, help="suites shown, largest first")
    hist.add_argument(
        "--report-suite", action="append", default=[], help="a suite always shown (repeatable)"
    )
    hist.add_argument("--json", help="write every commit's figures here")
    one = sub.add_parser("change", help="the tests one change selects, and how long it takes")
    one.add_argument("--root", required=True)
    one.add_argument("--verbose", action="store_true", help="print each reason chain")
    one.add_argument("paths", nargs="+")
    args = parser.parse_args(argv)
    return history(args) if args.command == "history" else change(args)


if __name__ == "__main__":
    sys.exit(main())
