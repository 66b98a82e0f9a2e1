"""``scale(src, factor, out=None)``: element-wise ``src * factor`` as a JIT CUDA kernel.

fp16, bf16 and fp32; the product is computed in fp32 and rounded once, exactly like
``torch.mul(src, factor)``. 128-bit vector loads/stores when the data is 16-byte aligned,
Programmatic Dependent Launch on SM90+.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from jit_kernel.utils import (
    cache_once,
    is_arch_support_pdl,
    load_jit,
    make_cpp_args,
    register_precompile,
)

if TYPE_CHECKING:
    from tvm_ffi.module import Module

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


@cache_once
def _jit_scale_module(dtype: torch.dtype) -> Module:
    """Build (or load from the cache) the scale module for ``dtype``."""
    args = make_cpp_args(dtype, is_arch_support_pdl())
    return load_jit(
        "scale",
        *args,
        cuda_files=["elementwise/scale.cuh"],
        cuda_wrappers=[("scale", f"scale<{args}>")],
    )


register_precompile(_jit_scale_module, [(dtype,) for dtype in SUPPORTED_DTYPES])

# Per-call fast path: (dtype, device index) -> module. cache_once keys by the current device's
# arch, which costs a few microseconds per call; a device index always has one arch.
_modules: dict[tuple[torch.dtype, int], Module] = {}


def _module_for(src: torch.Tensor) -> Module:
    key = (src.dtype, src.get_device())
    module = _modules.get(key)
    if module is None:
        with torch.cuda.device(src.device):
            module = _modules[key] = _jit_scale_module(src.dtype)
    return module


def flat(tensor: torch.Tensor) -> torch.Tensor:
    """A contiguous tensor as 1-D (no copy)."""
    return tensor if tensor.dim() == 1 else tensor.view(-1)


def scale(src: torch.Tensor, factor: float, out: torch.Tensor | None = None) -> torch.Tensor:
    """Return ``src * factor`` (written into ``out`` when given).

    ``src``: a CUDA tensor of any shape, float16/bfloat16/float32; a non-contiguous ``src`` is
    copied to a contiguous one first. ``out``: optional, same shape, dtype and device as ``src``
    and contiguous (``out`` may be ``src`` itself for an in-place scale). Raises RuntimeError for
    a CPU tensor, an unsupported dtype or a mismatched ``out``.
    """
    if not src.is_cuda:
        raise RuntimeError(f"scale: src must be a CUDA tensor, got device {src.device}")
    if src.dtype not in SUPPORTED_DTYPES:
        raise RuntimeError(
            f"scale: unsupported dtype {src.dtype}; supported: float16, bfloat16, float32"
        )
    if not src.is_contiguous():
        src = src.contiguous()
    if out is None:
        out = torch.empty_like(src)
    else:
        check_out(out, src, "scale")
    _module_for(src).scale(flat(out), flat(src), float(factor))
    return out


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
