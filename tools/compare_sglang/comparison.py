"""One comparison run: stage the checkout, enumerate the cases, run both runners, compare."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ci_runner.workflows.invocations import WorkflowScan, scan_workflows
from tools.compare_sglang import ours
from tools.compare_sglang.cases import Case, enumerate_cases
from tools.compare_sglang.compare import Outcome, compare, template
from tools.compare_sglang.partition_check import PartitionReport, check_partitions
from tools.compare_sglang.partitions import PartitionSizes
from tools.compare_sglang.staging import stage
from tools.compare_sglang.traits import upstream_traits
from tools.compare_sglang.upstream import Selection, Upstream

_PROBLEM_LINE = re.compile(r"^(?P<path>[^\s:]+\.py):(?P<line>\d+)(?::\d+)?: (?P<message>.*)$")


@dataclass
class Report:
    checkout: str
    commit: str
    outcomes: list[Outcome] = field(default_factory=list)
    workflows: WorkflowScan = field(default_factory=WorkflowScan)
    partition_sizes: dict[str, dict[str, int]] = field(default_factory=dict)
    partition_errors: dict[str, str] = field(default_factory=dict)
    tables: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    checked_backends: list[str] | None = None
    registrations: int = 0
    collected_files: int = 0
    traits: dict[str, list[str]] = field(default_factory=dict)
    init_rc: int = 0
    init_output: str = ""
    our_problems: list[dict] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    runs_of_ours: int = 0
    mode: str = "in-process"  # or "subprocess": how our dry runs ran
    cli_checked: int = 0  # cases also run through the real CLI (--cli-sample)
    cli_mismatches: list[str] = field(default_factory=list)  # cases where the two disagree
    catalog: str = "init"  # how our catalog was made: init, a given file, or it + init --update
    upstream_plan: bool = False  # plan = "upstream": shards compared file by file, in order
    partitions: PartitionReport = field(default_factory=PartitionReport)


@dataclass(frozen=True)
class OursSetup:
    """How our side gets its catalog: ``init`` (default), a given catalog file, that file then
    ``init --update``; and ``plan = "upstream"`` set in it."""

    catalog: Path | None = None
    update: bool = False
    upstream_plan: bool = False
    overlay: Path | None = None  # files copied onto the staged tree before both sides run
    partitions: bool = True  # also compare run_suite.py partitions with compute_partitions.py


def checkout_commit(checkout: Path) -> str:
    """The checkout's HEAD commit, when it is a git work tree."""
    done = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() if done.returncode == 0 else "unknown (not a git work tree)"


def our_problem_lines(stderr: str) -> list[dict]:
    """Our registration problems (distinct lines), grouped by message template, with examples."""
    groups: dict[str, list[str]] = {}
    for line in stderr.splitlines():
        match = _PROBLEM_LINE.match(line.strip())
        if match:
            key = template(match.group("message"))
            groups.setdefault(key, []).append(line.strip())
    return [
        {"message": key, "count": len(lines), "examples": lines[:3]}
        for key, lines in sorted(groups.items(), key=lambda item: -len(item[1]))
    ]


def run_comparison(
    checkout: Path,
    runner: Path,
    jobs: int,
    every_shard: bool = False,
    extra: tuple[str, ...] = (),
    only: Callable[[Case], bool] | None = None,
    progress: Callable[[str], None] = lambda _: None,
    keep: bool = False,
    subprocesses: bool = False,
    cli_sample: int = 0,
    setup: OursSetup = OursSetup(),
) -> Report:
    """``subprocesses``: every dry run of ours as its own ``run_suite.py`` process (slow);
    else in this process, with ``cli_sample`` evenly spread cases run both ways and compared."""
    report = Report(str(checkout), checkout_commit(checkout))
    report.mode = "subprocess" if subprocesses else "in-process"
    started = time.perf_counter()
    root = stage(checkout)
    try:
        if setup.overlay is not None:
            shutil.copytree(setup.overlay, root, dirs_exist_ok=True)
        report.seconds["stage"] = time.perf_counter() - started
        cases, selections, registrations = _upstream_side(report, root, only, progress)
        report.catalog, report.upstream_plan = _catalog(report, root, runner, setup)
        results = _ours_side(
            report, root, runner, cases, selections, jobs, every_shard, extra, progress
        )
        if setup.partitions:
            clock = time.perf_counter()
            report.partitions = check_partitions(
                root, runner, sorted(report.partition_sizes), registrations
            )
            report.seconds["partitions"] = time.perf_counter() - clock
        else:
            report.partitions = PartitionReport(skipped="--skip-partitions")
        if cli_sample and not subprocesses:
            _check_cli_sample(report, root, runner, results, cli_sample, extra, progress)
    finally:
        if keep:
            progress(f"staged copy kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    report.seconds["total"] = time.perf_counter() - started
    return report


Selections = dict[Case, list[Selection]]


def _catalog(report: Report, root: Path, runner: Path, setup: OursSetup) -> tuple[str, bool]:
    """Our catalog for the staged tree (see :class:`OursSetup`); init's output into ``report``."""
    if setup.catalog is None:
        report.init_rc, report.init_output = ours.run_init(runner, root)
        how = "init"
    else:
        shutil.copy2(setup.catalog, root / setup.catalog.name)
        how = f"given ({setup.catalog})"
        if setup.update:
            report.init_rc, report.init_output = ours.run_init(runner, root, "--update")
            how += " + init --update"
    if setup.upstream_plan:
        ours.set_catalog_key(root, "plan", "upstream")
    return how, setup.upstream_plan


def _upstream_side(
    report: Report, root: Path, only: Callable[[Case], bool] | None, progress: Callable[[str], None]
) -> tuple[dict[Case, list[str]], Selections, list]:
    """Upstream's figures into ``report``; the cases (with sources), upstream's selections and
    its registrations."""
    clock = time.perf_counter()
    upstream = Upstream(root)
    registrations = upstream.registrations()
    report.seconds["upstream collection"] = time.perf_counter() - clock
    report.registrations = len(registrations)
    collected = upstream.collected_paths()
    report.collected_files = len(collected)
    report.tables = upstream.tables()
    report.checked_backends = upstream.checked_backends()
    clock = time.perf_counter()
    sizes = PartitionSizes(root)
    report.workflows = scan_workflows(root, sizes)
    report.partition_sizes, report.partition_errors = sizes.sizes(), sizes.errors
    report.seconds["workflows and partitions"] = time.perf_counter() - clock
    marker_names = getattr(upstream.ci_register, "REGISTER_MAPPING", {}).keys()
    report.traits = upstream_traits(
        root, registrations, collected, report.tables, report.checked_backends, marker_names
    )
    cases = enumerate_cases(report.tables, registrations, report.workflows.invocations)
    if only is not None:
        cases = {case: src for case, src in cases.items() if only(case)}
    clock = time.perf_counter()
    selections = {
        case: [
            upstream.run(case.hw, case.suite, case.nightly, _shard(case, i)) for i in case.shard_ids
        ]
        for case in cases
    }
    report.seconds["upstream cases"] = time.perf_counter() - clock
    progress(f"upstream: {len(cases)} case(s) in {report.seconds['upstream cases']:.1f} s")
    return cases, selections, registrations


def _shard(case: Case, shard_id: int | None) -> tuple[int, int] | None:
    return None if shard_id is None or case.size is None else (shard_id, case.size)


def _ours_side(
    report: Report,
    root: Path,
    runner: Path,
    cases: dict[Case, list[str]],
    selections: Selections,
    jobs: int,
    every_shard: bool,
    extra: tuple[str, ...],
    progress: Callable[[str], None],
) -> dict[Case, list[ours.OursResult]]:
    """init, then one dry run per case (per shard with ``every_shard``), then the comparison."""
    runs = [
        (case, shard_id)
        for case in cases
        for shard_id in (case.shard_ids if every_shard and case.size else [case.shard_ids[0]])
    ]
    clock = time.perf_counter()
    results: dict[Case, list[ours.OursResult]] = {case: [] for case in cases}
    done = Counter()
    in_process = ours.InProcess() if report.mode == "in-process" else None
    run_case = in_process.run_case if in_process else ours.run_case
    with ThreadPoolExecutor(max_workers=1 if in_process else max(1, jobs)) as pool:
        futures = [
            (case, pool.submit(run_case, runner, root, case, shard_id, extra))
            for case, shard_id in runs
        ]
        for case, future in futures:
            results[case].append(future.result())
            done["runs"] += 1
            if done["runs"] % 100 == 0 or done["runs"] == len(runs):
                elapsed = time.perf_counter() - clock
                progress(f"ours: {done['runs']}/{len(runs)} run(s), {elapsed:.0f} s")
    report.seconds["ours cases"] = time.perf_counter() - clock
    report.runs_of_ours = len(runs)
    report.outcomes = [
        compare(case, src, selections[case], results[case], report.upstream_plan)
        for case, src in cases.items()
    ]
    distinct = dict.fromkeys(
        line for rs in results.values() for r in rs for line in r.stderr.splitlines()
    )
    report.our_problems = our_problem_lines("\n".join(distinct))
    return results


def _check_cli_sample(
    report: Report,
    root: Path,
    runner: Path,
    results: dict[Case, list[ours.OursResult]],
    count: int,
    extra: tuple[str, ...],
    progress: Callable[[str], None],
) -> None:
    """Run ``count`` evenly spread cases through the real CLI too: same rc, files and plan."""
    clock = time.perf_counter()
    cases = list(results)
    step = max(1, len(cases) // count)
    for case in cases[::step][:count]:
        shard_id = case.shard_ids[0]
        cli = ours.run_case(runner, root, case, shard_id, extra)
        mine = results[case][0]
        same = (cli.rc, cli.files, cli.disabled, cli.shards, cli.plan_hash) == (
            mine.rc, mine.files, mine.disabled, mine.shards, mine.plan_hash,
        )  # fmt: skip
        report.cli_checked += 1
        if not same:
            report.cli_mismatches.append(case.label)
    report.seconds["cli sample"] = time.perf_counter() - clock
    progress(
        f"cli sample: {report.cli_checked} case(s) through the real CLI, "
        f"{len(report.cli_mismatches)} differ from the in-process run"
    )
