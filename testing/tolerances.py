"""Comparisons for kernels that are not bit-exact against their torch reference.

A kernel that computes in fp32 and rounds once differs from an fp32 torch reference by the
reference's own rounding plus fp32 noise (summation order, ``rsqrtf``, ``expf``: about 1e-6
relative). Against the **unrounded** fp32 reference that is at most half an ulp of the output
dtype plus the noise, so ``ulps=1`` holds with margin; ``atol`` only matters for results near zero
(float16 subnormals). A kernel that rounds intermediates (an fp16 product before a sum) needs more
ulps: count its roundings. Bit-exact kernels compare with ``rtol=0, atol=0`` instead.
"""

from __future__ import annotations

import torch

#: One ulp of 1.0 (the spacing of values in [1, 2)) per dtype: 2^-(mantissa bits).
ULP = {torch.bfloat16: 2.0**-7, torch.float16: 2.0**-10, torch.float32: 2.0**-23}
#: The default absolute floor: below the smallest normal float16 (6.1e-5).
ATOL = 1e-5


def ulp(dtype: torch.dtype) -> float:
    """The relative spacing of ``dtype`` (``ULP``); a KeyError names an unsupported dtype."""
    try:
        return ULP[dtype]
    except KeyError:
        raise KeyError(f"no ulp for {dtype}; known: {', '.join(map(str, ULP))}") from None


def assert_within_ulps(
    actual: torch.Tensor,
    expected: torch.Tensor,
    *,
    ulps: float = 1.0,
    atol: float = ATOL,
    what: str = "",
) -> None:
    """Assert ``|actual - expected| <= atol + ulps * ulp(actual.dtype) * |expected|`` everywhere.

    ``expected`` is the fp32 reference, unrounded; ``actual`` the kernel's output in its dtype.
    The failure message (torch.testing's: the worst element and how many mismatch) starts with
    ``what``, the dtype, the shape and the strides.
    """
    context = f"{what} dtype={actual.dtype} shape={tuple(actual.shape)} strides={actual.stride()}"
    torch.testing.assert_close(
        actual.float(),
        expected.float(),
        rtol=ulps * ulp(actual.dtype),
        atol=atol,
        msg=lambda message: f"{context.strip()}\n{message}",
    )
