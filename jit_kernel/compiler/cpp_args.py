"""Turn Python specialization values into C++ template arguments (``make_cpp_args``)."""

from __future__ import annotations

import math
import re
from typing import Any

import torch

# torch dtype -> the C++ alias our headers define (sgl_kernel/utils.cuh, type.cuh).
# float64 maps to plain ``double``; there is no fp64_t alias in the headers.
CPP_DTYPE_MAP: dict[torch.dtype, str] = {
    torch.float16: "fp16_t",
    torch.bfloat16: "bf16_t",
    torch.float32: "fp32_t",
    torch.float64: "double",
    torch.float8_e4m3fn: "fp8_e4m3_t",
    torch.float8_e5m2: "fp8_e5m2_t",
    torch.int8: "int8_t",
    torch.int16: "int16_t",
    torch.int32: "int32_t",
    torch.int64: "int64_t",
    torch.uint8: "uint8_t",
    torch.bool: "bool",
}

# A C++ identifier or a qualified name such as ``device::fp16_t`` / ``::std::int32_t``.
_QUALIFIED_NAME = re.compile(r"^(::)?[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*$")


class CPPArgList(list[str]):
    """C++ template arguments; ``str()`` joins them with ``", "`` for ``f"Kernel<{args}>"``."""

    def __str__(self) -> str:
        return ", ".join(self)


def _float_literal(value: float, position: int) -> str:
    if not math.isfinite(value):
        raise TypeError(
            f"make_cpp_args: argument {position} is {value!r}; a C++ template argument must be "
            "a finite number"
        )
    text = repr(value)  # shortest text that round-trips, e.g. "0.1", "1e-06"
    if "." not in text and "e" not in text and "E" not in text:
        text += ".0"
    return text


def to_cpp_arg(value: Any, position: int = 0) -> str:
    """Convert one value; ``position`` (0-based) is used in error messages."""
    if isinstance(value, bool):  # before int: bool is a subclass of int
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float_literal(value, position)
    if isinstance(value, torch.dtype):
        try:
            return CPP_DTYPE_MAP[value]
        except KeyError:
            supported = ", ".join(str(d) for d in CPP_DTYPE_MAP)
            raise TypeError(
                f"make_cpp_args: argument {position} is {value}, which has no C++ type alias; "
                f"supported dtypes: {supported}"
            ) from None
    if isinstance(value, str):
        if _QUALIFIED_NAME.match(value):
            return value
        raise TypeError(
            f"make_cpp_args: argument {position} is the string {value!r}; a string must be a C++ "
            "identifier or qualified name (letters, digits, '_' and '::')"
        )
    raise TypeError(
        f"make_cpp_args: argument {position} is {value!r} of type {type(value).__name__}; "
        "expected bool, int, float, torch.dtype or a C++ identifier string"
    )


def make_cpp_args(*args: Any) -> CPPArgList:
    """``make_cpp_args(torch.float16, True, 128)`` gives ``["fp16_t", "true", "128"]``."""
    return CPPArgList(to_cpp_arg(value, position) for position, value in enumerate(args))
