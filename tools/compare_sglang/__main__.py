"""``python -m tools.compare_sglang CHECKOUT``: upstream's selection vs ours, case by case.

Exit 0 when every case is identical, 1 when some differ, 2 on a usage or setup error.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from tools.compare_sglang.comparison import OursSetup, run_comparison
from tools.compare_sglang.ours import DEFAULT_RUNNER
from tools.compare_sglang.report import summary_lines, to_json
from tools.compare_sglang.staging import StagingError
from tools.compare_sglang.upstream import UpstreamError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tools.compare_sglang",
        description="Run SGLang's own test/run_suite.py selection and ours (init, then a dry run "
        "per case) on a copy of an SGLang checkout, for every case upstream knows, and compare.",
    )
    parser.add_argument("checkout", type=Path, help="an SGLang checkout (only read)")
    parser.add_argument("--json", metavar="OUT", type=Path, help="write every case's result here")
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="our dry runs in parallel (default: CPU count)",
    )
    parser.add_argument(
        "--every-shard",
        action="store_true",
        help="run ours once per shard of a sharded case and check every run plans alike "
        "(default: one run per case; its JSON holds the whole plan)",
    )
    parser.add_argument(
        "--ours-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra argument for every dry run of ours, e.g. --ours-arg=--scoped-validation",
    )
    parser.add_argument(
        "--only",
        metavar="GLOB",
        help="only cases whose 'hw:suite' matches this glob, e.g. 'cpu:*'",
    )
    parser.add_argument(
        "--runner",
        type=Path,
        default=DEFAULT_RUNNER,
        help=f"our run_suite.py (default: {DEFAULT_RUNNER})",
    )
    parser.add_argument("--keep", action="store_true", help="keep the staged copy (path printed)")
    parser.add_argument(
        "--subprocess",
        action="store_true",
        help="run every dry run of ours as its own run_suite.py process (slow; default: in this "
        "process, the tree collected once)",
    )
    parser.add_argument(
        "--cli-sample",
        type=int,
        default=10,
        metavar="N",
        help="also run N evenly spread cases through the real CLI and check they equal the "
        "in-process runs (default: 10; 0 = none)",
    )
    parser.add_argument(
        "--catalog",
        type=Path,
        metavar="FILE",
        help="use this catalog (ci-runner.toml or pyproject.toml, e.g. one init wrote at an older "
        "commit) instead of running init on the staged tree",
    )
    parser.add_argument(
        "--update",
        action="store_true",
        help="with --catalog: run init --update on it first",
    )
    parser.add_argument(
        "--upstream-plan",
        action="store_true",
        help='set plan = "upstream" in our catalog and require every shard to hold upstream\'s '
        "files in upstream's order",
    )
    parser.add_argument(
        "--skip-partitions",
        action="store_true",
        help="do not compare run_suite.py partitions with compute_partitions.py (it reads the "
        "tree once per workflow and variant on each side)",
    )
    parser.add_argument(
        "--overlay",
        type=Path,
        metavar="DIR",
        help="copy DIR's files onto the staged tree before both sides run (e.g. a test file "
        "registering a brand-new suite name)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    if not args.runner.is_file():
        parser.error(f"--runner {args.runner}: no such file")
    if args.update and args.catalog is None:
        parser.error("--update needs --catalog FILE")
    if args.catalog is not None and not args.catalog.is_file():
        parser.error(f"--catalog {args.catalog}: no such file")
    if args.overlay is not None and not args.overlay.is_dir():
        parser.error(f"--overlay {args.overlay}: not a directory")
    only = None
    if args.only:
        only = lambda case: fnmatch.fnmatchcase(f"{case.hw}:{case.suite}", args.only)  # noqa: E731

    def progress(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    try:
        report = run_comparison(
            args.checkout,
            args.runner,
            args.jobs,
            every_shard=args.every_shard,
            extra=tuple(args.ours_arg),
            only=only,
            progress=progress,
            keep=args.keep,
            subprocesses=args.subprocess,
            cli_sample=args.cli_sample,
            setup=OursSetup(
                args.catalog,
                args.update,
                args.upstream_plan,
                args.overlay,
                not args.skip_partitions,
            ),
        )
    except (StagingError, UpstreamError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(summary_lines(report)))
    if args.json:
        args.json.write_text(json.dumps(to_json(report), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    if not all(check.equal for check in report.partitions.checks):
        return 1
    if report.cli_mismatches:
        print(f"in-process runs differ from the CLI in: {', '.join(report.cli_mismatches)}")
        return 1
    return 0 if all(o.identical for o in report.outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
