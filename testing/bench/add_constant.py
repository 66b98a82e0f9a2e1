"""add_constant (``out = src + constant``, int32; the constant is a template argument of the
kernel): how every harness measures and checks it.

``SWEEPS["add_constant"]``: ``registered/jit/benchmark/bench_add_constant.py``, ours (``jit``,
constant 16) against torch eager (``src + 16``) and ``torch.compile`` of it, each returning a
new tensor; full sweep 128..16M elements with odd sizes that miss the vectorised path, CI 4K
and 1M. Bytes per call: src read, the returned tensor written (do_bench's defaults).

``bandwidth_cases()``: ``benchmarks/bench_jit_kernels.py`` at 2^24..2^28 elements (constant 7,
``out=`` given) against copy bandwidth, torch eager, ``torch.compile`` and upstream SGLang
(FlashInfer has no add_constant), then 4096 and 65536 elements (decode). ``overhead_cases()``:
host time per call at 4096 and 1M elements.
"""

from __future__ import annotations

import torch

from jit_kernel.add_constant import _jit_add_constant_module, add_constant
from jit_kernel.benchmark import marker
from jit_kernel.benchmark.utils import create_random
from testing.bench import peers
from testing.bench.case import Axis, BandwidthCase, Call, Fn, OverheadCase, Sweep, implementation
from testing.bench.peers import upstream

SIZES_LOG2 = (24, 26, 28)
DECODE_SIZES_LOG2 = (12, 16)
SWEEP_CONSTANT = 16  # one of the constants jit_kernel.add_constant precompiles


def _torch_add_constant_out(src: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    return torch.add(src, 7, out=out)


def _check(fn: Fn, inputs: tuple[torch.Tensor, torch.Tensor]) -> None:
    src, out = inputs
    assert torch.equal(fn(src, out), src + 7)


def _case(log2: int, decode: bool) -> BandwidthCase:
    n = 1 << log2

    def make_inputs() -> tuple[torch.Tensor, torch.Tensor]:
        src = torch.randint(-(2**20), 2**20, (n,), dtype=torch.int32, device="cuda")
        return src, torch.empty_like(src)

    return BandwidthCase(
        kernel="add_constant",
        shape=f"int32 2^{log2}",
        make_inputs=make_inputs,
        ours=lambda src, out: add_constant(src, 7, out=out),
        peers={
            "torch": _torch_add_constant_out,
            "torch_compile": peers.compiled(_torch_add_constant_out),
            "flashinfer": "FlashInfer has no add_constant op",
            "upstream": upstream.add_constant(7),
        },
        bytes_moved=2 * n * 4,
        rotate_args=(0,),
        check=_check,
        decode=decode,
        dtype=torch.int32,
    )


def bandwidth_cases() -> list[BandwidthCase]:
    cases = [_case(log2, decode=False) for log2 in SIZES_LOG2]
    return cases + [_case(log2, decode=True) for log2 in DECODE_SIZES_LOG2]


def overhead_cases() -> list[OverheadCase]:
    module = _jit_add_constant_module(1)

    def bare(x: torch.Tensor, _constant: int) -> torch.Tensor:
        out = torch.empty_like(x)  # the constant is compiled into the module
        module.add_constant(out, x)
        return out

    def case(n: int) -> OverheadCase:
        return OverheadCase(
            name=f"add_constant int32 {n}",
            make_inputs=lambda: (torch.randint(0, 100, (n,), dtype=torch.int32, device="cuda"),),
            wrapper=Call(add_constant, (1,)),
            bare=Call(bare, (1,)),
            torch_eager=Call(torch.add, (1,)),
        )

    return [case(4096), case(1 << 20)]


def torch_add_constant(src: torch.Tensor) -> torch.Tensor:
    return src + SWEEP_CONSTANT


def _ours(src: torch.Tensor) -> torch.Tensor:
    return add_constant(src, SWEEP_CONSTANT)


def _cell(impl: str, size: int) -> marker.BenchResult:
    src = create_random(size, dtype=torch.int32)
    return marker.do_bench(implementation(impl, _ours, torch_add_constant), input_args=(src,))


SWEEPS = {
    "add_constant": Sweep(
        (
            Axis(
                "size",
                [128, 1024, 1025, 4096, 4097, 65536, 2**20, 2**22, 2**24],
                ci_vals=[4096, 2**20],
            ),
        ),
        ("jit", "torch", "torch_compile"),
        _cell,
    )
}
