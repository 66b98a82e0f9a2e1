"""The peers each shape is timed against: torch.compile and FlashInfer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from tools.tune.shapes import EPS, Shape, act_fn, bench_case, rms_reference


class Peers:
    """torch.compile and FlashInfer callables per shape (built lazily, failures as reasons)."""

    def __init__(self, use_compile: bool, use_flashinfer: bool) -> None:
        self.use_compile = use_compile
        self.use_flashinfer = use_flashinfer
        self.compiled: dict[str, Callable[..., Any]] = {}
        self.flashinfer_error: str | None = None
        self.flashinfer: Any = None
        if use_flashinfer:
            try:
                import flashinfer.activation  # optional peer
                import flashinfer.norm

                self.flashinfer = flashinfer
            except Exception as error:
                self.flashinfer_error = (
                    f"FlashInfer is not available ({type(error).__name__}: {error})"[:200]
                )
        else:
            self.flashinfer_error = "--no-flashinfer"

    def _compile(self, key: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        if key not in self.compiled:
            torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)
            self.compiled[key] = torch.compile(fn, dynamic=False)
        return self.compiled[key]

    def for_shape(self, shape: Shape) -> dict[str, Callable[..., Any] | str]:
        """name -> callable (same arguments as ours), or the reason it is N/A."""
        peers: dict[str, Callable[..., Any] | str] = {}
        if not self.use_compile:
            peers["torch_compile"] = "--no-compile"
        elif shape.family == "activation":
            act = act_fn(shape.kernel)

            def gated(x: torch.Tensor, act=act) -> torch.Tensor:
                d = x.shape[-1] // 2
                return act(x[..., :d]) * x[..., d:]

            peers["torch_compile"] = self._compile(shape.kernel, gated)
        elif shape.kernel == "rmsnorm":
            peers["torch_compile"] = self._compile("rmsnorm", rms_reference)
        elif shape.kernel == "fused_add_rmsnorm":

            def fused(x: torch.Tensor, r: torch.Tensor, w: torch.Tensor) -> None:
                total = (x.float() + r.float()).to(x.dtype)
                r.copy_(total)
                x.copy_(rms_reference(total, w))

            peers["torch_compile"] = self._compile("fused_add_rmsnorm", fused)
        elif shape.family == "rope":
            peers["torch_compile"] = bench_case("rope")._compiled(bool(shape.dims[3]))
        elif shape.family == "store_cache":
            peers["torch_compile"] = bench_case("store_cache")._compiled()
        else:

            def qk(q: torch.Tensor, k: torch.Tensor, qw: torch.Tensor, kw: torch.Tensor) -> None:
                q.copy_(rms_reference(q, qw))
                k.copy_(rms_reference(k, kw))

            peers["torch_compile"] = self._compile("qknorm", qk)
        if shape.family == "store_cache":
            peers["flashinfer"] = bench_case("store_cache").FLASHINFER_NA
        elif self.flashinfer is None:
            peers["flashinfer"] = self.flashinfer_error or "FlashInfer is not available"
        elif shape.family == "rope":
            peers["flashinfer"] = bench_case("rope")._flashinfer_peer(
                shape.dtype, bool(shape.dims[3])
            )
        elif shape.family == "activation":
            if shape.dtype == torch.float32:
                peers["flashinfer"] = "FlashInfer's activations take fp16/bf16 only"
            else:
                peers["flashinfer"] = getattr(self.flashinfer.activation, shape.kernel)
        elif shape.kernel == "rmsnorm":
            norm = self.flashinfer.norm
            peers["flashinfer"] = lambda x, w: norm.rmsnorm(x, w, EPS)
        elif shape.kernel == "fused_add_rmsnorm":
            norm = self.flashinfer.norm
            peers["flashinfer"] = lambda x, r, w: norm.fused_add_rmsnorm(x, r, w, EPS)
        else:
            norm = self.flashinfer.norm

            def fi_qk(q, k, qw, kw):
                norm.rmsnorm(q, qw, EPS, out=q)
                norm.rmsnorm(k, kw, EPS, out=k)

            peers["flashinfer"] = fi_qk
        return peers
