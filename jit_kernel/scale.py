"""``scale(src, factor, out=None)``: element-wise ``src * factor`` as a JIT CUDA kernel.

fp16, bf16 and fp32; the product is computed in fp32 and rounded once, exactly like
``torch.mul(src, factor)``. 128-bit vector loads/stores when the data is 16-byte aligned,
Programmatic Dependent Launch on SM90+.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from jit_kernel.utils import (
    KernelTable,
    cache_once,
    is_arch_support_pdl,
    load_jit,
    make_cpp_args,
    raise_argument_type_error,
    register_precompile,
)

if TYPE_CHECKING:
    from tvm_ffi.module import Module

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


@cache_once
def _jit_scale_module(dtype: torch.dtype) -> Module:
    """Build (or load from the cache) the scale module for ``dtype``."""
    if dtype not in SUPPORTED_DTYPES:
        raise RuntimeError(
            f"scale: unsupported dtype {dtype}; supported: float16, bfloat16, float32"
        )
    args = make_cpp_args(dtype, is_arch_support_pdl())
    return load_jit(
        "scale",
        *args,
        cuda_files=["elementwise/scale.cuh"],
        cuda_wrappers=[("scale", f"scale<{args}>")],
    )


register_precompile(_jit_scale_module, [(dtype,) for dtype in SUPPORTED_DTYPES])

_scale = KernelTable(_jit_scale_module, "scale", "scale", "src")  # dtype -> export


def scale(src: torch.Tensor, factor: float, out: torch.Tensor | None = None) -> torch.Tensor:
    """Return ``src * factor`` (written into ``out`` when given).

    ``src``: a CUDA tensor of any shape, float16/bfloat16/float32; a non-contiguous ``src`` is
    copied to a contiguous one first. ``factor``: a Python number. ``out``: optional, same
    shape, dtype and device as ``src`` and contiguous (``out`` may be ``src`` itself for an
    in-place scale). Raises TypeError for an argument of the wrong Python type, RuntimeError
    (naming the tensor) for a CPU tensor, an unsupported dtype or a mismatched ``out``.
    """
    try:
        kernel = _scale.get(src.dtype) or _scale.miss(src.dtype, src)
        result = torch.empty_like(src) if out is None else out
        if not kernel(result, src, factor):  # src is not contiguous: use a copy
            src = src.contiguous()
            result = torch.empty_like(src) if out is None else out
            kernel(result, src, factor)
    except (AttributeError, TypeError) as error:
        raise_argument_type_error(
            "scale", error, tensors={"src": src}, optional={"out": out}, numbers={"factor": factor}
        )
    return result
