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

import functools
from collections.abc import Callable
from typing import Any

import torch

from benchmarks.cases.case import (
    BandwidthCase,
    Call,
    OverheadCase,
)
from benchmarks.upstream_sglang import kernels as upstream
from jit_kernel.rope import _jit_rope_module, apply_rope_inplace
from testing import references

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


@functools.cache
def _compiled(is_neox: bool) -> Callable[..., Any]:
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)
    compiled = torch.compile(torch_rope, dynamic=False)
    return lambda q, k, cache, positions: compiled(q, k, cache, positions, is_neox)


@functools.cache
def _flashinfer_rope() -> Any:
    """``flashinfer.rope``, or the reason it cannot be used (a str)."""
    try:
        import flashinfer.rope as rope  # optional peer, imported lazily
    except Exception as error:  # ImportError, or a broken install raising anything
        return f"FlashInfer is not available ({type(error).__name__}: {error})"
    return rope


def _flashinfer_peer(dtype: torch.dtype, is_neox: bool) -> Callable[..., Any] | str:
    rope = _flashinfer_rope()
    if isinstance(rope, str):
        return rope
    if dtype not in (torch.float16, torch.bfloat16):
        return "FlashInfer's RoPE supports float16/bfloat16 only"

    def call(q, k, cache, positions):
        tokens, _, head_dim = q.shape
        rope.apply_rope_with_cos_sin_cache_inplace(
            positions, q.view(tokens, -1), k.view(tokens, -1), head_dim, cache, is_neox
        )

    return call


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
        ours=lambda q, k, cache, pos: apply_rope_inplace(q, k, cache, pos, is_neox=is_neox),
        bytes_moved=2 * tokens * (hq + hk) * HEAD_DIM * size + tokens * 8,
        peers={
            "torch": lambda q, k, cache, pos: torch_rope(q, k, cache, pos, is_neox),
            "torch_compile": _compiled(is_neox),
            "flashinfer": _flashinfer_peer(dtype, is_neox),
            "upstream": upstream.rope(is_neox, HEAD_DIM, dtype),
        },
        rotate_args=(0, 1, 3),  # q, k, positions; not the cache
        check=_checker(is_neox),
        decode=decode,
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
