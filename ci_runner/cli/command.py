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
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ci_runner.catalog import Catalog, CatalogError, find_root, load_catalog
from ci_runner.catalog.node_ids import NodeIdError
from ci_runner.catalog.suites import PLAN_UPSTREAM
from ci_runner.cli.arguments import build_parser, shard_options, validate_arguments
from ci_runner.cli_errors import robust_output, usage_error
from ci_runner.collect import collect
from ci_runner.collect.scope import split_by_scope
from ci_runner.env import EnvVarError
from ci_runner.exit_codes import EXIT_OK, EXIT_USAGE
from ci_runner.impact.changes import ChangeInputError
from ci_runner.impact.record_format import RecordError
from ci_runner.maintenance.registration_lints import discover_packages, package_offenders
from ci_runner.model import (
    FileResult,
    FileToRun,
    Problem,
    Registration,
    ShardContext,
    shard_label,
)
from ci_runner.plan.live_estimates import LiveEstimateError, load_live_estimates
from ci_runner.plan.matrix import build_matrix
from ci_runner.plan.packing import Plan, plan, upstream_plan
from ci_runner.plan.report import dry_run_document, plan_lines, selection_lines
from ci_runner.plan.resume import ResumeError, load_resume
from ci_runner.reports.github import GitHubContext
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
from ci_runner.select.subset import (
    RunRequest,
    RunRequestError,
    files_request,
    merge_requests,
    narrow,
    tests_request,
)

if TYPE_CHECKING:
    from ci_runner.impact.selection import ChangeImpact


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``run_suite.py`` and the ``run-suite`` console script."""
    robust_output()
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["init"]:
        from ci_runner.adoption.init_command import main as init_main  # only init needs it

        return init_main(arguments[1:])
    if arguments[:1] == ["partitions"]:
        from ci_runner.cli.partitions_command import main as partitions_main

        return partitions_main(arguments[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(arguments)
        validate_arguments(parser, args)
        shard_options(parser, args)  # every flag checked before the catalog is read
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return _run(parser, args)
    except (
        CatalogError,
        EnvVarError,
        LiveEstimateError,
        NodeIdError,
        RunRequestError,
        ResumeError,
    ) as exc:
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
        enforced = catalog.enforced_rules()  # but those the repository's own runner enforces

        def blocks(problem: Problem) -> bool:
            return not problem.lint or problem.rule in enforced

        blocking, lints = [p for p in problems if blocks(p)], [p for p in problems if not blocks(p)]
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
    execution, reports = shard_options(parser, args, catalog.execution, catalog.quarantine)
    # A file that ran no test fails the run under the strict policy; the compatible one
    # (strict-checks = "warning") keeps the file's exit status and flags it.
    execution = replace(execution, no_tests_fail=not catalog.policy.strict_checks_warn)
    reports = replace(reports, github=GitHubContext.from_environment(catalog.root))
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
    for warning in request.warnings:
        print(warning, file=sys.stderr)
    selection = select_files(collection.registrations, catalog, request, args.allow_empty)
    notice = empty_notice(selection) if catalog.policy.empty_is_notice else None
    if notice:
        print(notice, file=sys.stderr)
        append_notice(reports.step_summary, notice)
    impact = _change_impact(args, catalog, selection)
    if impact is not None:
        selection = impact.selection
    selection = _narrow(args, catalog, selection, collection.registrations, reports.step_summary)
    if args.print_matrix:
        try:
            matrix = build_matrix(
                list(selection.files),
                list(selection.suites),
                args.matrix_target_minutes,
                rule=catalog.partitions,
                runner_required=catalog.rules is None,
            )
        except ValueError as exc:  # MatrixError: a suite cannot be sharded
            return usage_error(exc)
        print(json.dumps(matrix))
        return EXIT_OK
    shard_count = args.auto_partition_size or 1
    shard_id = args.auto_partition_id or 0
    planner = upstream_plan if catalog.plan == PLAN_UPSTREAM else plan
    the_plan = planner(_packing_estimates(args, selection), shard_count)
    if args.dry_run:
        return _dry_run(args, catalog, selection, the_plan, impact)
    files = _shard_files(selection, the_plan, shard_id)
    carried: tuple[FileResult, ...] = ()
    resume_notice: list[str] = []
    if args.resume_from is not None:  # read before anything is printed: a bad file is exit 2
        resume = load_resume(
            args.resume_from,
            the_plan.plan_hash,
            shard_label(shard_id, the_plan.shard_count),
            files,
            execution.fail_on_flaky,
        )
        resume_notice = [f"notice: {one_line(resume.notice)}"]
        carried = resume.carried
        skip = {r.path for r in carried}
        files = [f for f in files if f.path not in skip]
    impact_text = _impact_summary(impact)  # --dry-run prints why each file is kept
    print(
        "\n".join(
            [
                *selection_lines(selection),
                *impact_text,
                *plan_lines(the_plan, selection, [shard_id]),
                *resume_notice,
            ]
        )
    )
    sys.stdout.flush()
    from ci_runner.execution import execute_shard  # psutil, junitparser: only to run files
    from ci_runner.reports import ShardReports

    return execute_shard(
        files,
        _context(catalog, selection, the_plan, shard_id, carried),
        execution,
        ShardReports(reports),
    )


def _run_request(args: argparse.Namespace, root: Path) -> RunRequest | None:
    """What ``--files``, ``--tests`` or ``--from-junit`` ask to run (None: the whole selection)."""
    if args.from_junit is not None:
        from ci_runner.maintenance.rerun_report import junit_request  # junitparser: only here

        return junit_request(args.from_junit, args.failed_only)
    cwd = Path.cwd()
    requests = []
    if args.files is not None:
        requests.append(files_request(args.files, root, cwd))
    if args.tests is not None:
        requests.append(tests_request(args.tests, root, cwd))
    return merge_requests(requests)


def _narrow(
    args: argparse.Namespace,
    catalog: Catalog,
    selection: Selection,
    registrations: list[Registration],
    step_summary: Path | None,
) -> Selection:
    """The selection narrowed to what ``--files``/``--tests``/``--from-junit`` name; notices
    (files of the report left out, nothing left to run) go to stderr and the step summary."""
    request = _run_request(args, catalog.root)
    if request is None:
        return selection
    narrowed, notices = narrow(selection, request, registrations)
    if not narrowed.files:
        notices.append(f"{request.origin}: nothing to run in the selection; exit 0")
    for notice in notices:
        print(f"notice: {one_line(notice)}", file=sys.stderr)
        append_notice(step_summary, f"notice: {notice}")
    return narrowed


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
    if args.changed_since is None and args.changed_files is None:
        return None
    from ci_runner.impact.changes import changes_from_list, changes_since  # only when asked for
    from ci_runner.impact.fewer_collections import fewer_collections
    from ci_runner.impact.selection import select_changed

    if args.changed_since is not None:
        change_set = changes_since(catalog.root, args.changed_since)
    else:
        change_set = changes_from_list(catalog.root, args.changed_files)
    with fewer_collections():
        if args.deps_from is not None:
            from ci_runner.impact.record_format import read_records
            from ci_runner.impact.recorded import select_with_records

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
        document["change_impact"] = None
        if impact is not None:
            from ci_runner.impact.report import impact_document

            document["change_impact"] = impact_document(impact)
        document["warnings"] = [
            {"path": w.path, "line": w.line, "col": w.col, "message": w.message} for w in warnings
        ]
        print(json.dumps(document, indent=2))
    else:
        lines = selection_lines(selection)
        lines += _impact_lines(impact)
        lines += plan_lines(the_plan, selection, list(range(the_plan.shard_count)))
        lines += [f"warning: {one_line(str(w))}" for w in warnings]
        print("\n".join([*lines, "dry run: nothing was run"]))
    return EXIT_OK


def _shard_files(selection: Selection, the_plan: Plan, shard_id: int) -> list[FileToRun]:
    by_path = {f.path: f for f in selection.files}
    return [by_path[path] for path in the_plan.shards[shard_id]]


def _context(
    catalog: Catalog,
    selection: Selection,
    the_plan: Plan,
    shard_id: int,
    carried: tuple[FileResult, ...] = (),
) -> ShardContext:
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
        suite_launchers={s.name: s.launcher for s in selection.suites if s.launcher},
        carried=carried,
    )


def _impact_summary(impact: ChangeImpact | None) -> list[str]:
    """A real run shows the selection in one line; the reasons are the dry run's."""
    if impact is None:
        return []
    from ci_runner.impact.report import impact_summary

    return [impact_summary(impact)]


def _impact_lines(impact: ChangeImpact | None) -> list[str]:
    if impact is None:
        return []
    from ci_runner.impact.report import impact_lines

    return impact_lines(impact)
