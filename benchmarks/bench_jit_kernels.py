"""Bandwidth, peer, host-overhead and warm-load benchmark for every JIT kernel, in one run.

Run on a GPU from the repo root::

    python -m benchmarks.bench_jit_kernels [--only rmsnorm scale ...] [--json out.json] [--check]

Each kernel family contributes a module in ``benchmarks/cases/`` (interface:
``benchmarks/cases/case.py``). Measured side by side in one run:

* device-to-device copy bandwidth: ``dst.copy_(src)`` of a 1 GiB buffer (bytes read + written),
  the reference every kernel is compared with (the faster of eager loop and graph replay);
* every kernel at memory-bound sizes against its peers (torch eager, torch.compile, FlashInfer;
  N/A with the reason where a peer cannot run). ``--timer graph`` (default) replays a CUDA graph
  of back-to-back calls through our ``do_bench``, which rotates clones of the read inputs so the
  working set never sits in L2; ``--timer loop`` records CUDA events around a Python loop of eager
  calls over rotated input sets, which also counts each call's launch gap;
* host time per call at a small size: the public wrapper, a bare tvm-ffi call doing the same work
  (the module's export, after allocating the output where the wrapper does) and torch eager, as
  the per-call wall time of an eager loop of 200 calls written out as user code writes them
  (``rmsnorm(x, w, eps)``), median over interleaved rounds (host jitter hits every variant alike);
* warm load: a fresh process (CUDA already initialised) whose disk cache is warm loads a module.

``--check`` exits 1 unless: every memory-bound row reaches >= 90% of the copy bandwidth and is
no slower than any peer that ran (2% noise allowed); every wrapper's host time is <= 1.05x the
bare call's and below torch eager's; warm load < 30 ms.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

REPO_ROOT = Path(__file__).resolve().parents[1]
CASES_DIR = Path(__file__).resolve().parent / "cases"

from benchmarks.cases.case import BandwidthCase, Call, OverheadCase  # noqa: E402
from jit_kernel.benchmark.marker import do_bench  # noqa: E402

GB = 1e9
COPY_BYTES = 1 << 30
BW_TARGET = 0.90
PEER_NOISE = 0.98  # "no slower than a peer" allows 2% noise
OVERHEAD_TARGET = 1.05
OVERHEAD_ROUNDS = 31  # interleaved rounds of the host-overhead measurement
WARM_LOAD_TARGET_MS = 30.0


@dataclass
class BandwidthRow:
    """One kernel at one size: microseconds per call of ours and each peer."""

    kernel: str
    shape: str
    bytes_moved: int
    ours_us: float
    ours_gbps: float
    copy_ratio: float
    targets: bool
    peers_us: dict[str, float] = field(default_factory=dict)
    peers_na: dict[str, str] = field(default_factory=dict)


@dataclass
class OverheadRow:
    """Host microseconds per call (medians): wrapper, bare tvm-ffi call, torch eager; and the
    medians of the per-round ratios wrapper / bare and wrapper / torch (paired within a round,
    so that drift of the host's speed between rounds cancels)."""

    name: str
    wrapper_us: float
    bare_us: float
    torch_us: float
    vs_bare: float
    vs_torch: float


def l2_bytes() -> int:
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return int(getattr(props, "L2_cache_size", 50 << 20))


def time_graph(
    fn: Callable[..., Any],
    inputs: tuple[Any, ...],
    rotate: Any,
    *,
    replay_iters: int | None = None,
    warmup_iters: int | None = None,
) -> float:
    """Median seconds per call from CUDA-graph replays of ``fn(*inputs)`` (our do_bench).

    ``replay_iters``/``warmup_iters``: do_bench's, when given (else its defaults).
    """
    counts = {"replay_iters": replay_iters, "warmup_iters": warmup_iters}
    result = do_bench(
        fn,
        input_args=inputs,
        graph_clone_args=rotate,
        **{name: value for name, value in counts.items() if value is not None},
        metrics=(0.5,),
        memory_args=None,
        memory_output=None,
        disable_log_bandwidth=True,
    )
    return result.times[0]


def _rotated_sets(inputs: tuple[Any, ...], rotate: Any, min_bytes: int) -> list[tuple[Any, ...]]:
    """Copies of ``inputs`` (the ``rotate`` positions cloned) that together exceed ``min_bytes``."""
    positions = range(len(inputs)) if rotate == "all" else rotate
    per_set = sum(inputs[i].nbytes for i in positions if isinstance(inputs[i], torch.Tensor))
    count = max(2, math.ceil(min_bytes / max(per_set, 1)))
    sets = [inputs]
    for _ in range(count - 1):
        copy = list(inputs)
        for i in positions:
            if isinstance(copy[i], torch.Tensor):
                copy[i] = copy[i].clone()
        sets.append(tuple(copy))
    return sets


def time_loop(fn: Callable[..., Any], inputs: tuple[Any, ...], rotate: Any) -> float:
    """Median seconds per call of eager calls over rotated input sets, timed with CUDA events."""
    sets = _rotated_sets(inputs, rotate, 4 * l2_bytes())
    for s in sets:
        fn(*s)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn(*sets[0])
    end.record()
    end.synchronize()
    iters = max(len(sets), min(2000, math.ceil(50.0 / max(start.elapsed_time(end), 1e-3))))
    samples = []
    for _ in range(5):
        start.record()
        for i in range(iters):
            fn(*sets[i % len(sets)])
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 1e3 / iters)
    return statistics.median(samples)


def copy_bandwidth(replay_iters: int | None = None) -> dict[str, float]:
    """GB/s of a 1 GiB ``dst.copy_(src)`` (read + write) by both timers (``replay_iters``: the
    graph timer's, see :func:`time_graph`)."""
    src = torch.empty(COPY_BYTES, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    loop = time_loop(lambda s, d: d.copy_(s), (src, dst), (0,))
    graph = time_graph(lambda s, d: d.copy_(s), (src, dst), (0,), replay_iters=replay_iters)
    del src, dst
    torch.cuda.empty_cache()
    return {"loop": 2 * COPY_BYTES / loop / GB, "graph": 2 * COPY_BYTES / graph / GB}


def short_error(error: BaseException, limit: int = 120) -> str:
    """``Type: message``, first line only, at most ``limit`` characters."""
    text = f"{type(error).__name__}: {error}".splitlines()[0]
    return text if len(text) <= limit else text[: limit - 3] + "..."


def bench_case(case: BandwidthCase, copy_gbps: float, timer: str) -> BandwidthRow:
    """Time ours and every peer on the same inputs; a failing peer becomes N/A with its error."""
    inputs = case.make_inputs()
    case.ours(*inputs)
    torch.cuda.synchronize()
    if case.check is not None:
        case.check(inputs)
    timed = time_graph if timer == "graph" else time_loop
    ours = timed(case.ours, inputs, case.rotate_args)
    row = BandwidthRow(
        kernel=case.kernel,
        shape=case.shape,
        bytes_moved=case.bytes_moved,
        ours_us=ours * 1e6,
        ours_gbps=case.bytes_moved / ours / GB,
        copy_ratio=case.bytes_moved / ours / GB / copy_gbps,
        targets=case.targets,
    )
    for name, peer in case.peers.items():
        if isinstance(peer, str):
            row.peers_na[name] = peer
            continue
        try:
            row.peers_us[name] = timed(peer, inputs, case.rotate_args) * 1e6
        except Exception as error:  # a peer that cannot run is reported, never fatal
            row.peers_na[name] = short_error(error)
            torch.cuda.synchronize()
    del inputs
    torch.cuda.empty_cache()
    return row


class CallLoop:
    """``calls`` calls of one callable, written out: ``fn(a0, a1, a2, a3, is_neox=kw_is_neox)``.

    A call as user code makes it: the interpreter's fast paths for plain Python calls apply to
    a wrapper as they would there, and a bare export builds its argument tuple as it would
    there (``fn(*args)`` hands it a ready-made tuple and calls a Python wrapper through the slow
    generic path). Each instance compiles its own loop, so each callable has a call site of its
    own (a shared one would keep re-specializing between a wrapper and an export).
    """

    def __init__(self, spec: Callable[..., Any] | Call, inputs: tuple[Any, ...]) -> None:
        call = spec if isinstance(spec, Call) else Call(spec)  # a plain callable: inputs alone
        self.call = call
        self.args = (*inputs, *call.extra)
        params = [f"a{i}" for i in range(len(self.args))]
        passed = params + [f"{name}=kw_{name}" for name in call.keywords]
        lines = ["def loop(fn, args, kwargs, calls):"]
        if params:
            lines.append(f"    {', '.join(params)}, = args")
        lines += [f"    kw_{name} = kwargs[{name!r}]" for name in call.keywords]
        lines += ["    for _ in range(calls):", f"        fn({', '.join(passed)})"]
        namespace: dict[str, Any] = {}
        exec(compile("\n".join(lines) + "\n", "<overhead call loop>", "exec"), namespace)
        self._loop = namespace["loop"]

    def run(self, calls: int) -> None:
        self._loop(self.call.fn, self.args, self.call.keywords, calls)


def host_us_per_call(loop: CallLoop, calls: int, warmup: int = 20) -> float:
    """Wall-clock microseconds per call of an eager loop of ``calls`` calls (no sync inside).

    ``warmup`` untimed calls come first, so that every variant starts its timed loop with its
    own code path warm (caches, branch predictors), whatever ran before it.
    """
    loop.run(warmup)
    torch.cuda.synchronize()
    t0 = time.perf_counter_ns()
    loop.run(calls)
    elapsed = time.perf_counter_ns() - t0
    torch.cuda.synchronize()
    return elapsed / calls / 1e3


def bench_overhead(
    case: OverheadCase, rounds: int = OVERHEAD_ROUNDS, calls: int = 200
) -> OverheadRow:
    """Median over ``rounds`` interleaved rounds of wrapper, bare call and torch eager.

    The order within a round rotates (wrapper first, then bare first, then torch first, ...),
    so no variant always runs right after the same other one.
    """
    inputs = case.make_inputs()
    variants = {
        "wrapper": CallLoop(case.wrapper, inputs),
        "bare": CallLoop(case.bare, inputs),
        "torch": CallLoop(case.torch_eager, inputs),
    }
    for loop in variants.values():
        loop.run(50)
    samples: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(host_us_per_call(variants[name], calls))
    med = {name: statistics.median(values) for name, values in samples.items()}
    pairs = zip(samples["wrapper"], samples["bare"], samples["torch"], strict=True)
    vs_bare, vs_torch = zip(*((w / b, w / t) for w, b, t in pairs), strict=True)
    return OverheadRow(
        case.name,
        med["wrapper"],
        med["bare"],
        med["torch"],
        statistics.median(vs_bare),
        statistics.median(vs_torch),
    )


WARM_LOAD_CHILD = """
import time, torch
torch.empty(1, device="cuda")  # a caller always has CUDA up already: keep context creation out
from jit_kernel.scale import _jit_scale_module
t0 = time.perf_counter()
_jit_scale_module()
print((time.perf_counter() - t0) * 1e3)
"""


def warm_load_ms(repeats: int = 5) -> float:
    """Median ms of the first ``_jit_scale_module`` call in a fresh process, disk cache warm."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    samples = []
    for _ in range(repeats):
        done = subprocess.run(
            [sys.executable, "-c", WARM_LOAD_CHILD],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO_ROOT,
            check=True,
        )
        samples.append(float(done.stdout.split()[-1]))
    return statistics.median(samples)


def load_family(stem: str) -> Any:
    """The family module ``benchmarks.cases.<stem>``."""
    return importlib.import_module(f"benchmarks.cases.{stem}")


def family_modules() -> list[str]:
    """The family modules in cases/ (``case.py`` is the interface, not a family)."""
    return [p.stem for p in sorted(CASES_DIR.glob("*.py")) if p.stem not in {"case", "__init__"}]


def peer_names(rows: list[BandwidthRow]) -> list[str]:
    names: list[str] = []
    for row in rows:
        for name in [*row.peers_us, *row.peers_na]:
            if name not in names:
                names.append(name)
    return names


def print_bandwidth(rows: list[BandwidthRow]) -> None:
    peers = peer_names(rows)
    header = f"{'kernel':<20}{'shape':<24}{'ours us':>9}{'GB/s':>7}{'/copy':>7}"
    header += "".join(f"{p + ' us':>18}{'x':>6}" for p in peers)
    print(header)
    print("-" * len(header))
    for r in rows:
        line = (
            f"{r.kernel:<20}{r.shape:<24}{r.ours_us:>9.1f}{r.ours_gbps:>7.0f}{r.copy_ratio:>7.1%}"
        )
        for p in peers:
            if p in r.peers_us:
                line += f"{r.peers_us[p]:>18.1f}{r.peers_us[p] / r.ours_us:>5.2f}x"
            else:
                line += f"{'N/A':>18}{'':>6}"
        print(line)
    reasons = {(p, why) for r in rows for p, why in r.peers_na.items()}
    for p, why in sorted(reasons):
        print(f"  N/A {p}: {why}")


def check_targets(
    rows: list[BandwidthRow], overheads: list[OverheadRow], load_ms: float
) -> list[str]:
    failures = []
    for r in rows:
        if not r.targets:
            continue
        if r.copy_ratio < BW_TARGET:
            failures.append(
                f"{r.kernel} {r.shape}: {r.copy_ratio:.1%} of copy bandwidth < {BW_TARGET:.0%}"
            )
        for p, us in r.peers_us.items():
            if us / r.ours_us < PEER_NOISE:
                failures.append(f"{r.kernel} {r.shape}: slower than {p} ({us / r.ours_us:.2f}x)")
    for o in overheads:
        if o.vs_bare > OVERHEAD_TARGET:
            failures.append(
                f"host overhead {o.name}: wrapper {o.vs_bare:.3f}x the bare call "
                f"> {OVERHEAD_TARGET:.2f}x"
            )
        if o.vs_torch >= 1.0:
            failures.append(
                f"host overhead {o.name}: wrapper {o.vs_torch:.3f}x torch eager (not below it)"
            )
    if load_ms >= WARM_LOAD_TARGET_MS:
        failures.append(f"warm load {load_ms:.1f} ms >= {WARM_LOAD_TARGET_MS} ms")
    return failures


def progress(message: str, t0: float) -> None:
    """One line per finished case on stderr (the tables come at the end, on stdout)."""
    print(f"[{time.perf_counter() - t0:6.1f}s] {message}", file=sys.stderr, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="KERNEL",
        help="benchmark only these kernels (names as printed)",
    )
    parser.add_argument("--json", type=Path, help="also write all figures to this JSON file")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument(
        "--timer",
        choices=("graph", "loop"),
        default="graph",
        help="graph: CUDA-graph replay via do_bench (default); loop: events around eager calls",
    )
    parser.add_argument("--skip-overhead", action="store_true", help="skip the host-overhead table")
    parser.add_argument(
        "--skip-bandwidth", action="store_true", help="skip the bandwidth/peer table"
    )
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("bench_jit_kernels: needs a CUDA GPU", file=sys.stderr)
        return 2
    only = set(args.only) if args.only else None

    device = torch.cuda.get_device_name()
    copies = copy_bandwidth()
    copy_gbps = max(copies.values())
    print(f"device: {device}; L2 {l2_bytes() >> 20} MiB; timer: {args.timer}")
    print(
        f"D2D copy (1 GiB, read + write): eager loop {copies['loop']:.0f} GB/s, graph replay "
        f"{copies['graph']:.0f} GB/s; reference = {copy_gbps:.0f} GB/s\n"
    )

    t0 = time.perf_counter()
    rows: list[BandwidthRow] = []
    overheads: list[OverheadRow] = []
    errors: list[str] = []
    for family in family_modules():
        try:
            module = load_family(family)
            cases = [] if args.skip_bandwidth else module.bandwidth_cases()
        except Exception:
            errors.append(f"benchmarks/cases/{family}.py:\n{traceback.format_exc()}")
            continue
        for case in cases:
            if only and case.kernel not in only:
                continue
            try:
                rows.append(bench_case(case, copy_gbps, args.timer))
                progress(f"{case.kernel} {case.shape}: ours {rows[-1].ours_us:.1f} us", t0)
            except Exception:
                errors.append(f"{case.kernel} {case.shape}:\n{traceback.format_exc()}")
        if args.skip_overhead:
            continue
        try:
            ocases = module.overhead_cases()
        except Exception:
            errors.append(
                f"benchmarks/cases/{family}.py overhead_cases():\n{traceback.format_exc()}"
            )
            continue
        for ocase in ocases:
            if only and ocase.name.split()[0] not in only:
                continue
            try:
                overheads.append(bench_overhead(ocase))
            except Exception:
                errors.append(f"overhead {ocase.name}:\n{traceback.format_exc()}")

    print_bandwidth(rows)
    if overheads:
        print(
            f"\nhost time per call (eager loop of 200 written-out calls; medians of {OVERHEAD_ROUNDS} rounds, "
            "order rotated; ratios: medians of the per-round ratios):"
        )
        print(
            f"  {'case':<34}{'wrapper us':>11}{'bare us':>9}{'torch us':>10}{'vs bare':>9}{'vs torch':>10}"
        )
        for o in overheads:
            print(
                f"  {o.name:<34}{o.wrapper_us:>11.2f}{o.bare_us:>9.2f}{o.torch_us:>10.2f}"
                f"{o.vs_bare:>8.3f}x{o.vs_torch:>9.3f}x"
            )
    load_ms = warm_load_ms()
    print(f"\nwarm load (fresh process, disk cache warm): _jit_scale_module {load_ms:.1f} ms")

    failures = check_targets(rows, overheads, load_ms) + [f"error: {e}" for e in errors]
    for e in errors:
        print(f"\nERROR {e}", file=sys.stderr)
    print(
        "\n"
        + (
            "all targets met"
            if not failures
            else "targets missed:\n  " + "\n  ".join(f.splitlines()[0] for f in failures)
        )
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "device": device,
                    "copy_gbps": copy_gbps,
                    "copy_gbps_by_timer": copies,
                    "rows": [asdict(r) for r in rows],
                    "host_overhead_us": [asdict(o) for o in overheads],
                    "warm_load_ms": load_ms,
                    "failures": failures,
                },
                indent=2,
            )
        )
    return 1 if (args.check and failures) or errors else 0


if __name__ == "__main__":
    sys.exit(main())
