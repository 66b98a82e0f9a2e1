"""rmsnorm (``out = x * rsqrt(mean(x^2) + eps) * weight`` per row): how every harness measures
and checks it.

``SWEEPS["rmsnorm"]``: ``registered/jit/benchmark/bench_rmsnorm.py``. Lines: ``jit`` (ours),
``torch`` (eager ``torch.nn.functional.rms_norm``), ``torch_compile`` (the fp32 formula ours
computes) and ``flashinfer`` (``flashinfer.norm.rmsnorm``; N/A with the reason when FlashInfer
is not installed or fails). Bytes per call: x and weight read, the returned output written
(do_bench's defaults). Full sweep locally (decode to memory-bound sizes); CI: bf16, 16 and
16384 rows of 4096.

``bandwidth_cases()``: ``benchmarks/bench_jit_kernels.py`` at memory-bound sizes (bf16, and
16384 x 4096 fp16) against copy bandwidth and torch eager, ``torch.compile``, FlashInfer and
upstream SGLang; then decode batches (1-64 rows, bf16). ``bytes_moved``: every element read and
written once, plus the weight. ``overhead_cases()``: host time per call at 16 x 4096 bf16.
Importing this module needs no GPU.
"""

from __future__ import annotations

from typing import Any

import torch

from jit_kernel.benchmark import marker
from jit_kernel.benchmark.utils import create_random
from jit_kernel.rmsnorm import _jit_rmsnorm_module, rmsnorm
from testing.bench import peers
from testing.bench._norm import (
    BF16,
    EPS,
    IMPLS,
    ROW_SPECS,
    ROWS_AXES,
    assert_close,
    case_peers,
    fp32_rmsnorm,
    randn,
    short_dtype,
    size,
    torch_rmsnorm,
    weight,
)
from testing.bench.case import BandwidthCase, Call, OverheadCase, Sweep, implementation
from testing.bench.peers import upstream

DECODE_SHAPES = [(1, 4096), (16, 4096), (64, 4096), (16, 256), (16, 1024), (16, 8192)]


def _ours(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return rmsnorm(x, w, EPS)


def _check(fn: Any, inputs: tuple[Any, ...]) -> None:
    x, w = inputs
    assert_close(fn(x, w), fp32_rmsnorm(x, w))


def _case(rows: int, dim: int, dtype: torch.dtype, decode: bool) -> BandwidthCase:
    es = size(dtype)
    return BandwidthCase(
        kernel="rmsnorm",
        shape=f"{rows}x{dim} {short_dtype(dtype)}",
        make_inputs=lambda: (randn(rows, dim, dtype=dtype), weight(dim, dtype)),
        ours=_ours,
        bytes_moved=2 * rows * dim * es + dim * es,
        peers=case_peers(
            torch_rmsnorm,
            fp32_rmsnorm,
            peers.flashinfer_rmsnorm(EPS),
            upstream.rmsnorm(dim, dtype, EPS),
        ),
        rotate_args=(0,),
        check=_check,
        decode=decode,
        dtype=dtype,
    )


def bandwidth_cases() -> list[BandwidthCase]:
    cases = [_case(*spec, decode=False) for spec in ROW_SPECS]
    return cases + [_case(rows, dim, BF16, decode=True) for rows, dim in DECODE_SHAPES]


def overhead_cases() -> list[OverheadCase]:
    module = _jit_rmsnorm_module()

    def bare(x, w, eps):
        out = torch.empty_like(x)
        module.rmsnorm(out, x, w, eps)
        return out

    return [
        OverheadCase(
            name="rmsnorm 16x4096 bf16",
            make_inputs=lambda: (randn(16, 4096, dtype=BF16), weight(4096, BF16)),
            wrapper=Call(rmsnorm, (EPS,)),
            bare=Call(bare, (EPS,)),
            torch_eager=torch_rmsnorm,
        )
    ]


def _cell(impl: str, dtype: torch.dtype, hidden_size: int, num_rows: int) -> marker.BenchResult:
    x = create_random(num_rows, hidden_size, dtype=dtype)
    w = create_random(hidden_size, dtype=dtype)
    fn = implementation(
        impl,
        _ours,
        torch_rmsnorm,
        compiled=peers.compiled(fp32_rmsnorm),
        flashinfer=peers.flashinfer_rmsnorm(EPS),
        inputs=(x, w),
    )
    return marker.do_bench(
        fn,
        input_args=(x, w),
        graph_clone_args=(0,),  # rotate the input; the weight is small and stays cached
        # Defaults: memory_args="all" counts x and weight, memory_output="out" the result.
    )


SWEEPS = {"rmsnorm": Sweep(ROWS_AXES, IMPLS, _cell)}
