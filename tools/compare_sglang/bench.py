"""``python -m tools.compare_sglang.bench CHECKOUT``: issue 24's speed targets on a real tree.

Times, on a staged copy of the checkout, best of ``--repeat`` runs each:

* upstream's collection of all files: its ``collect_tests`` over the files its run_suite.py
  globs, in process (the reference), and its whole ``main()`` for the largest suite with the
  collection not memoized (glob, collect, validate, filter; nothing executed);
* our ``run_suite.py --dry-run --format json`` of the largest suite and our ``init``, each with
  an empty parse cache (every file is parsed, and the cache written, as on a fresh CI machine),
  and a warm rerun: the same dry run right after one that filled the cache (the cache
  directories are scratch, removed afterwards);
* ``python -c pass``, the interpreter start every subprocess of ours pays.

Our subprocesses run with Python's bytecode cache on, as on any installed copy (pip compiles
``.pyc`` files at install time): ``PYTHONDONTWRITEBYTECODE`` is dropped from their environment
and a first untimed run writes the cache, so no timed run compiles the runner's ~100 modules.

It prints each time and our times as a fraction of upstream's collection, beside the targets
(dry run <= 0.25, init <= 0.5, warm rerun <= 0.05). Exit 0 when all three are met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from tools.compare_sglang.ours import DEFAULT_RUNNER
from tools.compare_sglang.staging import StagingError, stage
from tools.compare_sglang.upstream import Upstream, UpstreamError

TARGETS = {"ours dry run": 0.25, "ours init": 0.5, "ours warm rerun": 0.05}


def _cpu_seconds() -> float:
    """CPU time of this process and of its waited-for children (and theirs)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def best_of(
    repeat: int, action: Callable[[], object], before_each: Callable[[], object] | None = None
) -> tuple[float, list[float], float]:
    """Best and all wall times of ``action``, and its best CPU time (on a shared machine the
    CPU time shows the work when other load stretches the wall time); ``before_each`` runs
    untimed before each one."""
    times, cpu = [], []
    for _ in range(repeat):
        if before_each is not None:
            before_each()
        started, cpu_started = time.perf_counter(), _cpu_seconds()
        action()
        times.append(time.perf_counter() - started)
        cpu.append(_cpu_seconds() - cpu_started)
    return min(times), times, min(cpu)


def _subprocess(command: list[str], env: dict[str, str] | None = None) -> Callable[[], int]:
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    environment.update(env or {})

    def run() -> int:
        return subprocess.run(command, capture_output=True, check=False, env=environment).returncode

    return run


def largest_suite(upstream: Upstream) -> tuple[str, str, int]:
    """(hw, suite, enabled files) of the per-commit suite with the most enabled registrations."""
    counts = Counter(
        (r.hw, r.suite)
        for r in upstream.registrations()
        if r.hw and r.suite and not r.nightly and r.disabled is None
    )
    (hw, suite), files = counts.most_common(1)[0]
    return hw, suite, files


def measure(root: Path, runner: Path, repeat: int, cache_dir: Path) -> dict[str, object]:
    upstream = Upstream(root)
    hw, suite, files = largest_suite(upstream)
    collected = upstream.collected_paths()
    figures: dict[str, object] = {
        "files collected by upstream": len(collected),
        "bytes": sum((root / path).stat().st_size for path in collected),
        "largest suite": f"{hw}:{suite} ({files} enabled files)",
        "repeat": repeat,
        "load average at start": os.getloadavg(),
    }

    def upstream_main() -> None:
        upstream.forget_collections()
        upstream.run(hw, suite, False, None)

    python = sys.executable
    cold_dir = cache_dir / "cold"  # emptied before each cold run: a fresh CI machine
    cold = {"CI_RUNNER_CACHE_DIR": str(cold_dir)}

    def empty_cache() -> None:
        shutil.rmtree(cold_dir, ignore_errors=True)

    init = [python, str(runner), "init", "--root", str(root)]
    subprocess.run(init, capture_output=True, check=False)  # the catalog the dry runs read
    scratch = root / "bench-catalog.toml"
    dry_run = [python, str(runner), "--root", str(root), "--hw", hw, "--suite", suite]
    dry_run += ["--dry-run", "--format", "json"]
    figures["ours dry run exit status"] = _subprocess(dry_run, cold)()
    seconds: dict[str, float] = {}
    cpu: dict[str, float] = {}
    all_times: dict[str, list[float]] = {}
    for name, action, before_each in (
        ("upstream collect_tests", upstream.collect_all, None),
        ("upstream main() of the largest suite", upstream_main, None),
        ("ours dry run", _subprocess(dry_run, cold), empty_cache),
        ("ours init", _subprocess([*init, "--output", str(scratch), "--force"], cold), empty_cache),
        ("python -c pass", _subprocess([python, "-c", "pass"]), None),
    ):
        seconds[name], all_times[name], cpu[name] = best_of(repeat, action, before_each)
    warm = _subprocess(dry_run, {"CI_RUNNER_CACHE_DIR": str(cache_dir / "warm")})
    seconds["ours warm rerun"], all_times["ours warm rerun"], cpu["ours warm rerun"] = best_of(
        repeat, warm, before_each=warm
    )
    figures["seconds (best)"] = seconds
    figures["seconds (all runs)"] = all_times
    figures["cpu seconds (best)"] = cpu
    reference = seconds["upstream collect_tests"]
    figures["ratio to upstream collect_tests"] = {
        name: seconds[name] / reference for name in seconds if name != "upstream collect_tests"
    }
    figures["cpu ratio to upstream collect_tests"] = {
        name: cpu[name] / cpu["upstream collect_tests"]
        for name in cpu
        if name != "upstream collect_tests"
    }
    return figures


def report_lines(figures: dict) -> list[str]:
    seconds, ratios = figures["seconds (best)"], figures["ratio to upstream collect_tests"]
    cpu, cpu_ratios = figures["cpu seconds (best)"], figures["cpu ratio to upstream collect_tests"]
    load = ", ".join(f"{x:.1f}" for x in figures["load average at start"])
    lines = [
        f"tree: {figures['files collected by upstream']} files, {figures['bytes'] / 1e6:.1f} MB; "
        f"largest suite {figures['largest suite']}; best of {figures['repeat']}; load {load}",
        f"ours dry run exit status: {figures['ours dry run exit status']}",
        f"  {'':40s} {'wall':>9s} {'x upstream':>10s}  {'cpu':>9s} {'x upstream':>10s}",
    ]
    for name, value in seconds.items():
        ratio, cpu_ratio = ratios.get(name), cpu_ratios.get(name)
        target = TARGETS.get(name)
        shown = "" if ratio is None else f"{ratio:.3f}"
        cpu_shown = "" if cpu_ratio is None else f"{cpu_ratio:.3f}"
        tail = ""
        if target is not None:
            tail = f"  target <= {target}: {'met' if ratio <= target else 'NOT met'} (wall)"
        lines.append(
            f"  {name:40s} {value:7.3f} s {shown:>10s}  {cpu[name]:7.3f} s {cpu_shown:>10s}{tail}"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.compare_sglang.bench", description=__doc__
    )
    parser.add_argument("checkout", type=Path, help="an SGLang checkout (only read)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure (best kept)")
    parser.add_argument("--runner", type=Path, default=DEFAULT_RUNNER, help="our run_suite.py")
    parser.add_argument("--json", metavar="OUT", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    try:
        root = stage(args.checkout)
    except StagingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    cache_dir = Path(tempfile.mkdtemp(prefix="bench-parse-cache-"))
    try:
        figures = measure(root, args.runner, args.repeat, cache_dir)
    except UpstreamError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(cache_dir, ignore_errors=True)
    print("\n".join(report_lines(figures)))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    ratios = figures["ratio to upstream collect_tests"]
    return 0 if all(ratios[name] <= limit for name, limit in TARGETS.items()) else 1


if __name__ == "__main__":
    sys.exit(main())
