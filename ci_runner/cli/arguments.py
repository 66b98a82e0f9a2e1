"""The command line of ``run_suite.py``: its flags, their checks, and the options built from them.

:func:`build_parser` defines every flag; :func:`validate_arguments` checks the ones that select and
plan; :func:`shard_options` checks the execution and report flags and turns them, once, into the
:class:`~ci_runner.execution.options.ExecutionOptions` and
:class:`~ci_runner.reports.shard_reports.ReportOptions` the stages below the CLI read. Bad input
exits 2 through ``parser.error``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from ci_runner import __version__
from ci_runner.adoption.init_command import DESCRIPTION as INIT_DESCRIPTION
from ci_runner.adoption.init_command import add_init_arguments
from ci_runner.catalog.execution_settings import DEFAULT_EXECUTION_SETTINGS, ExecutionSettings
from ci_runner.catalog.limits import (
    MAX_ATTEMPTS,
    MAX_GPUS,
    MAX_JOBS,
    MAX_MINUTES,
    MAX_SECONDS,
    number_text,
)
from ci_runner.catalog.quarantine import QuarantineEntry
from ci_runner.cli_errors import (
    ExtendOnRepeat,
    JoinCommaLists,
    StoreOnce,
    number_type,
    whole_number_type,
)
from ci_runner.env import check_boolean_environment
from ci_runner.execution.gpu_slots import SlotError, parse_id_list
from ci_runner.execution.options import (
    DEFAULT_KILL_GRACE_SECONDS,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_RETRY_WAIT_SECONDS,
    ExecutionOptions,
)
from ci_runner.execution.retry import RetryPolicy
from ci_runner.reports.shard_reports import ReportOptions

MAX_SHARDS = 4096


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser: selection, partitioning, output, then the execution flags."""
    parser = argparse.ArgumentParser(
        prog="run_suite.py",
        usage="%(prog)s --hw HW --suite SUITE [options]\n"
        "       %(prog)s init [--root DIR] [--registered-dir DIR] [--suite-template TEMPLATE] "
        "[--output PATH] [--update | --force]\n"
        "       %(prog)s partitions --workflow PATH [--partition-model-file PATH] "
        "[--full-parallel true|false] [--output-format json|gha]",
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
    from ci_runner.cli.partitions_command import DESCRIPTION as PARTITIONS_DESCRIPTION
    from ci_runner.cli.partitions_command import add_partitions_arguments

    add_partitions_arguments(
        commands.add_parser(
            "partitions",
            help="the shard counts of a workflow's stage suites, as its partition script "
            "prints them (run_suite.py partitions --help)",
            description=PARTITIONS_DESCRIPTION,
        )
    )
    parser.add_argument(
        "--root",
        action=StoreOnce,
        metavar="DIR",
        help="repository root (holds pyproject.toml with [tool.ci-runner]); "
        "default: the nearest such directory at or above the current one",
    )
    parser.add_argument(
        "--hw",
        action=StoreOnce,
        required=True,
        metavar="HW",
        help="backend whose registrations to select: amd, cpu, cuda, musa, npu, xpu, or one "
        "the catalog adds with extra-markers",
    )
    parser.add_argument(
        "--suite",
        action=JoinCommaLists,
        required=True,
        help="suite name, or a comma-separated list of suites (repeatable: the lists are joined)",
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
        "--auto-partition-id",
        action=StoreOnce,
        type=whole_number_type(),
        metavar="I",
        help="0-based shard to run (needs the size)",
    )
    parser.add_argument(
        "--auto-partition-size",
        action=StoreOnce,
        type=whole_number_type(),
        metavar="N",
        help="number of shards (needs the id)",
    )
    add_change_arguments(parser)
    add_rerun_arguments(parser)
    parser.add_argument(
        "--partition-model-file",
        action=StoreOnce,
        type=Path,
        metavar="PATH",
        help="with --auto-partition-*: pack shards with the measured seconds of this JSON file "
        '({"est": {suite: {path: seconds}}}, SGLang\'s model.json) instead of est_time; a '
        "missing file falls back to est_time with a notice",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the selection and the whole plan; run nothing"
    )
    parser.add_argument(
        "--format",
        action=StoreOnce,
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
        action=StoreOnce,
        type=_minutes,
        metavar="M",
        help="with --print-matrix: target minutes per shard (default: from the catalog)",
    )
    add_execution_arguments(parser)
    parser.add_argument(
        "--version", action="version", version=f"run-suite {__version__}", help="print the version"
    )
    return parser


def add_change_arguments(parser: argparse.ArgumentParser) -> None:
    """``--changed-since`` / ``--changed-files``: keep only the files a change can affect."""
    changed = parser.add_mutually_exclusive_group()
    changed.add_argument(
        "--changed-since",
        action=StoreOnce,
        metavar="REF",
        help="keep only the selected files that the changes of REF...HEAD (git diff) can "
        "affect; what cannot be attributed runs the whole suite",
    )
    changed.add_argument(
        "--changed-files",
        action=StoreOnce,
        metavar="PATH",
        help="like --changed-since, with the changed paths listed one a line in PATH "
        "(- for stdin), relative to the root",
    )
    parser.add_argument(
        "--deps-from",
        action=StoreOnce,
        type=Path,
        metavar="DIR",
        help="with --changed-since/--changed-files: decide each test with a valid record in "
        "this --record-deps directory (the merge base's) by what it ran, opened and built; "
        "the others by the static closure",
    )


def add_rerun_arguments(parser: argparse.ArgumentParser) -> None:
    """Run only some files or cases of the selection, or skip what a previous attempt passed."""
    rerun = parser.add_argument_group("running part of a selection again")
    rerun.add_argument(
        "--files",
        action=ExtendOnRepeat,
        nargs="+",
        metavar="PATH",
        help="run only these files of the selection (paths from the root); each must be one "
        "the selection runs; repeatable",
    )
    rerun.add_argument(
        "--tests",
        action=ExtendOnRepeat,
        nargs="+",
        metavar="FILE::CASE",
        help="run only these test cases (pytest node ids, e.g. registered/test_x.py::TestX::"
        "test_a[1]) of files the selection runs; repeatable; combines with --files",
    )
    rerun.add_argument(
        "--from-junit",
        action=StoreOnce,
        type=Path,
        metavar="REPORT",
        help="run again the files of a --junit-xml or merged JUnit report (or a directory of "
        "them) that the selection runs; with --failed-only only what did not pass",
    )
    rerun.add_argument(
        "--failed-only",
        action="store_true",
        help="with --from-junit: only the failed, timed-out and crashed cases (whole files where "
        "no case is named) and the files that never ran",
    )
    rerun.add_argument(
        "--resume-from",
        action=StoreOnce,
        type=Path,
        metavar="TIMINGS",
        help="the --timings-out file of a previous attempt of this shard: files that passed "
        "there are not run again (same plan hash and shard only; otherwise every file runs, "
        "with a notice)",
    )


def _check_rerun_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    picks = [
        flag
        for flag, value in (
            ("--files", args.files),
            ("--tests", args.tests),
            ("--from-junit", args.from_junit),
        )
        if value is not None
    ]
    if args.from_junit is not None and len(picks) > 1:
        parser.error(
            "--from-junit cannot be combined with --files or --tests: each names what to run"
        )
    if args.failed_only and args.from_junit is None:
        parser.error("--failed-only needs --from-junit REPORT")
    changed = args.changed_since is not None or args.changed_files is not None
    if picks and changed:
        parser.error(
            f"{picks[0]} cannot be combined with --changed-since or --changed-files: each picks "
            "the files to run"
        )
    if args.resume_from is not None and (args.dry_run or args.print_matrix):
        parser.error(
            "--resume-from cannot be combined with --dry-run or --print-matrix: it decides what "
            "this shard runs"
        )


def validate_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Cross-flag checks; errors exit 2 through ``parser.error``."""
    if args.command in ("init", "partitions"):
        parser.error(
            f"{args.command} must be the first argument: run_suite.py {args.command} [--root DIR] ..."
        )
    shard_id, size = args.auto_partition_id, args.auto_partition_size
    if (shard_id is None) != (size is None):
        parser.error("--auto-partition-id and --auto-partition-size must be given together")
    if size is not None:
        if not 1 <= size <= MAX_SHARDS:
            parser.error(
                f"--auto-partition-size must be in [1, {MAX_SHARDS}], got {number_text(size)}"
            )
        if not 0 <= shard_id < size:
            parser.error(f"--auto-partition-id must be in [0, {size}), got {number_text(shard_id)}")
    if args.partition_model_file is not None and size is None:
        parser.error("--partition-model-file needs --auto-partition-id and --auto-partition-size")
    if args.format == "json" and not args.dry_run:
        parser.error("--format json needs --dry-run")
    if args.print_matrix and (args.dry_run or size is not None):
        parser.error(
            "--print-matrix cannot be combined with --dry-run or --auto-partition-*: "
            "it sizes the shards itself"
        )
    if args.matrix_target_minutes is not None and not args.print_matrix:
        parser.error("--matrix-target-minutes needs --print-matrix")
    _check_rerun_arguments(parser, args)
    if args.deps_from is not None and args.changed_since is None and args.changed_files is None:
        parser.error("--deps-from needs --changed-since or --changed-files")
    if args.record_deps is not None and (args.dry_run or args.print_matrix):
        parser.error("--record-deps needs a real run (not --dry-run or --print-matrix)")


def _seconds(minimum_exclusive: bool) -> Callable[[str], float]:
    return number_type("seconds", MAX_SECONDS, minimum_exclusive)


_minutes = number_type("minutes", MAX_MINUTES, minimum_exclusive=True)


def add_execution_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the flags that control how files run and what is reported."""
    run = parser.add_argument_group("execution")
    run.add_argument(
        "--continue-on-error",
        action="store_true",
        help="run every file even after a failure (default: start no file after the first "
        "failure; the rest are reported as not_run)",
    )
    run.add_argument(
        "--timeout-per-file",
        action=StoreOnce,
        type=_seconds(True),
        metavar="S",
        help="time limit per file attempt (default: the suite's timeout-per-file, else 1200); "
        "with --timeout-from-est-time it is the cap",
    )
    run.add_argument(
        "--timeout-from-est-time",
        action="store_true",
        help="derive each file's limit from est_time: min(max(3*est+60, 60), cap), cap = "
        '--timeout-per-file or 3600; with the catalog\'s est-timeout = "sglang": '
        "max(1.5*est, est+1800), no cap",
    )
    run.add_argument(
        "--kill-grace-seconds",
        action=StoreOnce,
        type=_seconds(False),
        default=DEFAULT_KILL_GRACE_SECONDS,
        metavar="S",
        help="seconds between SIGTERM and SIGKILL when a file's processes are stopped "
        f"(default {DEFAULT_KILL_GRACE_SECONDS:g})",
    )
    retry = parser.add_argument_group("retries")
    retry.add_argument(
        "--enable-retry", action="store_true", help="retry failed files that can be flaky"
    )
    retry.add_argument(
        "--max-attempts",
        action=StoreOnce,
        type=whole_number_type(1, MAX_ATTEMPTS),
        metavar="N",
        help=f"attempts per file including the first (default {DEFAULT_MAX_ATTEMPTS}; "
        "needs --enable-retry)",
    )
    retry.add_argument(
        "--retry-wait-seconds",
        action=StoreOnce,
        type=_seconds(False),
        metavar="S",
        help="pause before a retry (default: the catalog's retry-wait-seconds, else "
        f"{DEFAULT_RETRY_WAIT_SECONDS:g}; needs --enable-retry)",
    )
    retry.add_argument(
        "--retry-timeout-increase",
        action=StoreOnce,
        type=_seconds(False),
        metavar="S",
        help="seconds added to every attempt's flat time limit (not with "
        "--timeout-from-est-time) (default: the catalog's retry-timeout-increase, else 0; "
        "needs --enable-retry)",
    )
    retry.add_argument(
        "--retry-timeouts",
        action="store_true",
        help="also retry files that timed out (default: the catalog's retry-timeouts; needs "
        "--enable-retry)",
    )
    retry.add_argument(
        "--retry-budget-seconds",
        action=StoreOnce,
        type=_seconds(False),
        metavar="S",
        help="stop retrying once retries (attempts after the first, and waits) have used S "
        "seconds of this shard (default: no cap; needs --enable-retry)",
    )
    retry.add_argument(
        "--fail-on-flaky",
        action="store_true",
        help="a file that passed only on a retry fails the run (exit 1)",
    )
    slots = parser.add_argument_group("slots: files at a time")
    exclusive = slots.add_mutually_exclusive_group()
    exclusive.add_argument(
        "--gpus",
        action=StoreOnce,
        type=whole_number_type(1, MAX_GPUS),
        metavar="N",
        help="run on N GPU slots (ids: the first N of CUDA_VISIBLE_DEVICES, else 0..N-1); "
        "default for --hw cuda: every visible GPU; otherwise 1 slot (one file at a time)",
    )
    exclusive.add_argument(
        "--gpu-ids",
        action=StoreOnce,
        metavar="IDS",
        help="run on these GPU ids, comma-separated (e.g. 0,1,2,3)",
    )
    exclusive.add_argument(
        "--jobs",
        action=StoreOnce,
        type=whole_number_type(1, MAX_JOBS),
        metavar="N",
        help="a backend other than cuda: run N files at a time, each in its own process tree "
        "(default: 1); for --hw cuda use --gpus or --gpu-ids",
    )
    run.add_argument(
        "--record-deps",
        action=StoreOnce,
        type=Path,
        metavar="DIR",
        help="record what each file runs (functions, opened files, JIT modules) into DIR, "
        "for a later --deps-from (needs coverage.py)",
    )
    out = parser.add_argument_group("reports")
    out.add_argument(
        "--junit-xml",
        action=StoreOnce,
        type=Path,
        metavar="PATH",
        help="write a JUnit XML report (after every file)",
    )
    out.add_argument(
        "--timings-out",
        action=StoreOnce,
        type=Path,
        metavar="PATH",
        help="write per-file timings as JSON lines (after every file)",
    )
    out.add_argument(
        "--quiet",
        action="store_true",
        help="do not stream the running files' output to the console; print it after a file "
        "ends, for failing, flaky and no-test files only (start lines and heartbeats stay)",
    )
    out.add_argument(
        "--show-output",
        action="store_true",
        help="with --quiet: print the output of passing files too, after each ends (without "
        "--quiet every file's output is streamed anyway)",
    )


def shard_options(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    settings: ExecutionSettings = DEFAULT_EXECUTION_SETTINGS,
    quarantine: tuple[QuarantineEntry, ...] = (),
) -> tuple[ExecutionOptions, ReportOptions]:
    """Check the execution and report flags (and the boolean environment variables) and build
    the options of the run from them and the catalog's ``settings`` (a flag wins over the
    table); bad input exits 2 through ``parser.error``."""
    if not args.enable_retry:
        given = [
            flag
            for flag, value in (
                ("--max-attempts", args.max_attempts),
                ("--retry-wait-seconds", args.retry_wait_seconds),
                ("--retry-budget-seconds", args.retry_budget_seconds),
                ("--retry-timeout-increase", args.retry_timeout_increase),
                ("--retry-timeouts", args.retry_timeouts or None),
            )
            if value is not None
        ]
        if given:
            parser.error(f"{', '.join(given)} need(s) --enable-retry")
    gpu_ids = None
    if args.gpu_ids is not None:
        try:
            gpu_ids = parse_id_list(args.gpu_ids, "--gpu-ids")
        except SlotError as exc:
            parser.error(str(exc))
    if args.jobs is not None and args.hw == "cuda":
        parser.error(
            f"--jobs {args.jobs}: runs files side by side on a backend other than cuda; on "
            "--hw cuda files share GPU slots: use --gpus N or --gpu-ids"
        )
    message = check_boolean_environment()
    if message:
        parser.error(message)
    execution = ExecutionOptions(
        continue_on_error=args.continue_on_error,
        timeout_per_file=args.timeout_per_file,
        timeout_from_est_time=args.timeout_from_est_time,
        est_timeout=settings.est_timeout,
        retry_timeout_increase=_given(args.retry_timeout_increase, settings.retry_timeout_increase),
        kill_grace_seconds=args.kill_grace_seconds,
        retry=_retry_policy(args, settings),
        fail_on_flaky=args.fail_on_flaky,
        gpus=args.gpus,
        gpu_ids=gpu_ids,
        jobs=args.jobs or 1,
        one_file_at_a_time=settings.one_file_at_a_time,
        working_directory=settings.working_directory,
        file_arguments=settings.file_arguments,
        cuda_coredump=settings.cuda_coredump,
        launcher=settings.launcher,
        failure_exit_status=settings.failure_exit_status,
        quarantine=quarantine,
        record_deps=args.record_deps,
    )
    reports = ReportOptions.from_environment(
        args.junit_xml,
        args.timings_out,
        args.show_output,
        timings_block=settings.timings_block,
        live=not args.quiet,
        timings_stream=settings.timings_stream,
    )
    problems = reports.destination_problems()
    if problems:
        parser.error("; ".join(problems))
    return execution, reports


def _given(flag: float | None, table: float) -> float:
    return table if flag is None else flag


def _retry_policy(args: argparse.Namespace, settings: ExecutionSettings) -> RetryPolicy:
    if not args.enable_retry:
        return RetryPolicy()
    return RetryPolicy(
        enabled=True,
        max_attempts=args.max_attempts or DEFAULT_MAX_ATTEMPTS,
        wait_seconds=_given(args.retry_wait_seconds, settings.retry_wait_seconds),
        retry_timeouts=args.retry_timeouts or settings.retry_timeouts,
        budget_seconds=args.retry_budget_seconds,
        retry_on=settings.retry_on,
    )
