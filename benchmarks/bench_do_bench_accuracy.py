"""Check marker.do_bench against independent measurements on the current GPU.

1. Median latency vs ``triton.testing.do_bench_cudagraph`` (pass: within 5%). Both time the
   same function; do_bench runs without input rotation (``graph_clone_args=None``) so that both
   see the same cache state, except for the large copy, where L2 cannot matter.
2. Bandwidth of a 256 MB device copy via do_bench vs CUDA events around a plain loop of
   copies (pass: within 10%).
3. Repeatability: 5 do_bench runs of the same function, ``max/min - 1`` of the medians
   (pass: under 3%).

Usage: ``python -m benchmarks.bench_do_bench_accuracy`` (exit status 1 if a check fails).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import torch

from jit_kernel.benchmark.marker import do_bench

MB = 1 << 20
TRITON_TOLERANCE = 0.05
COPY_TOLERANCE = 0.10
REPEAT_TOLERANCE = 0.03
REPEATS = 5


def triton_median_s(fn: Callable[[], object]) -> float:
    """Median seconds per call from triton's CUDA-graph timer (on a side stream, as it needs)."""
    import triton.testing

    with torch.cuda.stream(torch.cuda.Stream()):
        fn()
        milliseconds = triton.testing.do_bench_cudagraph(fn, rep=100, return_mode="median")
    return milliseconds / 1e3


def direct_copy_gbps(dst: torch.Tensor, src: torch.Tensor, iters: int = 50) -> float:
    """Copy bandwidth (read + write bytes, 1e9 bytes/s) from CUDA events around a plain loop."""
    for _ in range(5):
        dst.copy_(src)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        dst.copy_(src)
    end.record()
    torch.cuda.synchronize()
    seconds = start.elapsed_time(end) / 1e3
    return 2 * src.nbytes * iters / seconds / 1e9


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main() -> int:
    if not torch.cuda.is_available():
        print("error: this script needs a CUDA device", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    props = torch.cuda.get_device_properties(0)
    print(f"device: {props.name}, L2 {props.L2_cache_size / MB:.0f} MiB, torch {torch.__version__}")
    failures = 0
    rows: list[tuple[str, str, str, str, str]] = []

    big_src = torch.randn(64 * MB, device="cuda")  # 256 MB fp32
    big_dst = torch.empty_like(big_src)
    x_4m = torch.randn(4 * MB, device="cuda", dtype=torch.bfloat16)  # 8 MB
    x_64k = torch.randn(64 * 1024, device="cuda", dtype=torch.bfloat16)
    x_16m = torch.randn(16 * MB, device="cuda")  # 64 MB fp32

    # 1. do_bench vs triton.testing.do_bench_cudagraph (median).
    cases = [
        ("copy 256 MB fp32", torch.Tensor.copy_, (big_dst, big_src), (1,)),
        ("x*2 fp32 16M (64 MB)", torch.mul, (x_16m, 2.0), None),
        ("x*2 bf16 4M (8 MB)", torch.mul, (x_4m, 2.0), None),
        ("x*2 bf16 64K (128 KB)", torch.mul, (x_64k, 2.0), None),
    ]
    for name, fn, args, clones in cases:
        ours = do_bench(fn, input_args=args, graph_clone_args=clones, metrics=(0.5,)).latency
        theirs = triton_median_s(lambda fn=fn, args=args: fn(*args))
        ratio = ours / theirs
        ok = abs(ratio - 1) <= TRITON_TOLERANCE
        failures += not ok
        rows.append(
            (
                f"vs triton: {name}",
                f"{ours * 1e6:.3f} us",
                f"{theirs * 1e6:.3f} us",
                f"{ratio:.4f}",
                verdict(ok),
            )
        )

    # 2. Copy bandwidth: do_bench's GB/s column vs CUDA events around plain copies.
    result = do_bench(
        torch.Tensor.copy_,
        input_args=(big_dst, big_src),
        graph_clone_args=(1,),
        memory_args=(big_src,),
        memory_output=(big_dst,),
    )
    direct = direct_copy_gbps(big_dst, big_src)
    ratio = result.bandwidth_gbps / direct
    ok = abs(ratio - 1) <= COPY_TOLERANCE
    failures += not ok
    rows.append(
        (
            "copy bandwidth 256 MB",
            f"{result.bandwidth_gbps:.1f} GB/s",
            f"{direct:.1f} GB/s",
            f"{ratio:.4f}",
            verdict(ok),
        )
    )

    # 3. Repeatability of the median over 5 runs (default settings: L2-sized rotation).
    repeat_cases = [
        ("copy 256 MB fp32", torch.Tensor.copy_, (big_dst, big_src), (1,)),
        ("x*2 bf16 4M (8 MB)", torch.mul, (x_4m, 2.0), (0,)),
        ("x*2 bf16 64K (128 KB)", torch.mul, (x_64k, 2.0), (0,)),
    ]
    for name, fn, args, clones in repeat_cases:
        medians = [
            do_bench(fn, input_args=args, graph_clone_args=clones).latency for _ in range(REPEATS)
        ]
        spread = max(medians) / min(medians) - 1
        ok = spread < REPEAT_TOLERANCE
        failures += not ok
        rows.append(
            (
                f"repeat x{REPEATS}: {name}",
                f"{min(medians) * 1e6:.3f} us",
                f"{max(medians) * 1e6:.3f} us",
                f"{spread * 100:.2f}%",
                verdict(ok),
            )
        )

    headers = ("check", "do_bench / min", "reference / max", "ratio / spread", "result")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    print("=" * len(line))
    print(line)
    print("-" * len(line))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    print("=" * len(line))
    print(
        f"tolerances: triton median {TRITON_TOLERANCE:.0%}, copy bandwidth "
        f"{COPY_TOLERANCE:.0%}, repeat spread {REPEAT_TOLERANCE:.0%}; {failures} failed"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
