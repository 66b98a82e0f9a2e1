"""scale (fp16/bf16/fp32) and add_constant (int32): their registered sweeps and their cases for
``benchmarks/bench_jit_kernels.py`` (add3 has its own module, ``add3.py``)."""

from __future__ import annotations

from dataclasses import replace

import torch

from jit_kernel.add_constant import _jit_add_constant_module, add_constant
from jit_kernel.benchmark import marker
from jit_kernel.benchmark.utils import create_random
from jit_kernel.scale import _jit_scale_module, scale
from testing.bench import peers
from testing.bench.case import Axis, BandwidthCase, Call, Fn, OverheadCase, Sweep
from testing.bench.peers import upstream

SIZES_LOG2 = (24, 26, 28)
DECODE_SIZES_LOG2 = (12, 16)  # 16 rows of 256 and of 4096 elements


def _scale_out(src: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    return torch.mul(src, 1.5, out=out)


def _add_constant_out(src: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    return torch.add(src, 7, out=out)


def _scale_case(dtype: torch.dtype, log2: int) -> BandwidthCase:
    n = 1 << log2

    def make_inputs() -> tuple[torch.Tensor, torch.Tensor]:
        src = torch.randn(n, dtype=dtype, device="cuda")
        return src, torch.empty_like(src)

    def check(fn: Fn, inputs: tuple[torch.Tensor, torch.Tensor]) -> None:
        src, out = inputs
        torch.testing.assert_close(fn(src, out), torch.mul(src, 1.5), rtol=0, atol=0)

    return BandwidthCase(
        kernel="scale",
        shape=f"{str(dtype).removeprefix('torch.')} 2^{log2}",
        make_inputs=make_inputs,
        ours=lambda src, out: scale(src, 1.5, out=out),
        peers={
            "torch": _scale_out,
            "torch_compile": peers.compiled(_scale_out),
            "flashinfer": "FlashInfer has no scale op",
            "upstream": "upstream SGLang has no scale kernel",
        },
        bytes_moved=2 * n * torch.empty(0, dtype=dtype).element_size(),
        rotate_args=(0,),
        check=check,
    )


def _add_constant_case(log2: int) -> BandwidthCase:
    n = 1 << log2

    def make_inputs() -> tuple[torch.Tensor, torch.Tensor]:
        src = torch.randint(-(2**20), 2**20, (n,), dtype=torch.int32, device="cuda")
        return src, torch.empty_like(src)

    def check(fn: Fn, inputs: tuple[torch.Tensor, torch.Tensor]) -> None:
        src, out = inputs
        assert torch.equal(fn(src, out), src + 7)

    return BandwidthCase(
        kernel="add_constant",
        shape=f"int32 2^{log2}",
        make_inputs=make_inputs,
        ours=lambda src, out: add_constant(src, 7, out=out),
        peers={
            "torch": _add_constant_out,
            "torch_compile": peers.compiled(_add_constant_out),
            "flashinfer": "FlashInfer has no add_constant op",
            "upstream": upstream.add_constant(7),
        },
        bytes_moved=2 * n * 4,
        rotate_args=(0,),
        check=check,
    )


def bandwidth_cases() -> list[BandwidthCase]:
    cases = []
    for log2 in SIZES_LOG2:
        cases += [_scale_case(d, log2) for d in (torch.float16, torch.bfloat16, torch.float32)]
        cases.append(_add_constant_case(log2))
    for log2 in DECODE_SIZES_LOG2:
        decode = [_scale_case(torch.bfloat16, log2), _add_constant_case(log2)]
        cases += [replace(case, decode=True) for case in decode]
    return cases


def overhead_cases() -> list[OverheadCase]:
    cases = []
    for n in (4096, 1 << 20):
        module = _jit_add_constant_module(1)

        def make_int(n: int = n) -> tuple[torch.Tensor]:
            return (torch.randint(0, 100, (n,), dtype=torch.int32, device="cuda"),)

        def bare_add(x: torch.Tensor, _constant: int, module=module) -> torch.Tensor:
            out = torch.empty_like(x)  # the constant is compiled into the module
            module.add_constant(out, x)
            return out

        cases.append(
            OverheadCase(
                name=f"add_constant int32 {n}",
                make_inputs=make_int,
                wrapper=Call(add_constant, (1,)),
                bare=Call(bare_add, (1,)),
                torch_eager=Call(torch.add, (1,)),
            )
        )
    scale_module = _jit_scale_module()

    def bare_scale(x: torch.Tensor, factor: float) -> torch.Tensor:
        out = torch.empty_like(x)
        scale_module.scale(out, x, factor)
        return out

    cases.append(
        OverheadCase(
            name="scale bf16 4096",
            make_inputs=lambda: (torch.randn(4096, dtype=torch.bfloat16, device="cuda"),),
            wrapper=Call(scale, (2.0,)),
            bare=Call(bare_scale, (2.0,)),
            torch_eager=Call(torch.mul, (2.0,)),
        )
    )
    return cases


# --------------------------------------------------------------------------- registered sweeps
# registered/jit/benchmark/bench_{scale,add_constant}.py: ours (``jit``) against torch
# eager and torch.compile of the same expression, each returning a new tensor. Full sweeps
# locally (3 dtypes x 1K..16M elements; add_constant: int32 with odd sizes that miss the
# vectorised path); CI: bf16 at 4K, 64K and 4M elements (add_constant: 4K and 1M).

ADD_CONSTANT = 16  # a template argument of the kernel: one of the constants precompiled


def _scale(src: torch.Tensor, factor: float) -> torch.Tensor:
    return src * factor


def _add_constant(src: torch.Tensor) -> torch.Tensor:
    return src + ADD_CONSTANT


_SWEEP_FNS = {
    "scale": {"jit": scale, "torch": _scale},
    "add_constant": {"jit": lambda src: add_constant(src, ADD_CONSTANT), "torch": _add_constant},
}


def _sweep_fn(kernel: str, impl: str) -> Fn:
    if impl == "torch_compile":
        return peers.compiled(_SWEEP_FNS[kernel]["torch"])
    return _SWEEP_FNS[kernel][impl]


def _scale_cell(impl: str, dtype: torch.dtype, size: int) -> marker.BenchResult:
    src = create_random(size, dtype=dtype)
    return marker.do_bench(
        _sweep_fn("scale", impl),
        input_args=(src, 2.0),
        # src is read: rotate clones of it; the factor is a scalar and is shared.
        graph_clone_args=(0,),
        # Defaults: memory_args="all" counts src, memory_output="out" the returned tensor.
    )


def _add_constant_cell(impl: str, size: int) -> marker.BenchResult:
    src = create_random(size, dtype=torch.int32)
    return marker.do_bench(_sweep_fn("add_constant", impl), input_args=(src,))


_IMPLS = ("jit", "torch", "torch_compile")
_FLOAT_DTYPES = Axis(
    "dtype", [torch.bfloat16, torch.float16, torch.float32], ci_vals=[torch.bfloat16]
)
_POWERS_OF_4 = Axis("size", [2**n for n in range(10, 25, 2)], ci_vals=[2**12, 2**16, 2**22])
SWEEPS = {
    "scale": Sweep((_FLOAT_DTYPES, _POWERS_OF_4), _IMPLS, _scale_cell),
    "add_constant": Sweep(
        (
            Axis(
                "size",
                [128, 1024, 1025, 4096, 4097, 65536, 2**20, 2**22, 2**24],
                ci_vals=[4096, 2**20],
            ),
        ),
        _IMPLS,
        _add_constant_cell,
    ),
}
