"""``run_suite.py``: discover, validate, select, plan, then run (or print) one shard.

The pipeline, one stage per package: the catalog (:mod:`ci_runner.catalog`), discovery
(:mod:`ci_runner.collect`), selection (:mod:`ci_runner.select`), planning (:mod:`ci_runner.plan`),
execution (:mod:`ci_runner.execution`), with the reports (:mod:`ci_runner.reports`) connected to
the executor as its listener here. ``run_suite.py init`` instead writes a starting catalog for an
existing tree (:mod:`ci_runner.adoption.init_command`).

Exit codes: 0 success (an empty shard included), 1 test failures, 2 usage, catalog or
registration errors.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from ci_runner.catalog import Catalog, CatalogError, find_root, load_catalog
from ci_runner.cli.arguments import build_parser, shard_options, validate_arguments
from ci_runner.cli_errors import robust_output, usage_error
from ci_runner.collect import collect
from ci_runner.collect.scope import split_by_scope
from ci_runner.env import EnvVarError
from ci_runner.exit_codes import EXIT_OK, EXIT_USAGE
from ci_runner.impact import (
    ChangeImpact,
    ChangeInputError,
    ChangeSet,
    RecordError,
    changes_from_list,
    changes_since,
    impact_document,
    impact_lines,
    read_records,
    select_changed,
    select_with_records,
)
from ci_runner.maintenance.registration_lints import discover_packages, package_offenders
from ci_runner.model import FileToRun, Problem, ShardContext
from ci_runner.plan.live_estimates import LiveEstimateError, load_live_estimates
from ci_runner.plan.matrix import build_matrix
from ci_runner.plan.packing import Plan, plan
from ci_runner.plan.report import dry_run_document, plan_lines, selection_lines
from ci_runner.reports.step_summary import append_notice
from ci_runner.safe_text import one_line
from ci_runner.select import (
    Selection,
    SelectionError,
    SuiteRequest,
    empty_notice,
    request_from_text,
    select_files,
)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``run_suite.py`` and the ``run-suite`` console script."""
    robust_output()
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["init"]:
        from ci_runner.adoption.init_command import main as init_main  # only init needs it

        return init_main(arguments[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(arguments)
        validate_arguments(parser, args)
        shard_options(parser, args)  # every flag checked before the catalog is read
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return _run(parser, args)
    except (CatalogError, EnvVarError, LiveEstimateError) as exc:
        return usage_error(exc)
    except SelectionError as exc:
        return usage_error(*exc.messages)
    except (ChangeInputError, RecordError) as exc:
        return usage_error(exc)


def _load(args: argparse.Namespace) -> Catalog:
    root = Path(args.root).resolve() if args.root else find_root(Path.cwd())
    if args.root and not root.is_dir():
        raise CatalogError(f"--root {args.root}: not a directory")
    return load_catalog(root)


def _request(args: argparse.Namespace, catalog: Catalog) -> SuiteRequest:
    """``--hw``, ``--suite`` and ``--nightly``, parsed and resolved against the catalog."""
    return request_from_text(catalog, args.hw, args.suite, args.nightly)


def _report_problems(
    problems: list[Problem], catalog: Catalog, scoped: SuiteRequest | None
) -> bool:
    """Print registration problems; True when they must stop the run.

    ``scoped``: with --scoped-validation, the request whose suites decide what blocks.
    """
    blocking, warnings = problems, []
    if catalog.policy.strict_checks_warn:  # checks beyond selection only warn (the policy)
        blocking, lints = [p for p in problems if not p.lint], [p for p in problems if p.lint]
        for problem in lints:
            print(f"warning: {one_line(str(problem))}", file=sys.stderr)
    if scoped is not None:
        split = split_by_scope(blocking, catalog, scoped.suites)
        blocking, warnings = split.blocking, split.warnings
    for problem in warnings:
        print(f"warning: {one_line(str(problem))}", file=sys.stderr)
    if warnings:
        files = len({p.path for p in warnings})
        print(
            f"warning: {len(warnings)} registration problem(s) in {files} file(s) outside the "
            "selected suites; not blocking this run (--scoped-validation), but "
            "check-registered-tests still fails until they are fixed",
            file=sys.stderr,
        )
    for problem in blocking:
        print(one_line(str(problem)), file=sys.stderr)
    if blocking:
        files = len({p.path for p in blocking})
        scope = " that may belong to the selected suites" if scoped is not None else ""
        print(
            f"{len(blocking)} registration problem(s) in {files} file(s){scope}; nothing was run",
            file=sys.stderr,
        )
    return bool(blocking)


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    catalog = _load(args)
    execution, reports = shard_options(parser, args, catalog.execution)
    if args.hw not in catalog.syntax.backends:
        return usage_error(
            f"--hw {args.hw!r}: not a backend of this catalog; use one of "
            f"{', '.join(catalog.syntax.backends)} (a new backend needs "
            "[tool.ci-runner.extra-markers])"
        )
    collection = collect(catalog)
    # The request is resolved once: before the problems when it scopes them, else after.
    request = _request(args, catalog) if args.scoped_validation and collection.problems else None
    if _report_problems(collection.problems, catalog, request):
        return EXIT_USAGE
    request = request or _request(args, catalog)
    selection = select_files(collection.registrations, catalog, request, args.allow_empty)
    notice = empty_notice(selection) if catalog.policy.empty_is_notice else None
    if notice:
        print(notice, file=sys.stderr)
        append_notice(reports.step_summary, notice)
    impact = _change_impact(args, catalog, selection)
    if impact is not None:
        selection = impact.selection
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
    the_plan = plan(_packing_estimates(args, selection), shard_count)
    if args.dry_run:
        return _dry_run(args, catalog, selection, the_plan, impact)
    impact_text = impact_lines(impact) if impact is not None else []
    print(
        "\n".join(
            [
                *selection_lines(selection),
                *impact_text,
                *plan_lines(the_plan, selection, [shard_id]),
            ]
        )
    )
    sys.stdout.flush()
    from ci_runner.execution import execute_shard  # psutil, junitparser: only to run files
    from ci_runner.reports import ShardReports

    return execute_shard(
        _shard_files(selection, the_plan, shard_id),
        _context(catalog, selection, the_plan, shard_id),
        execution,
        ShardReports(reports),
    )


def _packing_estimates(args: argparse.Namespace, selection: Selection) -> list[tuple[str, float]]:
    """``(path, seconds)`` to pack: est_time, or the ``--partition-model-file`` measurements."""
    if args.partition_model_file is None:
        return [(f.path, f.est_time) for f in selection.files]
    live = load_live_estimates(args.partition_model_file, [s.name for s in selection.suites])
    print(live.notice, file=sys.stderr, flush=True)
    return [(f.path, live.seconds(f.suite, f.path, f.est_time)) for f in selection.files]


def _package_warnings(catalog: Catalog) -> list[Problem]:
    """Marker calls inside an importable package, which discovery never reads (the findings of
    ``check-no-registered-tests-in-package``)."""
    offenders = package_offenders(catalog.root, discover_packages(catalog.root), catalog.syntax)
    return [
        Problem(
            p.path,
            p.line,
            p.col,
            f"{p.message}, inside the package {p.path.split('/')[0]}/: run_suite.py never "
            f"collects it there; move the file under {catalog.registered_dir}/",
        )
        for p in offenders
        if not catalog.extra_dir_of(p.path)  # collected there, through extra-dirs
    ]


def _change_impact(
    args: argparse.Namespace, catalog: Catalog, selection: Selection
) -> ChangeImpact | None:
    """``--changed-since`` / ``--changed-files``: the part of the selection a change can affect
    (with ``--deps-from``, the records decide the tests they describe)."""
    change_set: ChangeSet
    if args.changed_since is not None:
        change_set = changes_since(catalog.root, args.changed_since)
    elif args.changed_files is not None:
        change_set = changes_from_list(catalog.root, args.changed_files)
    else:
        return None
    if args.deps_from is not None:
        records = read_records(args.deps_from)
        return select_with_records(selection, catalog, change_set, records)
    return select_changed(selection, catalog, change_set)


def _dry_run(
    args: argparse.Namespace,
    catalog: Catalog,
    selection: Selection,
    the_plan: Plan,
    impact: ChangeImpact | None,
) -> int:
    warnings = _package_warnings(catalog)
    if args.format == "json":
        document = dry_run_document(selection, the_plan, args.auto_partition_id)
        document["change_impact"] = impact_document(impact) if impact is not None else None
        document["warnings"] = [
            {"path": w.path, "line": w.line, "col": w.col, "message": w.message} for w in warnings
        ]
        print(json.dumps(document, indent=2))
    else:
        lines = selection_lines(selection)
        lines += impact_lines(impact) if impact is not None else []
        lines += plan_lines(the_plan, selection, list(range(the_plan.shard_count)))
        lines += [f"warning: {one_line(str(w))}" for w in warnings]
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
