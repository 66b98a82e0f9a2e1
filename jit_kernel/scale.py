"""``scale(src, factor, out=None)``: element-wise ``src * factor`` as a JIT CUDA kernel.

fp16, bf16 and fp32; the product is computed in fp32 and rounded once, exactly like
``torch.mul(src, factor)``. 128-bit vector loads/stores when the data is 16-byte aligned,
Programmatic Dependent Launch on SM90+.
"""

from __future__ import annotations

import torch

from jit_kernel.wrapper import bind_export, jit_module, raise_argument_error

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)

_jit_scale_module = jit_module("scale", "elementwise/scale.cuh", ["scale"])
_scale = bind_export(globals(), _jit_scale_module, "scale", tensor_arg=(1, "src"))


def scale(src: torch.Tensor, factor: float, out: torch.Tensor | None = None) -> torch.Tensor:
    """Return ``src * factor`` (written into ``out`` when given).

    ``src``: a CUDA tensor of any shape, float16/bfloat16/float32; a non-contiguous ``src`` is
    copied to a contiguous one first. ``factor``: a Python number. ``out``: optional, same
    shape, dtype and device as ``src`` and contiguous (``out`` may be ``src`` itself for an
    in-place scale). Raises TypeError for an argument of the wrong Python type, RuntimeError
    (naming the tensor) for a CPU tensor, an unsupported dtype or a mismatched ``out``.
    """
    if type(factor) is bool:  # tvm-ffi would read True as 1.0
        raise_argument_error(scale, TypeError(), locals())
    try:
        result = torch.empty_like(src) if out is None else out
        if not _scale(result, src, factor):  # src is not contiguous: use a copy
            src = src.contiguous()
            result = torch.empty_like(src) if out is None else out
            _scale(result, src, factor)
    except (AttributeError, TypeError) as error:
        raise_argument_error(scale, error, locals())
    return result
