"""qknorm (``fused_inplace_qknorm``: rmsnorm of every head of q and k, in place, one launch):
how every harness measures and checks it.

``SWEEPS["qknorm"]``: ``registered/jit/benchmark/bench_qknorm.py``. Lines: ``jit`` (ours),
``torch`` (eager ``torch.nn.functional.rms_norm`` + ``copy_`` for q, then k),
``torch_compile`` (the fp32 formula ours computes, for both) and ``flashinfer``
(``flashinfer.norm.rmsnorm(..., out=)`` for q then k: it has no fused q/k kernel; N/A with the
reason when unavailable). Bytes per call: q, k and both weights read; q and k written. Full
sweep locally; CI: bf16, head_dim 128, 32 q / 8 k heads, 16 and 16384 tokens.

``bandwidth_cases()``: ``benchmarks/bench_jit_kernels.py`` at memory-bound sizes (tokens x
heads x head_dim >= 2^24; bf16, and one fp16 shape), then 16 tokens of (32 + 8) x 128 bf16
(decode), against torch eager, ``torch.compile``, FlashInfer and upstream SGLang.
``overhead_cases()``: host time per call at 16 tokens x (32 + 8) heads x 128 bf16. Importing
this module needs no GPU.
"""

from __future__ import annotations

from typing import Any

import torch

from jit_kernel.benchmark import marker
from jit_kernel.benchmark.utils import create_random
from jit_kernel.qknorm import _jit_qknorm_module, fused_inplace_qknorm
from testing.bench import peers
from testing.bench._norm import (
    BF16,
    EPS,
    IMPLS,
    assert_close,
    case_peers,
    fp32_rmsnorm,
    randn,
    short_dtype,
    size,
    weight,
)
from testing.bench.case import Axis, BandwidthCase, Call, OverheadCase, Sweep, implementation
from testing.bench.peers import upstream

# (tokens, q heads, k heads, head_dim) with tokens * heads * head_dim >= 2^24.
SHAPES = [(16384, 32, 8, 128), (65536, 32, 8, 128), (65536, 16, 2, 64), (16384, 16, 4, 256)]
SHAPES += [(8192, 16, 4, 512)]
DECODE_SHAPES = [(16, 32, 8, 128)]


def _ours(q, k, q_weight, k_weight) -> None:
    fused_inplace_qknorm(q, k, q_weight, k_weight, EPS)


def torch_qknorm(q, k, q_weight, k_weight) -> None:
    q.copy_(torch.nn.functional.rms_norm(q, (q.shape[-1],), q_weight, EPS))
    k.copy_(torch.nn.functional.rms_norm(k, (k.shape[-1],), k_weight, EPS))


def fp32_qknorm(q, k, q_weight, k_weight) -> None:
    q.copy_(fp32_rmsnorm(q, q_weight))
    k.copy_(fp32_rmsnorm(k, k_weight))


def _check(fn: Any, inputs: tuple[Any, ...]) -> None:
    q, k, q_weight, k_weight = (t.clone() for t in inputs)
    expected_q = fp32_rmsnorm(q, q_weight)
    expected_k = fp32_rmsnorm(k, k_weight)
    fn(q, k, q_weight, k_weight)
    assert_close(q, expected_q)
    assert_close(k, expected_k)


def _case(
    tokens: int, num_q: int, num_k: int, head_dim: int, dtype: torch.dtype, decode: bool
) -> BandwidthCase:
    es = size(dtype)
    return BandwidthCase(
        kernel="qknorm",
        shape=f"{tokens}x({num_q}+{num_k})x{head_dim} {short_dtype(dtype)}",
        make_inputs=lambda: (
            randn(tokens, num_q, head_dim, dtype=dtype),
            randn(tokens, num_k, head_dim, dtype=dtype),
            weight(head_dim, dtype),
            weight(head_dim, dtype),
        ),
        ours=_ours,
        bytes_moved=2 * tokens * (num_q + num_k) * head_dim * es + 2 * head_dim * es,
        peers=case_peers(
            torch_qknorm,
            fp32_qknorm,
            peers.flashinfer_qknorm(EPS),
            upstream.qknorm(head_dim, dtype, EPS),
        ),
        rotate_args=(0, 1),
        check=_check,
        decode=decode,
        dtype=dtype,
    )


def bandwidth_cases() -> list[BandwidthCase]:
    specs = [(*shape, BF16) for shape in SHAPES] + [(16384, 32, 8, 128, torch.float16)]
    cases = [_case(*spec, decode=False) for spec in specs]
    return cases + [_case(*shape, BF16, decode=True) for shape in DECODE_SHAPES]


def overhead_cases() -> list[OverheadCase]:
    module = _jit_qknorm_module()
    return [
        OverheadCase(
            name="qknorm 16x(32+8)x128 bf16",
            make_inputs=lambda: (
                randn(16, 32, 128, dtype=BF16),
                randn(16, 8, 128, dtype=BF16),
                weight(128, BF16),
                weight(128, BF16),
            ),
            wrapper=Call(fused_inplace_qknorm, (EPS,)),
            bare=Call(module.fused_inplace_qknorm, (EPS,)),
            torch_eager=torch_qknorm,
        )
    ]


def _cell(
    impl: str,
    dtype: torch.dtype,
    head_dim: int,
    num_q_heads: int,
    num_k_heads: int,
    num_tokens: int,
) -> marker.BenchResult:
    q = create_random(num_tokens, num_q_heads, head_dim, dtype=dtype)
    k = create_random(num_tokens, num_k_heads, head_dim, dtype=dtype)
    q_weight = create_random(head_dim, dtype=dtype)
    k_weight = create_random(head_dim, dtype=dtype)
    inputs = (q, k, q_weight, k_weight)
    fn = implementation(
        impl,
        _ours,
        torch_qknorm,
        compiled=peers.compiled(fp32_qknorm),
        flashinfer=peers.flashinfer_qknorm(EPS),
        inputs=inputs,
    )
    return marker.do_bench(
        fn,
        input_args=inputs,
        graph_clone_args=(0, 1),  # q and k are read and written: rotate them
        memory_args=inputs,
        memory_output=(q, k),  # in place: returns None, writes both
    )


SWEEPS = {
    "qknorm": Sweep(
        (
            Axis("dtype", [torch.bfloat16, torch.float16], ci_vals=[torch.bfloat16]),
            Axis("head_dim", [64, 128, 256, 512], ci_vals=[128]),
            Axis("num_q_heads,num_k_heads", [(32, 8), (16, 2)], ci_vals=[(32, 8)]),
            Axis("num_tokens", [1, 16, 1024, 16384, 65536], ci_vals=[16, 16384]),
        ),
        IMPLS,
        _cell,
    )
}
