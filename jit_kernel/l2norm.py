"""``l2norm(input, eps=1e-6, out=None)``: each row divided by its L2 norm, fp16/bf16."""

import torch

from jit_kernel.wrapper import bind_export, jit_module, raise_argument_error

_jit_l2norm_module = jit_module("l2norm", "elementwise/l2norm.cuh", ["l2norm"])
_l2norm = bind_export(globals(), _jit_l2norm_module, "l2norm", tensor_arg=(1, "input"))


def l2norm(input: torch.Tensor, eps: float = 1e-6, out: torch.Tensor | None = None) -> torch.Tensor:
    """Return ``input / sqrt(sum(input**2, -1) + eps)`` per row of ``input`` ``[N, D]``."""
    if type(eps) is bool:  # tvm-ffi would read True as 1.0
        raise_argument_error(l2norm, TypeError(), locals())
    try:
        result = torch.empty_like(input) if out is None else out
        _l2norm(result, input, eps)
    except (AttributeError, TypeError) as error:
        raise_argument_error(l2norm, error, locals())
    return result
