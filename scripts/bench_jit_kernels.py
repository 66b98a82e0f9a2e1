"""Bandwidth, launch-overhead and warm-load benchmark for the scale and add_constant JIT kernels.

Run on a GPU from the repo root::

    python scripts/bench_jit_kernels.py [--sizes 24 26 28] [--json out.json] [--check]

Measures in one run:

* device-to-device copy bandwidth: ``dst.copy_(src)`` of a >= 1 GiB buffer (bytes read + written),
  the reference every kernel is compared with;
* ``scale`` (fp16/bf16/fp32) and ``add_constant`` (int32) at 2^24.. elements against torch eager
  (``torch.mul``/``torch.add`` with ``out=``) and against ``copy_`` of the same tensors. Every
  function is timed the same way, over input sets that together exceed L2 several times:
  ``--timer graph`` (default) replays a CUDA graph of back-to-back calls through the project's own
  ``jit_kernel.benchmark.marker.do_bench``, so launch gaps are not counted (METHOD: "for many
  small launches, capture a graph"); ``--timer loop`` records CUDA events around a Python loop of
  eager calls, which also counts the launch gaps of each call;
* warm ``load_jit``: a fresh process (CUDA context already created, as any caller holding a CUDA
  tensor has) whose disk cache is warm calls ``_jit_scale_module``, then ``load_jit`` directly;
* per-call overhead: wall time of a call on a 1-element tensor, ours vs torch (median over 9
  interleaved rounds of 200 calls each).

``--check`` exits 1 unless: every kernel reaches >= 90% of the copy bandwidth and is no slower
than torch eager (within 2% noise), warm load < 30 ms, per-call overhead <= torch's (+10%).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from jit_kernel.add_constant import add_constant  # noqa: E402
from jit_kernel.benchmark.marker import do_bench  # noqa: E402
from jit_kernel.scale import scale  # noqa: E402

GB = 1e9
COPY_BYTES = 1 << 30  # 1 GiB source buffer for the reference copy
BW_TARGET = 0.90
WARM_LOAD_TARGET_MS = 30.0


@dataclass
class Row:
    """One measured kernel at one size."""

    kernel: str
    dtype: str
    elements: int
    ours_us: float
    torch_us: float
    ours_gbps: float
    torch_gbps: float
    copy_ratio: float  # ours bandwidth / reference (1 GiB) copy bandwidth
    same_size_copy_ratio: float  # ours bandwidth / copy_ of the same tensors
    speedup: float  # torch time / our time


def l2_bytes() -> int:
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return int(getattr(props, "L2_cache_size", 50 << 20))


def time_rotating(fn: Callable[[int], object], num_sets: int, min_ms: float = 50.0) -> float:
    """Median seconds per call of ``fn(i % num_sets)`` over back-to-back launches."""
    for i in range(max(3, num_sets)):
        fn(i % num_sets)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn(0)
    end.record()
    end.synchronize()
    iters = max(num_sets, min(2000, math.ceil(min_ms / max(start.elapsed_time(end), 1e-3))))
    samples = []
    for _ in range(5):
        start.record()
        for i in range(iters):
            fn(i % num_sets)
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 1e3 / iters)
    return statistics.median(samples)


def time_graph(
    fn: Callable[[torch.Tensor, torch.Tensor], object], src: torch.Tensor, out: torch.Tensor
) -> float:
    """Median seconds per call of ``fn(src, out)`` from CUDA-graph replays (our ``do_bench``).

    do_bench clones ``(src, out)`` into as many input sets as its L2 rule needs and cycles the
    graph's calls through them, so the working set cannot stay L2-resident.
    """
    result = do_bench(
        fn,
        input_args=(src, out),
        metrics=(0.5,),
        memory_args=None,
        memory_output=None,
        disable_log_bandwidth=True,
    )
    return result.times[0]


def timed(
    timer: str,
    fn: Callable[[torch.Tensor, torch.Tensor], object],
    srcs: list[torch.Tensor],
    outs: list[torch.Tensor],
) -> float:
    """Seconds per call of ``fn`` with the chosen timer."""
    if timer == "graph":
        return time_graph(fn, srcs[0], outs[0])
    return time_rotating(lambda i: fn(srcs[i], outs[i]), len(srcs))


def copy_bandwidth() -> dict[str, float]:
    """GB/s of ``dst.copy_(src)`` on a 1 GiB buffer (bytes read + written), by both timers.

    The reference is the faster of the two: a copy captured in a CUDA graph becomes a memcpy
    node that may run on a copy engine, slower than the kernel an eager ``copy_`` launches, and
    the hardware limit is the best copy we can measure.
    """
    src = torch.empty(COPY_BYTES, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    loop = time_rotating(lambda _: dst.copy_(src), 1, min_ms=200.0)
    graph = time_graph(lambda s, d: d.copy_(s), src, dst)
    return {"loop": 2 * COPY_BYTES / loop / GB, "graph": 2 * COPY_BYTES / graph / GB}


def make_sets(
    elements: int, dtype: torch.dtype, num_sets: int | None = None
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """(src, out) pairs; by default enough that a rotation over them exceeds 4x the L2 size."""
    pair_bytes = 2 * elements * torch.empty(0, dtype=dtype).element_size()
    if num_sets is None:
        num_sets = max(2, math.ceil(4 * l2_bytes() / pair_bytes))
    if dtype.is_floating_point:
        srcs = [torch.randn(elements, dtype=dtype, device="cuda") for _ in range(num_sets)]
    else:
        srcs = [
            torch.randint(-(2**20), 2**20, (elements,), dtype=dtype, device="cuda")
            for _ in range(num_sets)
        ]
    outs = [torch.empty_like(s) for s in srcs]
    return srcs, outs


def bench_kernel(name: str, dtype: torch.dtype, elements: int, copy_gbps: float, timer: str) -> Row:
    srcs, outs = make_sets(elements, dtype) if timer == "loop" else make_sets(elements, dtype, 1)
    if name == "scale":

        def ours(src: torch.Tensor, out: torch.Tensor) -> object:
            return scale(src, 1.5, out=out)

        def ref(src: torch.Tensor, out: torch.Tensor) -> object:
            return torch.mul(src, 1.5, out=out)
    else:

        def ours(src: torch.Tensor, out: torch.Tensor) -> object:
            return add_constant(src, 7, out=out)

        def ref(src: torch.Tensor, out: torch.Tensor) -> object:
            return torch.add(src, 7, out=out)

    ours(srcs[0], outs[0])
    torch.cuda.synchronize()
    expected = ref(srcs[0], outs[0]).clone()
    torch.testing.assert_close(ours(srcs[0], outs[0]), expected, rtol=0, atol=0)
    t_ours = timed(timer, ours, srcs, outs)
    t_ref = timed(timer, ref, srcs, outs)
    t_copy = timed(timer, lambda s, o: o.copy_(s), srcs, outs)
    moved = 2 * elements * srcs[0].element_size()
    return Row(
        kernel=name,
        dtype=str(dtype).removeprefix("torch."),
        elements=elements,
        ours_us=t_ours * 1e6,
        torch_us=t_ref * 1e6,
        ours_gbps=moved / t_ours / GB,
        torch_gbps=moved / t_ref / GB,
        copy_ratio=moved / t_ours / GB / copy_gbps,
        same_size_copy_ratio=t_copy / t_ours,
        speedup=t_ref / t_ours,
    )


WARM_LOAD_CHILD = """
import time, torch
torch.empty(1, device="cuda")  # a caller always has CUDA up already: keep context creation out
from jit_kernel.scale import _jit_scale_module
from jit_kernel.utils import load_jit, make_cpp_args, is_arch_support_pdl
t0 = time.perf_counter()
_jit_scale_module(torch.float16)
t1 = time.perf_counter()
args = make_cpp_args(torch.bfloat16, is_arch_support_pdl())
load_jit("scale", *args, cuda_files=["elementwise/scale.cuh"],
         cuda_wrappers=[("scale", f"scale<{args}>")])
t2 = time.perf_counter()
print((t1 - t0) * 1e3, (t2 - t1) * 1e3)
"""


def warm_load_ms(repeats: int = 5) -> tuple[float, float]:
    """Median ms of the first ``_jit_scale_module`` / ``load_jit`` call in a fresh process."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    first, direct = [], []
    for _ in range(repeats):
        done = subprocess.run(
            [sys.executable, "-c", WARM_LOAD_CHILD],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO_ROOT,
            check=True,
        )
        a, b = done.stdout.split()[-2:]
        first.append(float(a))
        direct.append(float(b))
    return statistics.median(first), statistics.median(direct)


def per_call_us(fn: Callable[[], object], calls: int) -> float:
    """Median wall-clock microseconds of one call (launch included, no sync)."""
    samples = []
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t0)
    torch.cuda.synchronize()
    return statistics.median(samples) / 1e3


def overheads(rounds: int = 9, calls: int = 200) -> dict[str, float]:
    """Per-call wall time of each variant: median over ``rounds`` interleaved rounds.

    Interleaving ours and torch's calls round by round exposes both to the same host noise
    (a VM's timer and scheduler jitter easily move one long run by 2x).
    """
    x = torch.randn(1, device="cuda", dtype=torch.float16)
    i = torch.zeros(1, device="cuda", dtype=torch.int32)
    xo, io = torch.empty_like(x), torch.empty_like(i)
    variants: dict[str, Callable[[], object]] = {
        "scale": lambda: scale(x, 2.0),
        "torch.mul": lambda: torch.mul(x, 2.0),
        "scale(out=)": lambda: scale(x, 2.0, out=xo),
        "torch.mul(out=)": lambda: torch.mul(x, 2.0, out=xo),
        "add_constant": lambda: add_constant(i, 7),
        "torch.add": lambda: torch.add(i, 7),
        "add_constant(out=)": lambda: add_constant(i, 7, out=io),
        "torch.add(out=)": lambda: torch.add(i, 7, out=io),
    }
    for fn in variants.values():  # warm-up
        for _ in range(50):
            fn()
    torch.cuda.synchronize()
    per_round: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            per_round[name].append(per_call_us(fn, calls))
    return {name: statistics.median(values) for name, values in per_round.items()}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[24, 26, 28],
        metavar="LOG2",
        help="element counts as powers of two (default: 24 26 28)",
    )
    parser.add_argument("--json", type=Path, help="also write all figures to this JSON file")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument(
        "--timer",
        choices=("graph", "loop"),
        default="graph",
        help="graph: CUDA-graph replay via do_bench (default); loop: events around eager calls",
    )
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("bench_jit_kernels: needs a CUDA GPU", file=sys.stderr)
        return 2

    device = torch.cuda.get_device_name()
    copies = copy_bandwidth()
    copy_gbps = max(copies.values())
    print(f"device: {device}; L2 {l2_bytes() >> 20} MiB; timer: {args.timer}")
    print(
        f"D2D copy bandwidth (1 GiB, read + write): eager loop {copies['loop']:.0f} GB/s, "
        f"graph replay {copies['graph']:.0f} GB/s; reference = the faster"
    )
    print(f"reference copy bandwidth: {copy_gbps:.0f} GB/s\n")

    rows: list[Row] = []
    cases = [("scale", d) for d in (torch.float16, torch.bfloat16, torch.float32)]
    cases.append(("add_constant", torch.int32))
    for log2 in args.sizes:
        for name, dtype in cases:
            rows.append(bench_kernel(name, dtype, 1 << log2, copy_gbps, args.timer))
            torch.cuda.empty_cache()

    header = (
        f"{'kernel':<13}{'dtype':<10}{'elements':>10}{'ours us':>10}{'torch us':>10}"
        f"{'ours GB/s':>11}{'torch GB/s':>12}{'ours/copy':>11}{'/same-size':>11}{'vs torch':>10}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r.kernel:<13}{r.dtype:<10}{'2^' + str(int(math.log2(r.elements))):>10}"
            f"{r.ours_us:>10.1f}{r.torch_us:>10.1f}{r.ours_gbps:>11.0f}{r.torch_gbps:>12.0f}"
            f"{r.copy_ratio:>11.1%}{r.same_size_copy_ratio:>11.1%}{r.speedup:>9.2f}x"
        )

    load_first, load_direct = warm_load_ms()
    print(
        f"\nwarm load (fresh process, disk cache warm): _jit_scale_module {load_first:.1f} ms, "
        f"load_jit {load_direct:.1f} ms"
    )

    calls = overheads()
    print("\nper-call wall time, 1-element tensor (median of 9 interleaved rounds x 200 calls):")
    for label, us in calls.items():
        print(f"  {label:<20}{us:>8.2f} us")

    failures = []
    for r in rows:
        if r.copy_ratio < BW_TARGET:
            failures.append(
                f"{r.kernel} {r.dtype} 2^{int(math.log2(r.elements))}: "
                f"{r.copy_ratio:.1%} of copy bandwidth < {BW_TARGET:.0%}"
            )
        if r.speedup < 0.98:
            failures.append(
                f"{r.kernel} {r.dtype} 2^{int(math.log2(r.elements))}: "
                f"slower than torch ({r.speedup:.2f}x)"
            )
    if max(load_first, load_direct) >= WARM_LOAD_TARGET_MS:
        failures.append(
            f"warm load {max(load_first, load_direct):.1f} ms >= {WARM_LOAD_TARGET_MS} ms"
        )
    for ours, ref in [
        ("scale", "torch.mul"),
        ("scale(out=)", "torch.mul(out=)"),
        ("add_constant", "torch.add"),
        ("add_constant(out=)", "torch.add(out=)"),
    ]:
        if calls[ours] > calls[ref] * 1.10:
            failures.append(f"per-call {ours} {calls[ours]:.2f} us > {ref} {calls[ref]:.2f} us")
    print(
        "\n"
        + ("all targets met" if not failures else "targets missed:\n  " + "\n  ".join(failures))
    )

    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "device": device,
                    "copy_gbps": copy_gbps,
                    "copy_gbps_by_timer": copies,
                    "rows": [asdict(r) for r in rows],
                    "warm_load_ms": {"_jit_scale_module": load_first, "load_jit": load_direct},
                    "per_call_us": calls,
                    "failures": failures,
                },
                indent=2,
            )
        )
    return 1 if (args.check and failures) else 0


if __name__ == "__main__":
    sys.exit(main())
