"""Bandwidth, decode latency, peer, host-overhead and warm-load benchmark for every JIT kernel.

Run on a GPU from the repo root::

    python -m benchmarks.bench_jit_kernels [--only rmsnorm scale ...] [--sglang-src DIR]
        [--decode-only] [--json out.json] [--check]

Each kernel family contributes a module in ``testing/bench/`` (interface:
``testing/bench/case.py``). Measured side by side in one run:

* device-to-device copy bandwidth: ``dst.copy_(src)`` of a 1 GiB buffer (bytes read + written),
  the reference every kernel is compared with (the faster of eager loop and graph replay);
* every kernel at memory-bound sizes against its peers (torch eager, torch.compile, FlashInfer,
  upstream SGLang's own JIT kernels built from the wheel's sources given by ``--sglang-src``;
  N/A with the reason where a peer cannot run). ``--timer graph`` (default) replays a CUDA graph
  of back-to-back calls through our ``do_bench``, which rotates clones of the read inputs so the
  working set never sits in L2; ``--timer loop`` records CUDA events around a Python loop of
  eager calls over rotated input sets, which also counts each call's launch gap. Ours and every
  peer of a row are timed over the same input sets (one group per round), so where the sets lie
  in memory cannot favour one of them;
* every kernel at decode sizes (<= 64 rows or tokens) against the same peers, in the same
  harness with more replays, and an empty kernel there (the launch floor);
* host time per call at a small size: the public wrapper, a bare tvm-ffi call doing the same work
  (the module's export, after allocating the output where the wrapper does) and torch eager, as
  the per-call wall time of an eager loop of 200 calls written out as user code writes them
  (``rmsnorm(x, w, eps)``), median over interleaved rounds (host jitter hits every variant alike);
* warm load: a fresh process (CUDA already initialised) whose disk cache is warm loads a module.

Upstream SGLang's modules are built (in parallel, without a GPU) before anything is timed, and
each is checked against ``testing/references`` before it is timed. ``--build-peers-only``
builds them (and the launch-floor kernel) and exits, for the target of
``$TVM_FFI_CUDA_ARCH_LIST`` or the GPU.

``--check`` exits 1 unless every target of :mod:`benchmarks.bench_jit_report` is met.
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
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import torch

REPO_ROOT = Path(__file__).resolve().parents[1]
CASES_DIR = REPO_ROOT / "testing" / "bench"

from benchmarks import launch_floor  # noqa: E402
from benchmarks.bench_jit_report import (  # noqa: E402
    BandwidthRow,
    OverheadRow,
    bandwidth_table,
    check_targets,
    decode_table,
    overhead_table,
)
from jit_kernel.benchmark.marker import do_bench, make_input_sets  # noqa: E402
from jit_kernel.benchmark.timing import InputSet  # noqa: E402
from jit_kernel.compiler import ArchError, build_only, get_jit_cuda_arch  # noqa: E402
from testing.bench.case import BandwidthCase, CallLoop, OverheadCase  # noqa: E402
from testing.bench.peers import upstream  # noqa: E402
from testing.upstream_sglang import source as upstream_source  # noqa: E402

GB = 1e9
COPY_BYTES = 1 << 30
OVERHEAD_ROUNDS = 31  # interleaved rounds of the host-overhead measurement
PEERS = ("torch", "torch_compile", "flashinfer", "upstream")
DECODE_REPLAY_ITERS = 20_000  # calls per decode timing: ~150 replays, a stable median of ~1 us
# Decode rows: ours and every peer timed in this many alternating rounds (median reported), each
# round over its own group of input sets, shared by all of them (bench_jit_kernels.md).
DECODE_ROUNDS = 5


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
    sets: tuple[InputSet, ...] | None = None,
) -> float:
    """Median seconds per call from CUDA-graph replays of ``fn(*inputs)`` (our do_bench).

    ``replay_iters``/``warmup_iters``: do_bench's, when given (else its defaults). ``sets``:
    input sets from :func:`shared_sets` to rotate through instead of clones of ``rotate``.
    """
    options: dict[str, Any] = {"replay_iters": replay_iters, "warmup_iters": warmup_iters}
    options = {name: value for name, value in options.items() if value is not None}
    if sets is None:
        options["graph_clone_args"] = rotate
    else:
        options["graph_input_sets"] = sets
    result = do_bench(
        fn,
        input_args=inputs,
        **options,
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


def shared_sets(timer: str, inputs: tuple[Any, ...], rotate: Any) -> Any:
    """One group of rotated input sets for ``timer``, to time several implementations over."""
    if timer == "graph":
        return make_input_sets(inputs, graph_clone_args=rotate)
    return _rotated_sets(inputs, rotate, 4 * l2_bytes())


def time_loop(
    fn: Callable[..., Any],
    inputs: tuple[Any, ...],
    rotate: Any,
    sets: list[tuple[Any, ...]] | None = None,
) -> float:
    """Median seconds per call of eager calls over rotated input sets, timed with CUDA events.

    ``sets``: input sets from :func:`shared_sets` instead of new clones of ``rotate``.
    """
    if sets is None:
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


def verified_peer(
    case: BandwidthCase, peer: upstream.UpstreamPeer, inputs: tuple[Any, ...]
) -> Callable[..., Any] | str:
    """The peer's callable once the case's check passed on it, else the reason it failed."""
    if case.check is None:
        return f"{case.kernel} has no check to verify a built peer with"
    try:
        fn = peer.load()
        case.check(fn, inputs)
    except AssertionError as error:
        return f"wrong result against testing/references: {short_error(error, 200)}"
    except Exception as error:  # a build, load or launch failure: reported, never fatal
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return short_error(error, 200)
    return fn


def bench_case(
    case: BandwidthCase,
    copy_gbps: float | None,
    timer: str,
    replay_iters: int | None = None,
    rounds: int = 1,
) -> BandwidthRow:
    """Time ours and every peer on the same inputs; a failing peer becomes N/A with its error.

    ``replay_iters``: the graph timer's (per round). A built peer (upstream SGLang) is timed
    only after the case's check passed on it; if it did not, it is a peer error. Every round
    makes one group of rotated input sets and times ours and every peer over it, so they run on
    the same memory. ``rounds`` > 1 alternates the order between rounds and reports each one's
    median over the rounds.
    """
    inputs = case.make_inputs()
    if case.check is not None:
        case.check(case.ours, inputs)
    else:
        case.ours(*inputs)
    torch.cuda.synchronize()

    def timed(fn: Callable[..., Any], inputs: tuple[Any, ...], sets: Any) -> float:
        if timer == "graph":
            return time_graph(fn, inputs, case.rotate_args, replay_iters=replay_iters, sets=sets)
        return time_loop(fn, inputs, case.rotate_args, sets=sets)

    peers_na: dict[str, str] = {}
    peer_errors: dict[str, str] = {}
    fns: dict[str, Callable[..., Any]] = {"ours": case.ours}
    built: set[str] = set()
    for name, peer in case.peers.items():
        if isinstance(peer, str):
            peers_na[name] = peer
            continue
        if isinstance(peer, upstream.UpstreamPeer):
            built.add(name)
            fn = verified_peer(case, peer, inputs)
            if isinstance(fn, str):
                peers_na[name] = peer_errors[name] = fn
                continue
        else:
            fn = peer
        fns[name] = fn

    samples: dict[str, list[float]] = {name: [] for name in fns}
    for index in range(rounds):
        sets = shared_sets(timer, inputs, case.rotate_args)
        for name in list(fns) if index % 2 == 0 else list(reversed(fns)):
            if name in peers_na:
                continue
            try:
                samples[name].append(timed(fns[name], inputs, sets))
            except Exception as error:  # a peer that cannot run is reported, never fatal
                if name == "ours":
                    raise
                peers_na[name] = short_error(error)
                if name in built:  # asked for, built and verified: it must be timed too
                    peer_errors[name] = peers_na[name]
                torch.cuda.synchronize()
        del sets  # free this round's clones before the next round makes its own
    ours = statistics.median(samples["ours"])
    row = BandwidthRow(
        kernel=case.kernel,
        shape=case.shape,
        bytes_moved=case.bytes_moved,
        ours_us=ours * 1e6,
        ours_gbps=case.bytes_moved / ours / GB,
        copy_ratio=None if copy_gbps is None else case.bytes_moved / ours / GB / copy_gbps,
        decode=case.decode,
        peers_us={
            name: statistics.median(values) * 1e6
            for name, values in samples.items()
            if name != "ours" and name not in peers_na
        },
        peers_na=peers_na,
        peer_errors=peer_errors,
        rounds_us={
            name: [round(value * 1e6, 4) for value in values] for name, values in samples.items()
        }
        if rounds > 1
        else {},
    )
    del inputs
    torch.cuda.empty_cache()
    return row


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


def rotated_samples(loops: dict[str, CallLoop], rounds: int, calls: int) -> dict[str, list[float]]:
    """Microseconds per call of each loop, one per round, after 50 untimed calls each; the
    order rotates every round (first, then second first, ...), so no loop always follows the
    same other one."""
    for loop in loops.values():
        loop.run(50)
    samples: dict[str, list[float]] = {name: [] for name in loops}
    names = list(loops)
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(host_us_per_call(loops[name], calls))
    return samples


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
    samples = rotated_samples(variants, rounds, calls)
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
    """The family module ``testing.bench.<stem>``."""
    return importlib.import_module(f"testing.bench.{stem}")


def family_modules() -> list[str]:
    """The definition modules in testing/bench/ (not ``case.py``, the interface, ``peers.py``,
    the peer adapters, nor a ``_`` module shared by several definitions)."""
    skip = {"case", "peers"}
    paths = sorted(CASES_DIR.glob("*.py"))
    return [p.stem for p in paths if p.stem not in skip and not p.stem.startswith("_")]


def progress(message: str, t0: float) -> None:
    """One line per finished case on stderr (the tables come at the end, on stdout)."""
    print(f"[{time.perf_counter() - t0:6.1f}s] {message}", file=sys.stderr, flush=True)


def collect_cases(
    only: set[str] | None,
    memory: bool,
    decode: bool,
    errors: list[str],
    peers: set[str] | None = None,
) -> tuple[list[BandwidthCase], list[Any]]:
    """The selected cases of every family (memory-bound and/or decode), and the families.

    ``peers``: keep only these peers in each case (None: all). A family that fails to import
    or to list its cases is an error (in ``errors``), not fatal.
    """
    cases: list[BandwidthCase] = []
    families: list[Any] = []
    for family in family_modules():
        try:
            module = load_family(family)
            listed = module.bandwidth_cases() if memory or decode else []
        except Exception:
            errors.append(f"testing/bench/{family}.py:\n{traceback.format_exc()}")
            continue
        families.append(module)
        cases += [
            case
            if peers is None
            else replace(case, peers={k: v for k, v in case.peers.items() if k in peers})
            for case in listed
            if (only is None or case.kernel in only) and (decode if case.decode else memory)
        ]
    return cases, families


def upstream_peers(cases: list[BandwidthCase]) -> list[upstream.UpstreamPeer]:
    return [
        peer
        for case in cases
        for peer in case.peers.values()
        if isinstance(peer, upstream.UpstreamPeer)
    ]


def build_upstream(cases: list[BandwidthCase], t0: float) -> dict[str, str]:
    """Build every upstream module the cases need, in parallel: "built" or the error, by module.

    A failed build is printed in full on stderr; its rows show the peer as failed.
    """
    peers = upstream_peers(cases)
    if not peers:
        return {}
    results = upstream.build_peers(peers)
    status = {}
    for name, result in sorted(results.items()):
        if isinstance(result, Exception):
            print(f"\nERROR {result}", file=sys.stderr)
            status[name] = short_error(result, 200)
        else:
            status[name] = "built"
    failed = sum(value != "built" for value in status.values())
    progress(f"upstream SGLang: {len(status)} modules ready, {failed} failed to build", t0)
    return status


def build_peers_only(only: set[str] | None) -> int:
    """``--build-peers-only``: build and load every upstream module, build the launch floor."""
    source = upstream_source.current()
    if source is None:
        print(
            f"bench_jit_kernels: --build-peers-only: {upstream_source.NOT_GIVEN}", file=sys.stderr
        )
        return 2
    try:
        arch = get_jit_cuda_arch()
    except ArchError as error:
        print(f"bench_jit_kernels: --build-peers-only: {error}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    errors: list[str] = []
    cases, _ = collect_cases(only, memory=True, decode=True, errors=errors)
    print(f"upstream SGLang {source.version} from {source.jit_dir}, for {arch.sm}")
    status = build_upstream(cases, t0)
    peers = {peer.spec().name: peer for peer in upstream_peers(cases)}
    for name in [name for name, state in status.items() if state == "built"]:
        try:
            peers[name].load()  # no GPU needed: checks the library's exports
        except Exception as error:
            status[name] = short_error(error, 200)
    try:
        with build_only():
            launch_floor.floor_module()
        status["launch floor (ours)"] = "built"
    except Exception as error:
        status["launch floor (ours)"] = short_error(error, 200)
    for name, state in status.items():
        print(f"  {name}: {'built and loaded' if state == 'built' else 'FAILED: ' + state}")
    for error in errors:
        print(f"\nERROR {error}", file=sys.stderr)
    failed = [name for name, state in status.items() if state != "built"]
    print(f"{len(status) - len(failed)} of {len(status)} modules built")
    return 1 if failed or errors else 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
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
        "--skip-bandwidth",
        action="store_true",
        help="skip the bandwidth and decode tables (host overhead and warm load only)",
    )
    parser.add_argument(
        "--decode-only",
        action="store_true",
        help="only the decode rows and the launch floor (no copy, memory-bound rows, host "
        "overhead or warm load)",
    )
    parser.add_argument(
        "--peers",
        nargs="+",
        choices=PEERS,
        metavar="PEER",
        help=f"time only these peers ({', '.join(PEERS)}; default: all); the targets then "
        "compare with those alone",
    )
    parser.add_argument(
        "--sglang-src",
        metavar="DIR",
        help=f"upstream SGLang's unpacked wheel (or its sglang/kernels/jit folder): its JIT "
        f"kernels become the 'upstream' peer (default: ${upstream_source.SRC_ENV})",
    )
    parser.add_argument(
        "--build-peers-only",
        action="store_true",
        help="build the upstream modules and the launch-floor kernel, then exit (no GPU "
        "needed: the target is $TVM_FFI_CUDA_ARCH_LIST's or the GPU's)",
    )
    args = parser.parse_args(argv)
    if args.decode_only and args.skip_bandwidth:
        parser.error("--decode-only and --skip-bandwidth exclude each other")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    only = set(args.only) if args.only else None
    try:
        source = upstream_source.configure(args.sglang_src)
    except upstream_source.UpstreamSourceError as error:
        print(f"bench_jit_kernels: {error}", file=sys.stderr)
        return 2
    if args.build_peers_only:
        return build_peers_only(only)
    if not torch.cuda.is_available():
        print("bench_jit_kernels: needs a CUDA GPU", file=sys.stderr)
        return 2

    device = torch.cuda.get_device_name()
    print(f"device: {device}; L2 {l2_bytes() >> 20} MiB; timer: {args.timer}")
    print(
        "upstream SGLang: "
        + (f"{source.version} from {source.jit_dir}" if source else upstream_source.NOT_GIVEN)
    )
    copies: dict[str, float] = {}
    copy_gbps = None
    if not args.decode_only:
        copies = copy_bandwidth()
        copy_gbps = max(copies.values())
        print(
            f"D2D copy (1 GiB, read + write): eager loop {copies['loop']:.0f} GB/s, graph replay "
            f"{copies['graph']:.0f} GB/s; reference = {copy_gbps:.0f} GB/s"
        )
    print()

    t0 = time.perf_counter()
    errors: list[str] = []
    cases, families = collect_cases(
        only,
        peers=set(args.peers) if args.peers else None,
        memory=not (args.decode_only or args.skip_bandwidth),
        decode=not args.skip_bandwidth,
        errors=errors,
    )
    builds = build_upstream(cases, t0)
    rows: list[BandwidthRow] = []

    def run(selected: list[BandwidthCase], replay_iters: int | None, rounds: int = 1) -> None:
        for case in selected:
            try:
                rows.append(bench_case(case, copy_gbps, args.timer, replay_iters, rounds))
                digits = 2 if case.decode else 1
                progress(f"{case.kernel} {case.shape}: ours {rows[-1].ours_us:.{digits}f} us", t0)
            except Exception:
                errors.append(f"{case.kernel} {case.shape}:\n{traceback.format_exc()}")

    run([case for case in cases if not case.decode], None)
    floor: dict[str, float] = {}
    decode_cases = [case for case in cases if case.decode]
    if decode_cases and args.timer == "graph":  # a graph-replay figure: no loop timing of it
        try:
            floor = launch_floor.floor_us(
                lambda fn, inputs: time_graph(fn, inputs, (), replay_iters=DECODE_REPLAY_ITERS)
            )
            progress(
                "launch floor: " + ", ".join(f"{k} {us:.2f} us" for k, us in floor.items()), t0
            )
        except Exception:
            errors.append(f"launch floor:\n{traceback.format_exc()}")
    run(decode_cases, DECODE_REPLAY_ITERS // DECODE_ROUNDS, DECODE_ROUNDS)

    overheads: list[OverheadRow] = []
    for module in [] if args.skip_overhead or args.decode_only else families:
        try:
            ocases = module.overhead_cases()
        except Exception:
            errors.append(f"{module.__file__} overhead_cases():\n{traceback.format_exc()}")
            continue
        for ocase in ocases:
            if only and ocase.name.split()[0] not in only:
                continue
            try:
                overheads.append(bench_overhead(ocase))
            except Exception:
                errors.append(f"overhead {ocase.name}:\n{traceback.format_exc()}")

    memory_rows = [row for row in rows if not row.decode]
    decode_rows = [row for row in rows if row.decode]
    if memory_rows:
        print("\n".join(bandwidth_table(memory_rows)))
    if decode_rows:
        print("\n" + "\n".join(decode_table(decode_rows, floor)))
    if overheads:
        print("\n" + "\n".join(overhead_table(overheads, OVERHEAD_ROUNDS)))
    load_ms = None
    if not args.decode_only:
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
                    "upstream": {
                        "source": str(source.jit_dir) if source else None,
                        "version": source.version if source else None,
                        "modules": builds,
                    },
                    "launch_floor_us": floor,
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
