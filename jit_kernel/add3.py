"""``add3(a, b, c, out=None)``: element-wise ``a + b + c`` (fp16/bf16/fp32) as a JIT CUDA kernel."""

import torch

from jit_kernel.wrapper import bind_export, jit_module, raise_argument_error

_jit_add3_module = jit_module("add3", "elementwise/add3.cuh", ["add3"])
_add3 = bind_export(globals(), _jit_add3_module, "add3", tensor_arg=(1, "a"))


def add3(
    a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, out: torch.Tensor | None = None
) -> torch.Tensor:
    """Return ``a + b + c`` (written into ``out`` when given), summed in fp32, rounded once.

    ``a``, ``b``, ``c``: CUDA tensors of one shape (any), one dtype (float16/bfloat16/float32)
    and one device; any alignment; non-contiguous ones are copied first. ``out``: optional,
    same shape, dtype and device, contiguous (it may be one of the inputs). Raises TypeError
    for a non-tensor argument, RuntimeError (naming the tensor) for anything else.
    """
    try:
        result = torch.empty_like(a) if out is None else out
        if not _add3(result, a, b, c):  # an input is not contiguous: use copies
            a, b, c = a.contiguous(), b.contiguous(), c.contiguous()
            result = torch.empty_like(a) if out is None else out
            _add3(result, a, b, c)
    except (AttributeError, TypeError) as error:
        raise_argument_error(add3, error, locals())
    return result
