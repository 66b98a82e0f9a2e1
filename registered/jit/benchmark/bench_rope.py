"""Benchmark: jit_kernel.rope.apply_rope_inplace against torch eager, torch.compile and FlashInfer.

In place on q [T, Hq, 128] and k [T, Hk, 128] (full rotary), cos/sin cache [8192, 128] fp32,
random int64 positions. Lines: ``jit`` (ours, one launch), ``torch`` (eager float32 formula:
gather the cos/sin rows, rotate, copy back into q and k), ``torch_compile`` (the same function,
``torch.compile(dynamic=False)``) and ``flashinfer``
(``flashinfer.rope.apply_rope_with_cos_sin_cache_inplace``, same cache layout: cos half then sin
half; fp16/bf16 only; N/A with the reason when unavailable).

Bytes per call: q, k and positions read, q and k written. The cos/sin rows (8192 x 512 B, L2
resident) are not counted, so GB/s slightly understates the traffic.
"""

from __future__ import annotations

import functools

import repo_root  # noqa: F401  (the repository root on sys.path)
import torch

from ci_runner import register_cuda_ci
from jit_kernel.benchmark import marker
from jit_kernel.benchmark.utils import create_random
from jit_kernel.rope import apply_rope_inplace
from testing import references

register_cuda_ci(est_time=94, suite="base-b-kernel-benchmark-1-gpu-large")

torch._dynamo.config.recompile_limit = 256

MAX_POSITION = 8192
HEAD_DIM = 128


make_cos_sin_cache = references.make_cos_sin_cache


torch_rope = references.rope_inplace


def jit_rope(q, k, cos_sin_cache, positions, is_neox: bool) -> None:
    apply_rope_inplace(q, k, cos_sin_cache, positions, is_neox=is_neox)


@functools.cache
def flashinfer_rope() -> object:
    """``flashinfer.rope``, or the reason it cannot be used (a str)."""
    try:
        import flashinfer.rope as rope  # optional peer, imported lazily
    except Exception as error:
        return f"FlashInfer is not available ({type(error).__name__}: {error})"
    return rope


def flashinfer_apply(q, k, cos_sin_cache, positions, is_neox: bool) -> None:
    num_tokens, _, head_dim = q.shape
    flashinfer_rope().apply_rope_with_cos_sin_cache_inplace(
        positions, q.view(num_tokens, -1), k.view(num_tokens, -1), head_dim, cos_sin_cache, is_neox
    )


FN_MAP = {
    "jit": jit_rope,
    "torch": torch_rope,
    "torch_compile": torch.compile(torch_rope, dynamic=False),
    "flashinfer": flashinfer_apply,
}


def require_flashinfer(q, k, cos_sin_cache, positions, is_neox: bool) -> None:
    rope = flashinfer_rope()
    if isinstance(rope, str):
        marker.skip(rope)
    if q.dtype not in (torch.float16, torch.bfloat16):
        marker.skip(f"FlashInfer's RoPE supports float16/bfloat16 only, not {q.dtype}")
    try:
        flashinfer_apply(q.clone(), k.clone(), cos_sin_cache, positions, is_neox)
        torch.cuda.synchronize()
    except Exception as error:
        marker.skip(f"FlashInfer failed: {type(error).__name__}: {error}"[:200])


# Full sweep locally; CI: bf16 NeoX, 32 q / 8 k heads of 128, 16 and 16384 tokens.
@marker.parametrize(
    "dtype", [torch.bfloat16, torch.float16, torch.float32], ci_vals=[torch.bfloat16]
)
@marker.parametrize("is_neox", [True, False], ci_vals=[True])
@marker.parametrize(
    "num_q_heads,num_k_heads", [(32, 8), (16, 2), (64, 8), (8, 8)], ci_vals=[(32, 8)]
)
@marker.parametrize("num_tokens", [1, 16, 256, 4096, 16384, 65536], ci_vals=[16, 16384])
@marker.benchmark("impl", list(FN_MAP))
def benchmark(
    dtype: torch.dtype,
    is_neox: bool,
    num_q_heads: int,
    num_k_heads: int,
    num_tokens: int,
    impl: str,
):
    q = create_random(num_tokens, num_q_heads, HEAD_DIM, dtype=dtype)
    k = create_random(num_tokens, num_k_heads, HEAD_DIM, dtype=dtype)
    cos_sin_cache = make_cos_sin_cache(MAX_POSITION, HEAD_DIM)
    positions = torch.randint(0, MAX_POSITION, (num_tokens,), device="cuda")
    if impl == "flashinfer":
        require_flashinfer(q, k, cos_sin_cache, positions, is_neox)
    return marker.do_bench(
        FN_MAP[impl],
        input_args=(q, k, cos_sin_cache, positions, is_neox),
        graph_clone_args=(0, 1, 3),  # q, k (read and written) and positions; not the cache
        memory_args=(q, k, positions),
        memory_output=(q, k),  # in place: returns None, writes q and k
    )


if __name__ == "__main__":
    benchmark.run()
