"""Benchmark: silu_and_mul / gelu_and_mul / gelu_tanh_and_mul against torch eager, torch.compile
and FlashInfer.

``out = act(x[..., :d]) * x[..., d:]`` for x [T, 2 d]. Lines: ``jit`` (ours), ``torch`` (eager
``F.silu(x[..., :d]) * x[..., d:]`` / ``F.gelu(..., approximate=...)``: two launches),
``torch_compile`` (the same function, ``torch.compile(dynamic=False)``) and ``flashinfer``
(``flashinfer.activation.<op>``; N/A with the reason when unavailable). Bytes per call: x read,
out written (do_bench's defaults: the inputs plus the returned tensor).
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from ci_runner import register_cuda_ci
from jit_kernel.activation import gelu_and_mul, gelu_tanh_and_mul, silu_and_mul
from jit_kernel.benchmark import marker
from jit_kernel.benchmark.utils import create_random

register_cuda_ci(est_time=60, suite="base-b-kernel-benchmark-1-gpu-large")

torch._dynamo.config.recompile_limit = 256

JIT = {"silu": silu_and_mul, "gelu": gelu_and_mul, "gelu_tanh": gelu_tanh_and_mul}


def torch_silu(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]


def torch_gelu(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    return F.gelu(x[..., :d], approximate="none") * x[..., d:]


def torch_gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    return F.gelu(x[..., :d], approximate="tanh") * x[..., d:]


TORCH = {"silu": torch_silu, "gelu": torch_gelu, "gelu_tanh": torch_gelu_tanh}
COMPILED = {op: torch.compile(fn, dynamic=False) for op, fn in TORCH.items()}


@functools.cache
def flashinfer_activation() -> object:
    """``flashinfer.activation``, or the reason it cannot be used (a str)."""
    try:
        import flashinfer.activation as activation  # optional peer, imported lazily
    except Exception as error:
        return f"FlashInfer is not available ({type(error).__name__}: {error})"
    return activation


def implementation(op: str, impl: str, x: torch.Tensor):
    if impl == "jit":
        return JIT[op]
    if impl == "torch":
        return TORCH[op]
    if impl == "torch_compile":
        return COMPILED[op]
    activation = flashinfer_activation()
    if isinstance(activation, str):
        marker.skip(activation)
    fn = getattr(activation, f"{op}_and_mul")
    try:
        fn(x)
        torch.cuda.synchronize()
    except Exception as error:
        marker.skip(f"FlashInfer failed: {type(error).__name__}: {error}"[:200])
    return fn


# Full sweep locally; CI: silu, bf16, d = 11008 (Llama-2 7B MLP), 16 and 16384 tokens.
@marker.parametrize("op", ["silu", "gelu", "gelu_tanh"], ci_vals=["silu"])
@marker.parametrize(
    "dtype", [torch.bfloat16, torch.float16, torch.float32], ci_vals=[torch.bfloat16]
)
@marker.parametrize("d", [4096, 11008, 14336], ci_vals=[11008])
@marker.parametrize("num_tokens", [1, 16, 256, 4096, 16384], ci_vals=[16, 16384])
@marker.benchmark("impl", ["jit", "torch", "torch_compile", "flashinfer"])
def benchmark(op: str, dtype: torch.dtype, d: int, num_tokens: int, impl: str):
    x = create_random(num_tokens, 2 * d, dtype=dtype)
    return marker.do_bench(
        implementation(op, impl, x),
        input_args=(x,),
        graph_clone_args=(0,),
        # Defaults: memory_args="all" counts x, memory_output="out" the returned tensor.
    )


if __name__ == "__main__":
    benchmark.run()
