"""Shared pieces of the thin kernel wrappers: ``out`` checks, 1-D views, per-device module memo."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, TypeVar

import torch

if TYPE_CHECKING:
    from tvm_ffi.module import Module

K = TypeVar("K", bound=Hashable)


def check_out(out: torch.Tensor, src: torch.Tensor, op: str) -> None:
    """Raise RuntimeError unless ``out`` can receive the result for ``src``."""
    if out.device != src.device:
        raise RuntimeError(f"{op}: out is on {out.device} but src is on {src.device}")
    if out.dtype != src.dtype:
        raise RuntimeError(f"{op}: out has dtype {out.dtype} but src has dtype {src.dtype}")
    if out.shape != src.shape:
        raise RuntimeError(
            f"{op}: out has shape {tuple(out.shape)} but src has shape {tuple(src.shape)}"
        )
    if not out.is_contiguous():
        raise RuntimeError(f"{op}: out must be contiguous, got strides {out.stride()}")


def contiguous_src_and_out(
    src: torch.Tensor, out: torch.Tensor | None, op: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """``src`` made contiguous (copied only when it is not) and ``out`` checked or allocated."""
    if not src.is_contiguous():
        src = src.contiguous()
    if out is None:
        out = torch.empty_like(src)
    else:
        check_out(out, src, op)
    return src, out


def flat(tensor: torch.Tensor) -> torch.Tensor:
    """A contiguous tensor as 1-D (no copy)."""
    return tensor if tensor.dim() == 1 else tensor.view(-1)


def per_device_modules(build: Callable[[K], Module]) -> Callable[[K, torch.Tensor], Module]:
    """Memoize ``build(key)`` per (key, device index of the tensor); build on that device.

    The per-call fast path of a wrapper: ``cache_once`` keys by the current device's arch, which
    costs a few microseconds per call; a device index always has one arch, so a dict lookup does.
    """
    modules: dict[tuple[K, int], Module] = {}

    def module_for(key: K, tensor: torch.Tensor) -> Module:
        slot = (key, tensor.get_device())
        module = modules.get(slot)
        if module is None:
            with torch.cuda.device(tensor.device):
                module = modules[slot] = build(key)
        return module

    return module_for
