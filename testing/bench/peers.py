"""Every peer a kernel is measured against, adapted to take the same inputs as ours.

* torch eager: each kernel's formula is part of its definition (``testing/bench/<family>.py``);
* ``torch.compile``: :func:`compiled` of that formula, one specialised kernel per shape
  (``dynamic=False``, as a model with fixed shapes gets);
* FlashInfer: imported here only, lazily and at most once per submodule (:func:`flashinfer`);
  each adapter returns the callable, or the reason it cannot run (a str, shown as N/A);
* upstream SGLang's JIT kernels from the published wheel: :data:`upstream`
  (``testing/upstream_sglang/kernels.py``, one function per upstream wrapper).

A peer that cannot run is a reason string, never an exception: the harnesses show it as N/A.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

import torch

from testing.upstream_sglang import kernels as upstream

__all__ = [
    "HALF_TYPES",
    "compiled",
    "flashinfer",
    "flashinfer_activation",
    "flashinfer_fused_add_rmsnorm",
    "flashinfer_qknorm",
    "flashinfer_rmsnorm",
    "flashinfer_rope",
    "upstream",
]

Fn = Callable[..., Any]
HALF_TYPES = (torch.float16, torch.bfloat16)
# torch.compile(dynamic=False) compiles once per shape; the full local sweeps need this many.
RECOMPILE_LIMIT = 256


@functools.cache
def compiled(fn: Fn) -> Fn:
    """``torch.compile(fn, dynamic=False)``, one per function."""
    torch._dynamo.config.recompile_limit = max(
        torch._dynamo.config.recompile_limit, RECOMPILE_LIMIT
    )
    return torch.compile(fn, dynamic=False)


@functools.cache
def flashinfer(submodule: str) -> Any:
    """``flashinfer.<submodule>``, or the reason it cannot be used (a str)."""
    try:
        return importlib.import_module(f"flashinfer.{submodule}")  # optional peer
    except Exception as error:  # ImportError, or a broken install raising anything
        return f"FlashInfer is not available ({type(error).__name__}: {error})"


def _with(submodule: str, make: Callable[[Any], Fn]) -> Fn | str:
    module = flashinfer(submodule)
    return module if isinstance(module, str) else make(module)


def flashinfer_activation(op: str, dtype: torch.dtype) -> Fn | str:
    """``flashinfer.activation.<op>`` (``op``: ``silu_and_mul``, ...), fp16/bf16 only."""
    module = flashinfer("activation")
    if isinstance(module, str):
        return module
    if dtype not in HALF_TYPES:
        return "FlashInfer's activations take float16/bfloat16 only"
    return getattr(module, op)


def flashinfer_rmsnorm(eps: float) -> Fn | str:
    return _with("norm", lambda norm: lambda x, w: norm.rmsnorm(x, w, eps))


def flashinfer_fused_add_rmsnorm(eps: float) -> Fn | str:
    return _with("norm", lambda norm: lambda x, r, w: norm.fused_add_rmsnorm(x, r, w, eps))


def flashinfer_qknorm(eps: float) -> Fn | str:
    """Two ``flashinfer.norm.rmsnorm(..., out=)`` calls: FlashInfer has no fused q/k kernel."""

    def make(norm: Any) -> Fn:
        def call(q, k, q_weight, k_weight):
            norm.rmsnorm(q, q_weight, eps, out=q)
            norm.rmsnorm(k, k_weight, eps, out=k)

        return call

    return _with("norm", make)


def flashinfer_rope(dtype: torch.dtype, is_neox: bool) -> Fn | str:
    """``apply_rope_with_cos_sin_cache_inplace`` (same cache layout as ours), fp16/bf16 only."""
    rope = flashinfer("rope")
    if isinstance(rope, str):
        return rope
    if dtype not in HALF_TYPES:
        return "FlashInfer's RoPE supports float16/bfloat16 only"

    def call(q, k, cache, positions):
        tokens, _, head_dim = q.shape
        rope.apply_rope_with_cos_sin_cache_inplace(
            positions, q.view(tokens, -1), k.view(tokens, -1), head_dim, cache, is_neox
        )

    return call
