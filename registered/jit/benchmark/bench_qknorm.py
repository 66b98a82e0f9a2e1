"""Benchmark: jit_kernel.qknorm.fused_inplace_qknorm against torch eager, torch.compile and
FlashInfer.

In place, per head. Lines: ``jit`` (ours, one launch), ``torch`` (eager
``torch.nn.functional.rms_norm`` + ``copy_`` for q, then k), ``torch_compile`` (the fp32
formula ours computes for both, ``torch.compile(dynamic=False)``) and ``flashinfer``
(``flashinfer.norm.rmsnorm(q, ..., out=q)`` then the same for k: it has no fused q/k kernel;
N/A with the reason when unavailable). Bytes per call: q, k and both weights read; q and k
written.
"""

from __future__ import annotations

import functools

import repo_root  # noqa: F401  (the repository root on sys.path)
import torch

from ci_runner import register_cuda_ci
from jit_kernel.benchmark import marker
from jit_kernel.benchmark.utils import create_random
from jit_kernel.qknorm import fused_inplace_qknorm
from testing import references

register_cuda_ci(est_time=39, suite="base-b-kernel-benchmark-1-gpu-large")

torch._dynamo.config.recompile_limit = 256

EPS = 1e-6


def jit_qknorm(q, k, q_weight, k_weight) -> None:
    fused_inplace_qknorm(q, k, q_weight, k_weight, EPS)


def torch_qknorm(q, k, q_weight, k_weight) -> None:
    q.copy_(torch.nn.functional.rms_norm(q, (q.shape[-1],), q_weight, EPS))
    k.copy_(torch.nn.functional.rms_norm(k, (k.shape[-1],), k_weight, EPS))


def _fp32_rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return references.rmsnorm(x, weight, EPS).to(x.dtype)


def fp32_qknorm(q, k, q_weight, k_weight) -> None:
    q.copy_(_fp32_rmsnorm(q, q_weight))
    k.copy_(_fp32_rmsnorm(k, k_weight))


@functools.cache
def flashinfer_norm() -> object:
    """``flashinfer.norm``, or the reason it cannot be used (a str)."""
    try:
        import flashinfer.norm as norm  # optional peer, imported lazily
    except Exception as error:
        return f"FlashInfer is not available ({type(error).__name__}: {error})"
    return norm


def flashinfer_qknorm(q, k, q_weight, k_weight) -> None:
    norm = flashinfer_norm()
    norm.rmsnorm(q, q_weight, EPS, out=q)
    norm.rmsnorm(k, k_weight, EPS, out=k)


FN_MAP = {
    "jit": jit_qknorm,
    "torch": torch_qknorm,
    "torch_compile": torch.compile(fp32_qknorm, dynamic=False),
    "flashinfer": flashinfer_qknorm,
}


def require_flashinfer(q, k, q_weight, k_weight) -> None:
    norm = flashinfer_norm()
    if isinstance(norm, str):
        marker.skip(norm)
    try:
        flashinfer_qknorm(q.clone(), k.clone(), q_weight, k_weight)
        torch.cuda.synchronize()
    except Exception as error:
        marker.skip(f"FlashInfer failed: {type(error).__name__}: {error}"[:200])


# Full sweep locally; CI: bf16, head_dim 128, 32 q / 8 k heads, 16 and 16384 tokens.
@marker.parametrize("dtype", [torch.bfloat16, torch.float16], ci_vals=[torch.bfloat16])
@marker.parametrize("head_dim", [64, 128, 256, 512], ci_vals=[128])
@marker.parametrize("num_q_heads,num_k_heads", [(32, 8), (16, 2)], ci_vals=[(32, 8)])
@marker.parametrize("num_tokens", [1, 16, 1024, 16384, 65536], ci_vals=[16, 16384])
@marker.benchmark("impl", list(FN_MAP))
def benchmark(
    dtype: torch.dtype,
    head_dim: int,
    num_q_heads: int,
    num_k_heads: int,
    num_tokens: int,
    impl: str,
):
    q = create_random(num_tokens, num_q_heads, head_dim, dtype=dtype)
    k = create_random(num_tokens, num_k_heads, head_dim, dtype=dtype)
    q_weight = create_random(head_dim, dtype=dtype)
    k_weight = create_random(head_dim, dtype=dtype)
    if impl == "flashinfer":
        require_flashinfer(q, k, q_weight, k_weight)
    return marker.do_bench(
        FN_MAP[impl],
        input_args=(q, k, q_weight, k_weight),
        graph_clone_args=(0, 1),  # q and k are read and written: rotate them
        memory_args=(q, k, q_weight, k_weight),
        memory_output=(q, k),  # in place: returns None, writes both
    )


if __name__ == "__main__":
    benchmark.run()
