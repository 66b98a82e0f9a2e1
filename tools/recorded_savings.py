"""What one recording saves over the commits that follow it, on a real repository's history.

Run from the repo root (results: docs/change-impact.md)::

    python -m tools.recorded_savings --root /tmp/sglrec --records /tmp/sglrec-deps \\
        --hw cpu --suite base-a-test-cpu --commits 30

``--root`` is a scratch clone whose ``HEAD`` is the recorded commit (the commit of
``--records``' ``record.json``, holding the catalog). For each of the next ``--commits``
first-parent commits of ``--rev`` after it, the tree is checked out at that commit, the
recorded commit's ``--catalog`` file is written back where the commit lacks it (a catalog
committed for the measurement only), and ``run_suite.py --dry-run --format json
--changed-files`` selects with the commit's own changed paths (against its first parent),
once statically and once with ``--deps-from``: the workflow of a record made once (a nightly
run) and used by every change until the next one. A test whose inputs the tree changed since
the recorded commit has a stale record, and its static closure decides it, so the saving shrinks
with the distance. The clone is put back on the recorded commit at the end.

``--rebase`` measures the workflow that records every commit of the main line (a main-push
recording: each change's merge base has a record): each commit's own change is applied to the
recorded commit (``git cherry-pick --no-commit``; a commit whose change does not apply there
is listed and skipped), so the record is exactly one change behind, as a fresh one would be.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

RUN_SUITE = Path(__file__).resolve().parents[1] / "run_suite.py"


def git(root: Path, *args: str) -> str:
    """``git -C root args``' standard output; a failure raises with git's message."""
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True
    ).stdout


def later_commits(root: Path, base: str, rev: str, count: int) -> list[str]:
    """The first ``count`` first-parent commits of ``rev`` after ``base``, oldest first."""
    listed = git(root, "rev-list", "--first-parent", "--reverse", f"{base}..{rev}").split()
    return listed[:count]


def rebased(root: Path, recorded: str, commit: str) -> bool:
    """The recorded commit with ``commit``'s own change applied, uncommitted (``--rebase``);
    False where it does not apply cleanly."""
    git(root, "reset", "-q", "--hard")
    git(root, "checkout", "-q", "--detach", recorded)
    merge = len(git(root, "rev-list", "--parents", "-n", "1", commit).split()) > 2
    applied = subprocess.run(
        ["git", "-C", str(root), "cherry-pick", "--no-commit", *(["-m", "1"] if merge else []),
         commit],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if applied.returncode != 0:
        subprocess.run(["git", "-C", str(root), "cherry-pick", "--abort"], capture_output=True)
        git(root, "reset", "-q", "--hard")
        return False
    return True


def changed_paths(root: Path, commit: str) -> list[str]:
    """Every path ``commit`` changes against its first parent (both sides of a rename)."""
    out = git(root, "diff", "--name-only", "--no-renames", f"{commit}^1", commit)
    return [line for line in out.splitlines() if line]


def select(python: str, root: Path, hw: str, suite: str, paths: list[str], deps: str | None):
    """The dry run's ``change_impact`` object, with its wall time added."""
    command = [python, str(RUN_SUITE), "--root", str(root), "--hw", hw, "--suite", suite]
    command += ["--dry-run", "--format", "json", "--changed-files", "-"]
    if deps:
        command += ["--deps-from", deps]
    done = subprocess.run(command, input="\n".join(paths) + "\n", capture_output=True, text=True)
    try:
        return json.loads(done.stdout)["change_impact"]
    except (ValueError, KeyError, TypeError):
        raise SystemExit(
            f"run_suite.py (exit {done.returncode}) gave no selection: {done.stderr[-2000:]}"
        ) from None


def recorded_commit(root: Path, records: Path) -> str:
    """The commit of ``records``, which must be ``root``'s ``HEAD``."""
    try:
        commit = json.loads((records / "record.json").read_text())["commit"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"--records {records}: no readable record.json ({exc})") from None
    head = git(root, "rev-parse", "HEAD").strip()
    if commit != head:
        raise SystemExit(f"--records {records} were made at {commit}; --root {root} is at {head}")
    return head


def measure(args: argparse.Namespace) -> list[dict]:
    """One row per commit: the static and the recorded selection's kept est share."""
    root = Path(args.root)
    recorded = recorded_commit(root, Path(args.records))
    listed = git(root, "ls-tree", "--name-only", recorded, "--", args.catalog).strip()
    catalog = git(root, "show", f"{recorded}:{args.catalog}") if listed else ""
    written = False
    rows = []
    try:
        for number, commit in enumerate(later_commits(root, recorded, args.rev, args.commits), 1):
            if written:
                (root / args.catalog).unlink(missing_ok=True)
            if args.rebase:
                if not rebased(root, recorded, commit):
                    print(f"{number:3d} {commit[:10]} does not apply to the recorded commit")
                    rows.append({"commit": commit[:10], "distance": number, "applies": False})
                    continue
            else:
                git(root, "checkout", "-q", "--detach", commit)
            written = bool(catalog) and not (root / args.catalog).exists()
            if written:
                (root / args.catalog).write_text(catalog)
            paths = changed_paths(root, commit)
            static = select(args.python, root, args.hw, args.suite, paths, None)
            deps = select(args.python, root, args.hw, args.suite, paths, args.records)
            row = {
                "commit": commit[:10],
                "distance": number,
                "changed": len(paths),
                "est_total": static["est_before"],
                "static": static["est_after"],
                "recorded": deps["est_after"],
                "files_static": static["files_after"],
                "files_recorded": deps["files_after"],
                "runs_everything": static["runs_everything"],
                "reasons": static["run_everything_reasons"][:3],
                "records": deps["records"],
                "kept_static": sorted(k["path"] for k in static["kept"]),
                "kept_recorded": sorted(k["path"] for k in deps["kept"]),
            }
            rows.append(row)
            print(
                f"{number:3d} {commit[:10]} {len(paths):4d} changed: static "
                f"{share(row['static'], row['est_total'])}, recorded "
                f"{share(row['recorded'], row['est_total'])} "
                f"({row['files_recorded']} of {deps['files_before']} files)",
                flush=True,
            )
    finally:
        if written:
            (root / args.catalog).unlink(missing_ok=True)
        git(root, "reset", "-q", "--hard")
        git(root, "checkout", "-q", "-f", args.branch)
    return rows


def share(part: float, whole: float) -> str:
    """``part`` of ``whole`` as a percentage."""
    return f"{100.0 * part / whole:.1f}%" if whole else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True, help="scratch clone at the recorded commit")
    parser.add_argument("--records", required=True, help="the --record-deps directory")
    parser.add_argument("--hw", required=True)
    parser.add_argument("--suite", required=True)
    parser.add_argument("--rev", default="origin/HEAD", help="the history to follow")
    parser.add_argument("--branch", default="rec", help="the clone's branch to return to")
    parser.add_argument("--commits", type=int, default=30)
    parser.add_argument(
        "--catalog", default="ci-runner.toml", help="written back where a commit lacks it"
    )
    parser.add_argument("--python", default=sys.executable, help="the runner's interpreter")
    parser.add_argument(
        "--rebase",
        action="store_true",
        help="apply each commit's own change to the recorded commit (a record of every merge "
        "base, as a main-push recording gives) instead of checking the commit out",
    )
    parser.add_argument("--json", help="write every commit's row here")
    args = parser.parse_args(argv)
    rows = measure(args)
    if args.json:
        Path(args.json).write_text("".join(json.dumps(row) + "\n" for row in rows))
    for mode in ("static", "recorded"):
        shares = [row[mode] / row["est_total"] for row in rows if row.get("est_total")]
        if shares:
            print(
                f"{mode}: median {100 * statistics.median(shares):.1f}%, "
                f"mean {100 * statistics.fmean(shares):.1f}% of est over {len(shares)} commits"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
