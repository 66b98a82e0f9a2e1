"""add3 (``out = a + b + c``): how every harness measures and checks it.

``SWEEPS["add3"]``: ``registered/jit/benchmark/bench_add3.py``, ours (``jit``) against torch
eager (``a + b + c``: two kernels) and ``torch.compile`` of it (one fused kernel); full sweep
3 dtypes x 1K..16M elements, CI bf16 at 4K, 64K and 4M. Bytes per call: a, b, c read, the
returned tensor written (do_bench's defaults).

``bandwidth_cases()``: ``benchmarks/bench_jit_kernels.py`` at 2^24..2^28 elements (bf16, fp32)
against copy bandwidth and the peers (``out=`` given), then 16 rows of 256 and of 4096 bf16
elements (decode). ``overhead_cases()``: host time per call at 4096 bf16 elements.
"""

from __future__ import annotations

import torch

from jit_kernel.add3 import _jit_add3_module, add3
from jit_kernel.benchmark import marker
from jit_kernel.benchmark.utils import create_random
from testing.bench import peers
from testing.bench.case import Axis, BandwidthCase, Fn, OverheadCase, Sweep, implementation
from testing.bench.peers import upstream

SIZES_LOG2 = (24, 26, 28)
DECODE_SIZES_LOG2 = (12, 16)


def torch_add3(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    return a + b + c  # eager: two kernels; torch.compile fuses them into one


def _torch_add3_out(a, b, c, out: torch.Tensor) -> torch.Tensor:
    return torch.add(a + b, c, out=out)


def _check(fn: Fn, inputs: tuple[torch.Tensor, ...]) -> None:
    # Ours rounds once (exact, see test_add3.py); upstream's bf16 peer rounds a + b, then the
    # sum: each rounding errs by at most half a unit in the last place of its result, so a
    # bound relative to |a + b| + |a + b + c| (a fixed atol fails where they cancel).
    a, b, c, out = inputs
    partial = a.float() + b.float()
    exact = partial + c.float()
    ulp = torch.finfo(a.dtype).eps  # one unit in the last place, relative to 1
    bound = ulp * (partial.abs() + exact.abs()) + torch.finfo(a.dtype).tiny
    error = (fn(a, b, c, out).float() - exact).abs()
    if not bool(torch.all(error <= bound)):
        worst = int(torch.argmax(error - bound))
        raise AssertionError(
            f"add3 element {worst}: error {error[worst].item():.3g} > bound "
            f"{bound[worst].item():.3g} (a + b + c = {exact[worst].item():.6g})"
        )


def _case(dtype: torch.dtype, log2: int, decode: bool) -> BandwidthCase:
    n = 1 << log2

    def make_inputs() -> tuple[torch.Tensor, ...]:
        a, b, c = (torch.randn(n, dtype=dtype, device="cuda") for _ in range(3))
        return a, b, c, torch.empty_like(a)

    return BandwidthCase(
        kernel="add3",
        shape=f"{str(dtype).removeprefix('torch.')} 2^{log2}",
        make_inputs=make_inputs,
        ours=lambda a, b, c, out: add3(a, b, c, out=out),
        peers={
            "torch": _torch_add3_out,
            "torch_compile": peers.compiled(_torch_add3_out),
            "flashinfer": "FlashInfer has no add3 op",
            "upstream": upstream.add3(dtype),
        },
        bytes_moved=4 * n * torch.empty(0, dtype=dtype).element_size(),
        rotate_args=(0, 1, 2),
        check=_check,
        decode=decode,
        dtype=dtype,
    )


def bandwidth_cases() -> list[BandwidthCase]:
    cases = [
        _case(dtype, log2, decode=False)
        for log2 in SIZES_LOG2
        for dtype in (torch.bfloat16, torch.float32)
    ]
    return cases + [_case(torch.bfloat16, log2, decode=True) for log2 in DECODE_SIZES_LOG2]


def overhead_cases() -> list[OverheadCase]:
    module = _jit_add3_module()

    def bare(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        module.add3(out, a, b, c)
        return out

    return [
        OverheadCase(
            name="add3 bf16 4096",
            make_inputs=lambda: tuple(
                torch.randn(4096, dtype=torch.bfloat16, device="cuda") for _ in range(3)
            ),
            wrapper=add3,
            bare=bare,
            torch_eager=lambda a, b, c: torch.add(a + b, c),
        )
    ]


def _cell(impl: str, dtype: torch.dtype, size: int) -> marker.BenchResult:
    fn = implementation(impl, add3, torch_add3)
    a, b, c = (create_random(size, dtype=dtype) for _ in range(3))
    # a, b and c are read: rotate clones of them. The GB/s column counts them and the output.
    return marker.do_bench(fn, input_args=(a, b, c), graph_clone_args=(0, 1, 2))


SWEEPS = {
    "add3": Sweep(
        (
            Axis("dtype", [torch.bfloat16, torch.float16, torch.float32], ci_vals=[torch.bfloat16]),
            Axis("size", [2**n for n in range(10, 25, 2)], ci_vals=[2**12, 2**16, 2**22]),
        ),
        ("jit", "torch", "torch_compile"),
        _cell,
    )
}
