"""The executor's three entry points.

:func:`execute_shard` runs each file of the shard in its own process session with a time limit,
retries and GPU slots as the flags say, and writes the reports (console, JUnit XML, timings
JSONL, GitHub step summary). Its return value is the process exit code: 0 all passed (or an
empty shard), 1 test failures, 2 usage errors, 130/143 interrupted by SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ci_runner.cli_errors import usage_error
from ci_runner.env import (
    DISABLE_LOG_BANDWIDTH,
    IS_IN_CI,
    RUN_FULL_TESTS,
    EnvVarError,
    get_bool_env,
)
from ci_runner.execution.file_runner import RunSettings
from ci_runner.execution.gpu_slots import SlotError, SlotSet, resolve_slots, skip_reason
from ci_runner.execution.process_tree import set_child_subreaper
from ci_runner.execution.retry import RetryPolicy
from ci_runner.execution.shard_runner import Job, ShardRunner, run_jobs
from ci_runner.execution.signals import StopRequest
from ci_runner.execution.timeouts import timeout_for
from ci_runner.model import (
    DISABLED,
    NOT_RUN,
    SKIPPED,
    FileToRun,
    RunInfo,
    ShardContext,
    ShardOutcome,
    placeholder,
)
from ci_runner.reports import ConsoleReport, ShardReports
from ci_runner.reports.step_summary import STEP_SUMMARY_VARIABLE

GITHUB_ACTIONS = "GITHUB_ACTIONS"
# Boolean variables checked before anything runs: a typo is exit 2, not a silent default.
CHECKED_BOOLEAN_VARIABLES = (IS_IN_CI, RUN_FULL_TESTS, DISABLE_LOG_BANDWIDTH, GITHUB_ACTIONS)
DEFAULT_MAX_ATTEMPTS = 2
DEFAULT_RETRY_WAIT_SECONDS = 30.0
DEFAULT_KILL_GRACE_SECONDS = 5.0


def _seconds(minimum_exclusive: bool):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a number of seconds, got {text!r}"
            ) from None
        if value != value or value in (float("inf"), float("-inf")):
            raise argparse.ArgumentTypeError(f"expected a finite number of seconds, got {text!r}")
        if minimum_exclusive and value <= 0:
            raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
        if value < 0:
            raise argparse.ArgumentTypeError(f"expected seconds >= 0, got {text!r}")
        return value

    return parse


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {text!r}")
    return value


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
        type=_seconds(True),
        metavar="S",
        help="time limit per file attempt (default: the suite's timeout-per-file, else 1200); "
        "with --timeout-from-est-time it is the cap",
    )
    run.add_argument(
        "--timeout-from-est-time",
        action="store_true",
        help="derive each file's limit from est_time: min(max(3*est+60, 60), cap), cap = "
        "--timeout-per-file or 3600",
    )
    run.add_argument(
        "--kill-grace-seconds",
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
        type=_positive_int,
        metavar="N",
        help=f"attempts per file including the first (default {DEFAULT_MAX_ATTEMPTS}; "
        "needs --enable-retry)",
    )
    retry.add_argument(
        "--retry-wait-seconds",
        type=_seconds(False),
        metavar="S",
        help=f"pause before a retry (default {DEFAULT_RETRY_WAIT_SECONDS:g}; needs --enable-retry)",
    )
    retry.add_argument(
        "--retry-timeouts",
        action="store_true",
        help="also retry files that timed out (needs --enable-retry)",
    )
    retry.add_argument(
        "--retry-budget-seconds",
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
    gpus = parser.add_argument_group("GPU slots")
    exclusive = gpus.add_mutually_exclusive_group()
    exclusive.add_argument(
        "--gpus",
        type=_positive_int,
        metavar="N",
        help="run on N GPU slots (ids: the first N of CUDA_VISIBLE_DEVICES, else 0..N-1); "
        "default for --hw cuda: every visible GPU; otherwise 1 slot (one file at a time)",
    )
    exclusive.add_argument(
        "--gpu-ids", metavar="IDS", help="run on these GPU ids, comma-separated (e.g. 0,1,2,3)"
    )
    out = parser.add_argument_group("reports")
    out.add_argument(
        "--junit-xml", type=Path, metavar="PATH", help="write a JUnit XML report (after every file)"
    )
    out.add_argument(
        "--timings-out",
        type=Path,
        metavar="PATH",
        help="write per-file timings as JSON lines (after every file)",
    )
    out.add_argument(
        "--show-output",
        action="store_true",
        help="print the output of passing files too (default: only failing and flaky files)",
    )


def check_boolean_environment() -> str | None:
    """The error message for the first invalid boolean variable, or None."""
    for name in CHECKED_BOOLEAN_VARIABLES:
        try:
            get_bool_env(name)
        except EnvVarError as exc:
            return str(exc)
    return None


def validate_execution_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Reject inconsistent execution flags and invalid boolean variables (exit 2)."""
    if not args.enable_retry:
        given = [
            flag
            for flag, value in (
                ("--max-attempts", args.max_attempts),
                ("--retry-wait-seconds", args.retry_wait_seconds),
                ("--retry-budget-seconds", args.retry_budget_seconds),
                ("--retry-timeouts", args.retry_timeouts or None),
            )
            if value is not None
        ]
        if given:
            parser.error(f"{', '.join(given)} need(s) --enable-retry")
    for flag, path in (("--junit-xml", args.junit_xml), ("--timings-out", args.timings_out)):
        if path is not None and path.is_dir():
            parser.error(f"{flag} {path}: is a directory; expected a file path")
    if args.junit_xml is not None and args.junit_xml == args.timings_out:
        parser.error("--junit-xml and --timings-out must be different files")
    if args.gpu_ids is not None:
        try:
            resolve_slots("cuda", None, args.gpu_ids)
        except SlotError as exc:
            parser.error(str(exc))
    message = check_boolean_environment()
    if message:
        parser.error(message)


def _retry_policy(args: argparse.Namespace) -> RetryPolicy:
    if not args.enable_retry:
        return RetryPolicy()
    return RetryPolicy(
        enabled=True,
        max_attempts=args.max_attempts or DEFAULT_MAX_ATTEMPTS,
        wait_seconds=(
            DEFAULT_RETRY_WAIT_SECONDS
            if args.retry_wait_seconds is None
            else args.retry_wait_seconds
        ),
        retry_timeouts=args.retry_timeouts,
        budget_seconds=args.retry_budget_seconds,
    )


def _mode(args: argparse.Namespace, policy: RetryPolicy) -> str:
    parts = ["continue-on-error" if args.continue_on_error else "fail-fast"]
    if args.timeout_from_est_time:
        parts.append("timeout from est_time")
    elif args.timeout_per_file is not None:
        parts.append(f"timeout {args.timeout_per_file:g}s per file")
    else:
        parts.append("timeout from the suite catalog")
    if policy.enabled:
        parts.append(
            f"retry up to {policy.max_attempts} attempts"
            + (" (timeouts too)" if policy.retry_timeouts else "")
        )
    return ", ".join(parts)


def execute_shard(files: Sequence[FileToRun], ctx: ShardContext, args: argparse.Namespace) -> int:
    """Run the shard's ``files`` (longest first), write the reports, return the exit code."""
    message = check_boolean_environment()
    if message:
        return usage_error(message, prog="run_suite")
    try:
        slots: SlotSet = resolve_slots(ctx.hw, args.gpus, args.gpu_ids)
    except SlotError as exc:
        return usage_error(exc, prog="run_suite")
    skipped = [
        placeholder(f.path, f.suite, f.est_time, SKIPPED, reason)
        for f in files
        if (reason := skip_reason(f.gpus, f.all_gpus, f.gpus_from, slots))
    ]
    skipped_paths = {r.path for r in skipped}
    files = [f for f in files if f.path not in skipped_paths]
    policy = _retry_policy(args)
    nightly = bool(ctx.nightly or getattr(args, "nightly", False))
    info = RunInfo(
        hw=ctx.hw, suites=ctx.suites, nightly=nightly, shard_id=ctx.shard_id,
        shard_count=ctx.shard_count, plan_hash=ctx.plan_hash,
        predicted_makespan=ctx.predicted_makespan, shard_est_total=ctx.shard_est_total,
        lower_bound=ctx.lower_bound, slots=slots.describe(), mode=_mode(args, policy),
    )  # fmt: skip
    summary_path = os.environ.get(STEP_SUMMARY_VARIABLE, "").strip()
    reports = ShardReports(
        info,
        ConsoleReport(
            github_actions=get_bool_env(GITHUB_ACTIONS),
            show_output=getattr(args, "show_output", False),
        ),
        junit_path=args.junit_xml,
        timings_path=args.timings_out,
        step_summary_path=Path(summary_path) if summary_path else None,
    )
    jobs = [
        Job(
            index=i, path=f.path, suite=f.suite, est_time=f.est_time, gpus=f.gpus,
            all_gpus=f.all_gpus, timeout=timeout_for(
                f.suite, f.est_time, flag_timeout=args.timeout_per_file,
                from_est=args.timeout_from_est_time, suite_timeouts=ctx.suite_timeouts,
            ),
        )
        for i, f in enumerate(files)
    ]  # fmt: skip
    start_results = [
        *(placeholder(j.path, j.suite, j.est_time, NOT_RUN, "not started yet") for j in jobs),
        *skipped,
        *(placeholder(d.path, d.suite, d.est_time, DISABLED, d.reason) for d in ctx.disabled),
    ]
    outcome = ShardOutcome(info)
    previous_subreaper = set_child_subreaper(True)
    try:
        with (
            tempfile.TemporaryDirectory(prefix="ci-runner-") as workdir,
            StopRequest() as stop,
        ):
            settings = RunSettings(
                root=Path(ctx.root).resolve(), workdir=Path(workdir), base_env=dict(os.environ),
                nightly=nightly, kill_grace_seconds=args.kill_grace_seconds, retry=policy,
            )  # fmt: skip
            try:
                reports.start(start_results)
            except OSError as exc:
                return usage_error(f"cannot write a report file: {exc}", prog="run_suite")
            reports.console.header(info, len(jobs))
            reports.console.skipped(skipped)
            runner = ShardRunner(
                jobs, slots, settings, reports, stop,
                continue_on_error=args.continue_on_error, fail_on_flaky=args.fail_on_flaky,
            )  # fmt: skip
            run_jobs(runner, outcome)
            reports.finish(outcome)
    finally:
        set_child_subreaper(previous_subreaper)
    return outcome.exit_code
