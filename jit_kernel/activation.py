"""Gated activations: ``silu_and_mul``, ``gelu_and_mul``, ``gelu_tanh_and_mul(input, out=None)``.

``out = act(input[..., :d]) * input[..., d:]`` where ``input[..., :d]`` is the gate half and
``input[..., d:]`` the up half of the last dim ``2 * d``; ``act`` is SiLU, GELU (exact, erf
form) or GELU with the tanh approximation, as torch.nn.functional.silu / gelu(approximate=
"none") / gelu(approximate="tanh"). Computed in float32 (accurate expf/erff/tanhf, no fast
math) and rounded once. One module holds the three activations, every dtype and every size
(dispatched in C++); 16-byte vectors whenever the row size and pointers allow, two (gate, up)
vector pairs in flight per thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from jit_kernel.wrapper import FirstCallBinding, jit_module, raise_argument_error

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
OPS = ("silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul")


_jit_activation_module = jit_module(
    "activation", "elementwise/activation.cuh", {op: f"{op}_by_dtype" for op in OPS}
)


def can_use_activation(d: int, dtype: torch.dtype) -> bool:
    """True when the gated activations support ``d`` output elements per row of ``dtype``.

    float16/bfloat16/float32 and any ``d >= 0`` below 2**31 (odd sizes use narrower vectors).
    Needs no GPU, compiles nothing, never raises.
    """
    return dtype in SUPPORTED_DTYPES and type(d) is int and 0 <= d < 2**31


def _gated_activation(op: str, doc: str) -> Callable[..., torch.Tensor]:
    """The public wrapper of ``op`` (``silu_and_mul``, ...): the same body for the three ops.

    ``kernel`` is the module's ``op`` export once the first call has bound it (a closure
    variable: as cheap to load as a global).
    """

    def rebind(function: Any) -> None:
        nonlocal kernel
        kernel = function

    kernel: Any = FirstCallBinding(
        _jit_activation_module, op, op=op, tensor_arg=(1, "input"), rebind=rebind
    )

    def gated(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        try:
            if not input.is_contiguous():
                input = input.contiguous()
            if out is None:
                shape = input.shape
                out = input.new_empty((*shape[:-1], shape[-1] // 2))
            kernel(out, input)
        except (AttributeError, TypeError, IndexError) as error:
            if (
                isinstance(error, IndexError)
                and isinstance(input, torch.Tensor)
                and input.dim() == 0
            ):
                raise RuntimeError(
                    f"{op}: tensor 'input' must have an even last dim (2 * d) but has shape []"
                ) from None
            raise_argument_error(gated, error, locals())
        return out

    gated.__name__ = gated.__qualname__ = op
    gated.__doc__ = doc
    return gated


silu_and_mul = _gated_activation(
    "silu_and_mul",
    """Return ``silu(input[..., :d]) * input[..., d:]`` (written into ``out`` when given).

    ``input``: CUDA, float16/bfloat16/float32, any rank >= 1 with an even last dim ``2 * d``;
    a non-contiguous ``input`` is copied to a contiguous one first. ``out``: optional,
    ``input.shape[:-1] + (d,)``, same dtype and device, contiguous, not overlapping ``input``.
    ``silu(x) = x / (1 + exp(-x))`` in float32, the product rounded once. Raises TypeError for a
    non-tensor argument, RuntimeError (naming the tensor) for a CPU tensor, an unsupported
    dtype, an odd last dim or a mismatched ``out``.
    """,
)
gelu_and_mul = _gated_activation(
    "gelu_and_mul",
    """Return ``gelu(input[..., :d]) * input[..., d:]`` with the exact (erf) GELU.

    ``gelu(x) = x / 2 * (1 + erf(x / sqrt(2)))`` (torch's ``approximate="none"``). Shapes, dtypes,
    ``out`` and errors as :func:`silu_and_mul`.
    """,
)
gelu_tanh_and_mul = _gated_activation(
    "gelu_tanh_and_mul",
    """Return ``gelu_tanh(input[..., :d]) * input[..., d:]`` (tanh-approximated GELU).

    ``gelu_tanh(x) = x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))`` (torch's
    ``approximate="tanh"``). Shapes, dtypes, ``out`` and errors as :func:`silu_and_mul`.
    """,
)
