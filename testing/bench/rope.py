"""apply_rope_inplace for ``benchmarks/bench_jit_kernels.py``: RoPE on q/k in place.

``bandwidth_cases()``: 16384 and 65536 tokens of 32 q + 8 k heads of 128 (and 16 + 2 heads),
NeoX and GPT-J, bf16/fp16/fp32, full rotary from a [8192, 128] fp32 cos/sin cache; ours
against torch eager (the float32 formula: gather the cos/sin rows, rotate, copy back),
``torch.compile`` of the same and FlashInfer's ``apply_rope_with_cos_sin_cache_inplace`` (same
cache layout; fp16/bf16 only) and upstream SGLang's ``FusedRopeKernel``; then 16 decode tokens
(NeoX and GPT-J, bf16). ``bytes_moved``: q and k read and written once, plus the positions;
the cos/sin rows (4 MiB, L2 resident) are not counted.

``overhead_cases()``: host time per call at 16 tokens x (32 + 8) heads x 128 bf16. Importing
this module needs no GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from jit_kernel.benchmark import marker
from jit_kernel.rope import _jit_rope_module, apply_rope_inplace
from testing import references
from testing.bench import peers
from testing.bench.case import Axis, BandwidthCase, Call, OverheadCase, Sweep, implementation
from testing.bench.peers import upstream

MAX_POSITION = 8192
HEAD_DIM = 128
# (tokens, q heads, k heads, dtype, is_neox)
SPECS = [
    (16384, 32, 8, torch.bfloat16, True),
    (65536, 32, 8, torch.bfloat16, True),
    (16384, 32, 8, torch.bfloat16, False),
    (65536, 16, 2, torch.bfloat16, True),
    (16384, 32, 8, torch.float16, True),
    (16384, 32, 8, torch.float32, True),
]
DECODE_SPECS = [(16, 32, 8, torch.bfloat16, True), (16, 32, 8, torch.bfloat16, False)]


make_cos_sin_cache = references.make_cos_sin_cache


torch_rope = references.rope_inplace


def _compiled(is_neox: bool) -> Callable[..., Any]:
    """torch.compile of the eager formula, ``is_neox`` bound (the same inputs as ours)."""
    compiled = peers.compiled(torch_rope)
    return lambda q, k, cache, positions: compiled(q, k, cache, positions, is_neox)


def _ours(is_neox: bool) -> Callable[..., None]:
    return lambda q, k, cache, pos: apply_rope_inplace(q, k, cache, pos, is_neox=is_neox)


def _torch(is_neox: bool) -> Callable[..., None]:
    return lambda q, k, cache, pos: torch_rope(q, k, cache, pos, is_neox)


def _inputs(tokens: int, hq: int, hk: int, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    return (
        torch.randn(tokens, hq, HEAD_DIM, dtype=dtype, device="cuda"),
        torch.randn(tokens, hk, HEAD_DIM, dtype=dtype, device="cuda"),
        make_cos_sin_cache(MAX_POSITION, HEAD_DIM),
        torch.randint(0, MAX_POSITION, (tokens,), device="cuda"),
    )


def _checker(is_neox: bool) -> Callable[[Callable[..., Any], tuple[Any, ...]], None]:
    def check(fn: Callable[..., Any], inputs: tuple[Any, ...]) -> None:
        q, k, cache, positions = (t.clone() for t in inputs)
        expected_q = references.rope(q, cache, positions, is_neox).to(q.dtype)
        expected_k = references.rope(k, cache, positions, is_neox).to(k.dtype)
        fn(q, k, cache, positions)
        torch.testing.assert_close(q, expected_q, **references.ROUNDED_TOL[q.dtype])
        torch.testing.assert_close(k, expected_k, **references.ROUNDED_TOL[k.dtype])

    return check


def _case(
    tokens: int, hq: int, hk: int, dtype: torch.dtype, is_neox: bool, decode: bool
) -> BandwidthCase:
    size = torch.empty(0, dtype=dtype).element_size()
    short = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}[dtype]
    return BandwidthCase(
        kernel="rope",
        shape=f"{tokens}x({hq}+{hk})x{HEAD_DIM} {short} {'neox' if is_neox else 'gptj'}",
        make_inputs=lambda: _inputs(tokens, hq, hk, dtype),
        ours=_ours(is_neox),
        bytes_moved=2 * tokens * (hq + hk) * HEAD_DIM * size + tokens * 8,
        peers={
            "torch": _torch(is_neox),
            "torch_compile": _compiled(is_neox),
            "flashinfer": peers.flashinfer_rope(dtype, is_neox),
            "upstream": upstream.rope(is_neox, HEAD_DIM, dtype),
        },
        rotate_args=(0, 1, 3),  # q, k, positions; not the cache
        check=_checker(is_neox),
        decode=decode,
        dtype=dtype,
        keywords={"is_neox": is_neox},
    )


def bandwidth_cases() -> list[BandwidthCase]:
    cases = [_case(*spec, decode=False) for spec in SPECS]
    return cases + [_case(*spec, decode=True) for spec in DECODE_SPECS]


def overhead_cases() -> list[OverheadCase]:
    module = _jit_rope_module()
    return [
        OverheadCase(
            name="rope 16x(32+8)x128 bf16",
            make_inputs=lambda: _inputs(16, 32, 8, torch.bfloat16),
            wrapper=Call(apply_rope_inplace, keywords={"is_neox": True}),
            bare=Call(module.apply_rope_inplace, (True, 0)),
            torch_eager=Call(torch_rope, (True,)),
        )
    ]


# --------------------------------------------------------------------------- registered sweep
# registered/jit/benchmark/bench_rope.py: in place on q [T, Hq, 128] and k [T, Hk, 128] (full
# rotary), the [8192, 128] fp32 cos/sin cache, random positions. Lines: ``jit`` (ours, one
# launch), ``torch`` (the eager float32 formula), ``torch_compile`` (the same function) and
# ``flashinfer`` (``apply_rope_with_cos_sin_cache_inplace``; fp16/bf16 only; N/A with the reason
# when unavailable). Bytes per call: q, k and positions read, q and k written; the cos/sin rows
# (L2 resident) are not counted, so GB/s slightly understates the traffic. Full sweep locally;
# CI: bf16 NeoX, 32 q / 8 k heads of 128, 16 and 16384 tokens.


def _cell(
    impl: str,
    dtype: torch.dtype,
    is_neox: bool,
    num_q_heads: int,
    num_k_heads: int,
    num_tokens: int,
) -> marker.BenchResult:
    inputs = _inputs(num_tokens, num_q_heads, num_k_heads, dtype)
    q, k, _, positions = inputs
    fn = implementation(
        impl,
        _ours(is_neox),
        _torch(is_neox),
        compiled=_compiled(is_neox),
        flashinfer=peers.flashinfer_rope(dtype, is_neox),
        inputs=inputs,
    )
    return marker.do_bench(
        fn,
        input_args=inputs,
        graph_clone_args=(0, 1, 3),  # q, k (read and written) and positions; not the cache
        memory_args=(q, k, positions),
        memory_output=(q, k),  # in place: returns None, writes q and k
    )


SWEEPS = {
    "rope": Sweep(
        (
            Axis("dtype", [torch.bfloat16, torch.float16, torch.float32], ci_vals=[torch.bfloat16]),
            Axis("is_neox", [True, False], ci_vals=[True]),
            Axis("num_q_heads,num_k_heads", [(32, 8), (16, 2), (64, 8), (8, 8)], ci_vals=[(32, 8)]),
            Axis("num_tokens", [1, 16, 256, 4096, 16384, 65536], ci_vals=[16, 16384]),
        ),
        ("jit", "torch", "torch_compile", "flashinfer"),
        _cell,
    )
}
