"""fused_add_rmsnorm (in place: ``residual += x; x = rmsnorm(residual) * weight``): how every
harness measures and checks it.

``SWEEPS["fused_add_rmsnorm"]``: ``registered/jit/benchmark/bench_fused_add_rmsnorm.py``.
Lines: ``jit`` (ours), ``torch`` (eager ``residual.add_`` + ``torch.nn.functional.rms_norm`` +
``copy_``), ``torch_compile`` (the fp32 formula ours computes) and ``flashinfer``
(``flashinfer.norm.fused_add_rmsnorm``; N/A with the reason when unavailable). Bytes per call:
x, residual and weight read; x and residual written. Full sweep locally; CI: bf16, 16 and
16384 rows of 4096.

``bandwidth_cases()``: ``benchmarks/bench_jit_kernels.py`` at the memory-bound sizes of
rmsnorm (bf16, and 16384 x 4096 fp16), then 16 and 64 rows of 4096 bf16 (decode), against
torch eager, ``torch.compile``, FlashInfer and upstream SGLang. ``overhead_cases()``: host time
per call at 16 x 4096 bf16. Importing this module needs no GPU.
"""

from __future__ import annotations

from typing import Any

import torch

from jit_kernel.benchmark import marker
from jit_kernel.benchmark.utils import create_random
from jit_kernel.fused_add_rmsnorm import _jit_fused_add_rmsnorm_module, fused_add_rmsnorm
from testing import references
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
    weight,
)
from testing.bench.case import BandwidthCase, Call, OverheadCase, Sweep, implementation
from testing.bench.peers import upstream

DECODE_SHAPES = [(16, 4096), (64, 4096)]


def _ours(x: torch.Tensor, residual: torch.Tensor, w: torch.Tensor) -> None:
    fused_add_rmsnorm(x, residual, w, EPS)


def torch_fused_add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, w: torch.Tensor) -> None:
    residual.add_(x)
    x.copy_(torch.nn.functional.rms_norm(residual, (x.shape[-1],), w, EPS))


def fp32_fused_add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, w: torch.Tensor) -> None:
    total, out = references.fused_add_rmsnorm(x, residual, w, EPS)
    residual.copy_(total)
    x.copy_(out.to(x.dtype))


def _check(fn: Any, inputs: tuple[Any, ...]) -> None:
    x, residual, w = (t.clone() for t in inputs)
    expected_residual = (x.float() + residual.float()).to(x.dtype)
    expected = fp32_rmsnorm(expected_residual, w)
    fn(x, residual, w)
    torch.testing.assert_close(residual, expected_residual, rtol=0, atol=0)
    assert_close(x, expected)


def _case(rows: int, dim: int, dtype: torch.dtype, decode: bool) -> BandwidthCase:
    es = size(dtype)
    return BandwidthCase(
        kernel="fused_add_rmsnorm",
        shape=f"{rows}x{dim} {short_dtype(dtype)}",
        make_inputs=lambda: (
            randn(rows, dim, dtype=dtype),
            randn(rows, dim, dtype=dtype),
            weight(dim, dtype),
        ),
        ours=_ours,
        bytes_moved=4 * rows * dim * es + dim * es,
        peers=case_peers(
            torch_fused_add_rmsnorm,
            fp32_fused_add_rmsnorm,
            peers.flashinfer_fused_add_rmsnorm(EPS),
            upstream.fused_add_rmsnorm(dim, dtype, EPS),
        ),
        rotate_args=(0, 1),
        check=_check,
        decode=decode,
        dtype=dtype,
    )


def bandwidth_cases() -> list[BandwidthCase]:
    cases = [_case(*spec, decode=False) for spec in ROW_SPECS]
    return cases + [_case(rows, dim, BF16, decode=True) for rows, dim in DECODE_SHAPES]


def overhead_cases() -> list[OverheadCase]:
    module = _jit_fused_add_rmsnorm_module()
    return [
        OverheadCase(
            name="fused_add_rmsnorm 16x4096 bf16",
            make_inputs=lambda: (
                randn(16, 4096, dtype=BF16),
                randn(16, 4096, dtype=BF16),
                weight(4096, BF16),
            ),
            wrapper=Call(fused_add_rmsnorm, (EPS,)),
            bare=Call(module.fused_add_rmsnorm, (EPS,)),
            torch_eager=torch_fused_add_rmsnorm,
        )
    ]


def _cell(impl: str, dtype: torch.dtype, hidden_size: int, num_rows: int) -> marker.BenchResult:
    x = create_random(num_rows, hidden_size, dtype=dtype)
    residual = create_random(num_rows, hidden_size, dtype=dtype)
    w = create_random(hidden_size, dtype=dtype)
    fn = implementation(
        impl,
        _ours,
        torch_fused_add_rmsnorm,
        compiled=peers.compiled(fp32_fused_add_rmsnorm),
        flashinfer=peers.flashinfer_fused_add_rmsnorm(EPS),
        inputs=(x, residual, w),
    )
    return marker.do_bench(
        fn,
        input_args=(x, residual, w),
        graph_clone_args=(0, 1),  # both are read (and written): rotate them; not the weight
        memory_args=(x, residual, w),
        memory_output=(x, residual),  # in place: returns None, writes both
    )


SWEEPS = {"fused_add_rmsnorm": Sweep(ROWS_AXES, IMPLS, _cell)}
