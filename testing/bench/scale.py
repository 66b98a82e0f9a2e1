"""scale (``out = src * factor``): how every harness measures and checks it.

``SWEEPS["scale"]``: ``registered/jit/benchmark/bench_scale.py``, ours (``jit``) against torch
eager (``src * factor``) and ``torch.compile`` of it, each returning a new tensor; full sweep
3 dtypes x 1K..16M elements, CI bf16 at 4K, 64K and 4M. Bytes per call: src read, the returned
tensor written (do_bench's defaults).

``bandwidth_cases()``: ``benchmarks/bench_jit_kernels.py`` at 2^24..2^28 elements (fp16, bf16,
fp32; ``out=`` given) against copy bandwidth, torch eager and ``torch.compile`` (FlashInfer and
upstream SGLang have no scale), then 16 rows of 256 and of 4096 bf16 elements (decode).
``overhead_cases()``: host time per call at 4096 bf16 elements.
"""

from __future__ import annotations

import torch

from jit_kernel.benchmark import marker
from jit_kernel.benchmark.utils import create_random
from jit_kernel.scale import _jit_scale_module, scale
from testing.bench import peers
from testing.bench.case import Axis, BandwidthCase, Call, Fn, OverheadCase, Sweep, implementation

SIZES_LOG2 = (24, 26, 28)
DECODE_SIZES_LOG2 = (12, 16)  # 16 rows of 256 and of 4096 elements


def torch_scale(src: torch.Tensor, factor: float) -> torch.Tensor:
    return src * factor


def _torch_scale_out(src: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    return torch.mul(src, 1.5, out=out)


def _check(fn: Fn, inputs: tuple[torch.Tensor, torch.Tensor]) -> None:
    src, out = inputs
    torch.testing.assert_close(fn(src, out), torch.mul(src, 1.5), rtol=0, atol=0)


def _case(dtype: torch.dtype, log2: int, decode: bool) -> BandwidthCase:
    n = 1 << log2

    def make_inputs() -> tuple[torch.Tensor, torch.Tensor]:
        src = torch.randn(n, dtype=dtype, device="cuda")
        return src, torch.empty_like(src)

    return BandwidthCase(
        kernel="scale",
        shape=f"{str(dtype).removeprefix('torch.')} 2^{log2}",
        make_inputs=make_inputs,
        ours=lambda src, out: scale(src, 1.5, out=out),
        peers={
            "torch": _torch_scale_out,
            "torch_compile": peers.compiled(_torch_scale_out),
            "flashinfer": "FlashInfer has no scale op",
            "upstream": "upstream SGLang has no scale kernel",
        },
        bytes_moved=2 * n * torch.empty(0, dtype=dtype).element_size(),
        rotate_args=(0,),
        check=_check,
        decode=decode,
        dtype=dtype,
    )


def bandwidth_cases() -> list[BandwidthCase]:
    dtypes = (torch.float16, torch.bfloat16, torch.float32)
    cases = [_case(dtype, log2, decode=False) for log2 in SIZES_LOG2 for dtype in dtypes]
    return cases + [_case(torch.bfloat16, log2, decode=True) for log2 in DECODE_SIZES_LOG2]


def overhead_cases() -> list[OverheadCase]:
    module = _jit_scale_module()

    def bare(x: torch.Tensor, factor: float) -> torch.Tensor:
        out = torch.empty_like(x)
        module.scale(out, x, factor)
        return out

    return [
        OverheadCase(
            name="scale bf16 4096",
            make_inputs=lambda: (torch.randn(4096, dtype=torch.bfloat16, device="cuda"),),
            wrapper=Call(scale, (2.0,)),
            bare=Call(bare, (2.0,)),
            torch_eager=Call(torch.mul, (2.0,)),
        )
    ]


def _cell(impl: str, dtype: torch.dtype, size: int) -> marker.BenchResult:
    src = create_random(size, dtype=dtype)
    return marker.do_bench(
        implementation(impl, scale, torch_scale),
        input_args=(src, 2.0),
        # src is read: rotate clones of it; the factor is a scalar and is shared.
        graph_clone_args=(0,),
        # Defaults: memory_args="all" counts src, memory_output="out" the returned tensor.
    )


SWEEPS = {
    "scale": Sweep(
        (
            Axis("dtype", [torch.bfloat16, torch.float16, torch.float32], ci_vals=[torch.bfloat16]),
            Axis("size", [2**n for n in range(10, 25, 2)], ci_vals=[2**12, 2**16, 2**22]),
        ),
        ("jit", "torch", "torch_compile"),
        _cell,
    )
}
