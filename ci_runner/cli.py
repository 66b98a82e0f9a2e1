"""``run_suite.py``: discover, validate, select, plan, then run (or print) one shard.

``run_suite.py init`` instead writes a starting catalog for an existing tree
(:mod:`ci_runner.adoption.init_command`).

Exit codes: 0 success (an empty shard included), 1 test failures, 2 usage, catalog or
registration errors.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from ci_runner.adoption.init_command import DESCRIPTION as INIT_DESCRIPTION
from ci_runner.adoption.init_command import add_init_arguments
from ci_runner.adoption.init_command import main as init_main
from ci_runner.catalog import Catalog, CatalogError, find_root, load_catalog
from ci_runner.cli_errors import usage_error
from ci_runner.collect import collect
from ci_runner.collect.scope import split_by_scope
from ci_runner.env import EnvVarError
from ci_runner.execution.api import (
    add_execution_arguments,
    execute_shard,
    validate_execution_arguments,
)
from ci_runner.exit_codes import EXIT_OK, EXIT_USAGE
from ci_runner.model import FileToRun, Problem, ShardContext
from ci_runner.plan.matrix import build_matrix
from ci_runner.plan.packing import Plan, plan
from ci_runner.plan.report import dry_run_document, plan_lines, selection_lines
from ci_runner.select import (
    Selection,
    SelectionError,
    parse_suite_list,
    resolve_suites,
    select,
)

MAX_SHARDS = 4096


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser: selection, partitioning, output, then the execution flags."""
    parser = argparse.ArgumentParser(
        prog="run_suite.py",
        usage="%(prog)s --hw HW --suite SUITE [options]\n"
        "       %(prog)s init [--root DIR] [--registered-dir DIR] [--suite-template TEMPLATE] "
        "[--output PATH] [--force]",
        description="Run one shard of a CI suite of registered test files.",
    )
    commands = parser.add_subparsers(
        title="subcommands (give one as the first argument)", metavar="COMMAND", dest="command"
    )
    add_init_arguments(
        commands.add_parser(
            "init",
            help="adopt the runner in an existing repository: write a starting "
            "[tool.ci-runner] catalog from its registrations (run_suite.py init --help)",
            description=INIT_DESCRIPTION,
        )
    )
    parser.add_argument(
        "--root",
        metavar="DIR",
        help="repository root (holds pyproject.toml with [tool.ci-runner]); "
        "default: the nearest such directory at or above the current one",
    )
    parser.add_argument(
        "--hw",
        required=True,
        metavar="HW",
        help="backend whose registrations to select: amd, cpu, cuda, musa, npu, xpu, or one "
        "the catalog adds with extra-markers",
    )
    parser.add_argument(
        "--suite", required=True, help="suite name, or a comma-separated list of suites"
    )
    parser.add_argument(
        "--nightly", action="store_true", help="select nightly suites (registered nightly=True)"
    )
    parser.add_argument(
        "--allow-empty",
        action="store_true",
        help="a suite that selects no enabled file is not an error",
    )
    parser.add_argument(
        "--scoped-validation",
        action="store_true",
        help="fail only on registration problems in files that may belong to the selected "
        "suites; print the others as warnings (default: any problem in the tree fails)",
    )
    parser.add_argument(
        "--auto-partition-id", type=int, metavar="I", help="0-based shard to run (needs the size)"
    )
    parser.add_argument(
        "--auto-partition-size", type=int, metavar="N", help="number of shards (needs the id)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the selection and the whole plan; run nothing"
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="dry-run output format (json: one object on stdout)",
    )
    parser.add_argument(
        "--print-matrix",
        action="store_true",
        help="print the CI shard matrix for the selection as one JSON line; run nothing",
    )
    parser.add_argument(
        "--matrix-target-minutes",
        type=float,
        metavar="M",
        help="with --print-matrix: target minutes per shard (default: from the catalog)",
    )
    add_execution_arguments(parser)
    return parser


def validate_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Cross-flag checks; errors exit 2 through ``parser.error``."""
    if args.command == "init":
        parser.error("init must be the first argument: run_suite.py init [--root DIR] ...")
    shard_id, size = args.auto_partition_id, args.auto_partition_size
    if (shard_id is None) != (size is None):
        parser.error("--auto-partition-id and --auto-partition-size must be given together")
    if size is not None:
        if not 1 <= size <= MAX_SHARDS:
            parser.error(f"--auto-partition-size must be in [1, {MAX_SHARDS}], got {size}")
        if not 0 <= shard_id < size:
            parser.error(f"--auto-partition-id must be in [0, {size}), got {shard_id}")
    if args.format == "json" and not args.dry_run:
        parser.error("--format json needs --dry-run")
    if args.print_matrix and (args.dry_run or size is not None):
        parser.error(
            "--print-matrix cannot be combined with --dry-run or --auto-partition-*: "
            "it sizes the shards itself"
        )
    minutes = args.matrix_target_minutes
    if minutes is not None:
        if not args.print_matrix:
            parser.error("--matrix-target-minutes needs --print-matrix")
        if not minutes > 0 or minutes == float("inf"):
            parser.error(f"--matrix-target-minutes must be a positive number, got {minutes}")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``run_suite.py`` and the ``run-suite`` console script."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["init"]:
        return init_main(arguments[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(arguments)
        validate_arguments(parser, args)
        validate_execution_arguments(parser, args)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return _run(args)
    except (CatalogError, EnvVarError) as exc:
        return usage_error(exc)
    except SelectionError as exc:
        return usage_error(*exc.messages)


def _load(args: argparse.Namespace) -> Catalog:
    root = Path(args.root).resolve() if args.root else find_root(Path.cwd())
    if args.root and not root.is_dir():
        raise CatalogError(f"--root {args.root}: not a directory")
    return load_catalog(root)


def _report_problems(args: argparse.Namespace, catalog: Catalog, problems: list[Problem]) -> bool:
    """Print registration problems; True when they must stop the run (see --scoped-validation)."""
    blocking, warnings = problems, []
    if args.scoped_validation and problems:
        suites = resolve_suites(catalog, parse_suite_list(args.suite), args.hw, args.nightly)
        scoped = split_by_scope(problems, catalog, suites)
        blocking, warnings = scoped.blocking, scoped.warnings
    for problem in warnings:
        print(f"warning: {problem}", file=sys.stderr)
    if warnings:
        files = len({p.path for p in warnings})
        print(
            f"warning: {len(warnings)} registration problem(s) in {files} file(s) outside the "
            "selected suites; not blocking this run (--scoped-validation), but "
            "check_registered_tests.py still fails until they are fixed",
            file=sys.stderr,
        )
    for problem in blocking:
        print(problem, file=sys.stderr)
    if blocking:
        files = len({p.path for p in blocking})
        scope = " that may belong to the selected suites" if args.scoped_validation else ""
        print(
            f"{len(blocking)} registration problem(s) in {files} file(s){scope}; nothing was run",
            file=sys.stderr,
        )
    return bool(blocking)


def _run(args: argparse.Namespace) -> int:
    catalog = _load(args)
    if args.hw not in catalog.syntax.backends:
        return usage_error(
            f"--hw {args.hw!r}: not a backend of this catalog; use one of "
            f"{', '.join(catalog.syntax.backends)} (a new backend needs "
            "[tool.ci-runner.extra-markers])"
        )
    collection = collect(catalog)
    if _report_problems(args, catalog, collection.problems):
        return EXIT_USAGE
    selection = select(
        collection.registrations,
        catalog,
        hw=args.hw,
        suite_names=parse_suite_list(args.suite),
        nightly=args.nightly,
        allow_empty=args.allow_empty,
    )
    if args.print_matrix:
        try:
            matrix = build_matrix(
                list(selection.files), list(selection.suites), args.matrix_target_minutes
            )
        except ValueError as exc:  # MatrixError: a suite cannot be sharded
            return usage_error(exc)
        print(json.dumps(matrix))
        return EXIT_OK
    shard_count = args.auto_partition_size or 1
    shard_id = args.auto_partition_id or 0
    the_plan = plan([(f.path, f.est_time) for f in selection.files], shard_count)
    if args.dry_run:
        return _dry_run(args, selection, the_plan)
    print("\n".join([*selection_lines(selection), *plan_lines(the_plan, selection, [shard_id])]))
    sys.stdout.flush()
    return execute_shard(
        _shard_files(selection, the_plan, shard_id),
        _context(catalog, selection, the_plan, shard_id),
        args,
    )


def _dry_run(args: argparse.Namespace, selection: Selection, the_plan: Plan) -> int:
    if args.format == "json":
        print(json.dumps(dry_run_document(selection, the_plan, args.auto_partition_id), indent=2))
    else:
        lines = selection_lines(selection)
        lines += plan_lines(the_plan, selection, list(range(the_plan.shard_count)))
        print("\n".join([*lines, "dry run: nothing was run"]))
    return EXIT_OK


def _shard_files(selection: Selection, the_plan: Plan, shard_id: int) -> list[FileToRun]:
    by_path = {f.path: f for f in selection.files}
    return [by_path[path] for path in the_plan.shards[shard_id]]


def _context(catalog: Catalog, selection: Selection, the_plan: Plan, shard_id: int) -> ShardContext:
    return ShardContext(
        root=catalog.root,
        hw=selection.hw,
        suites=tuple(s.name for s in selection.suites),
        nightly=selection.nightly,
        shard_id=shard_id,
        shard_count=the_plan.shard_count,
        predicted_makespan=the_plan.makespan,
        shard_est_total=the_plan.shard_totals[shard_id],
        lower_bound=the_plan.lower_bound,
        plan_hash=the_plan.plan_hash,
        # Disabled files are reported once, by shard 0, so merged reports count them once.
        disabled=selection.disabled if shard_id == 0 else (),
        suite_timeouts={s.name: s.timeout_per_file for s in selection.suites},
    )
