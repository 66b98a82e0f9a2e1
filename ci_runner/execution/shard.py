"""Run one shard: :func:`execute_shard`, the executor's entry point.

It runs each file of the shard in its own process session with a time limit, retries and GPU
slots as :class:`~ci_runner.execution.options.ExecutionOptions` say, and tells a
:class:`~ci_runner.execution.listener.ShardListener` (the reports) what happened. Its return value
is the process exit code: 0 all passed (or an empty shard), 1 test failures, 2 usage errors,
129/130/143 interrupted by SIGHUP/SIGINT/SIGTERM.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ci_runner.cli_errors import usage_error
from ci_runner.env import EnvVarError, check_boolean_environment
from ci_runner.execution import cuda_coredump, process_tree
from ci_runner.execution.dep_recording import DepRecorder, RecordingError
from ci_runner.execution.file_runner import RunSettings
from ci_runner.execution.gpu_slots import SlotError, SlotSet, resolve_slots, skip_reason
from ci_runner.execution.listener import ShardListener
from ci_runner.execution.options import ExecutionOptions
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


def execute_shard(
    files: Sequence[FileToRun],
    ctx: ShardContext,
    options: ExecutionOptions,
    listener: ShardListener,
) -> int:
    """Run the shard's ``files`` (longest first), tell ``listener``, return the exit code."""
    message = check_boolean_environment()
    if message:
        return usage_error(message, prog="run_suite")
    root = Path(ctx.root).resolve()
    cwd = (root / options.working_directory).resolve()
    if not cwd.is_dir():
        return usage_error(
            f"working-directory {options.working_directory!r} ([tool.ci-runner.execution]): "
            f"{cwd} is not a directory",
            prog="run_suite",
        )
    sequential = _one_file_at_a_time(ctx.hw, options)
    try:
        slots: SlotSet = sequential or resolve_slots(
            ctx.hw, options.gpus, options.gpu_ids, jobs=options.jobs
        )
    except SlotError as exc:
        return usage_error(exc, prog="run_suite")
    try:
        coredumps = cuda_coredump.prepare(options.cuda_coredump)
    except EnvVarError as exc:
        return usage_error(exc, prog="run_suite")
    except OSError as exc:
        return usage_error(f"cannot prepare the CUDA coredump directory: {exc}", prog="run_suite")
    if coredumps is not None and coredumps.kept:
        print(
            f"CUDA coredumps go to {coredumps.directory}; kept the environment's "
            f"{', '.join(coredumps.kept)}",
            flush=True,
        )
    try:
        recorder = DepRecorder(options.record_deps, root) if options.record_deps else None
    except RecordingError as exc:
        return usage_error(exc, prog="run_suite")
    if recorder is not None:
        at = (
            f"commit {recorder.commit}"
            if recorder.commit
            else "no commit (not a clean git checkout)"
        )
        print(f"recording dependencies into {options.record_deps} ({at})", flush=True)
    skipped = [
        placeholder(f.path, f.suite, f.est_time, SKIPPED, reason)
        for f in files
        if not sequential and (reason := skip_reason(f.gpus, f.all_gpus, f.gpus_from, slots))
    ]
    skipped_paths = {r.path for r in skipped}
    files = [f for f in files if f.path not in skipped_paths]
    info = RunInfo(
        hw=ctx.hw, suites=ctx.suites, nightly=ctx.nightly, shard_id=ctx.shard_id,
        shard_count=ctx.shard_count, plan_hash=ctx.plan_hash,
        predicted_makespan=ctx.predicted_makespan, shard_est_total=ctx.shard_est_total,
        lower_bound=ctx.lower_bound, slots=slots.describe(), mode=options.describe(),
        slot_count=len(slots.ids),
    )  # fmt: skip
    increase = options.retry_timeout_increase if options.retry.enabled else 0.0
    jobs = [
        Job(
            index=i, path=f.path, suite=f.suite, est_time=f.est_time,
            gpus=0 if sequential else f.gpus, all_gpus=f.all_gpus and not sequential,
            timeout=timeout_for(
                f.suite, f.est_time, flag_timeout=options.timeout_per_file,
                from_est=options.timeout_from_est_time, suite_timeouts=ctx.suite_timeouts,
                est_rule=options.est_timeout, retry_increase=increase,
            ),
            quarantined=f.quarantined, cases=f.cases,
        )
        for i, f in enumerate(files)
    ]  # fmt: skip
    start_results = [
        *(
            dataclasses.replace(
                placeholder(j.path, j.suite, j.est_time, NOT_RUN, "not started yet"),
                quarantined=j.quarantined,
            )
            for j in jobs
        ),
        *ctx.carried,
        *skipped,
        *(placeholder(d.path, d.suite, d.est_time, DISABLED, d.reason) for d in ctx.disabled),
    ]
    processes = process_tree.begin_shard(os.environ)  # ended by end_shard below
    info = replace(info, mode=f"{info.mode}; {processes}")
    outcome = ShardOutcome(info)
    try:
        with (
            tempfile.TemporaryDirectory(prefix="ci-runner-") as workdir,
            StopRequest() as stop,
        ):
            settings = RunSettings(
                root=root, workdir=Path(workdir),
                base_env={**os.environ, **(coredumps.variables if coredumps else {})},
                nightly=ctx.nightly, kill_grace_seconds=options.kill_grace_seconds,
                retry=options.retry, cwd=cwd, file_arguments=options.file_arguments,
                launcher=options.launcher, suite_launchers=ctx.suite_launchers,
                no_tests_fail=options.no_tests_fail,
                recorder=recorder,
            )  # fmt: skip
            try:
                listener.shard_started(info, start_results, len(jobs))
            except OSError as exc:
                return usage_error(f"cannot write a report file: {exc}", prog="run_suite")
            runner = ShardRunner(
                jobs, slots, settings, listener, stop, start_results,
                continue_on_error=options.continue_on_error, fail_on_flaky=options.fail_on_flaky,
                failure_exit_status=options.failure_exit_status,
                quarantine=options.quarantine,
            )  # fmt: skip
            run_jobs(runner, outcome)
            leftovers = process_tree.end_shard()
            if leftovers:
                print("\n".join(leftovers), flush=True)
            listener.shard_finished(outcome)
    finally:
        process_tree.end_shard()  # after an error too; a no-op once ended
    if coredumps is not None and outcome.exit_code != 0:
        lines = cuda_coredump.report_lines(coredumps)
        if lines:
            print("\n".join(lines), flush=True)
    return outcome.exit_code


def _one_file_at_a_time(hw: str, options: ExecutionOptions) -> SlotSet | None:
    """The single unpinned slot of ``one-file-at-a-time`` on cuda (every file sees every GPU,
    as with SGLang's runner), unless ``--gpus``/``--gpu-ids`` opt in to parallel slots."""
    if hw != "cuda" or not options.one_file_at_a_time:
        return None
    if options.gpus is not None or options.gpu_ids is not None:
        return None
    return SlotSet(("0",), False, "one file at a time: one-file-at-a-time = true")
