"""Tensor shorthands and the CI range switch for benchmark files."""

from __future__ import annotations

from typing import TypeVar

import torch

from jit_kernel.env import get_ci_test_range

T = TypeVar("T")

DEFAULT_DTYPE = torch.bfloat16
DEFAULT_DEVICE = "cuda"
RANDOM_INT_BOUND = 100  # integer tensors from create_random are uniform in [-100, 100)


def create_random(
    *shape: int, dtype: torch.dtype = DEFAULT_DTYPE, device: str | torch.device = DEFAULT_DEVICE
) -> torch.Tensor:
    """``torch.randn(*shape)`` in ``dtype`` on ``device``; integer dtypes get small random ints."""
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(*shape, dtype=dtype, device=device)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, device=device).to(torch.bool)
    low = 0 if not torch.iinfo(dtype).min else -RANDOM_INT_BOUND
    return torch.randint(low, RANDOM_INT_BOUND, shape, dtype=dtype, device=device)


def create_empty(
    *shape: int, dtype: torch.dtype = DEFAULT_DTYPE, device: str | torch.device = DEFAULT_DEVICE
) -> torch.Tensor:
    """``torch.empty(*shape)`` in ``dtype`` on ``device``."""
    return torch.empty(*shape, dtype=dtype, device=device)


def get_benchmark_range(full_range: T, ci_range: T) -> T:
    """``ci_range`` in per-commit CI, else ``full_range`` (nightly runs get the full range).

    Same rule as ``jit_kernel.env.get_ci_test_range`` and ``@parametrize``'s ``ci_vals``:
    ``SGLANG_JIT_KERNEL_RUN_FULL_TESTS=1`` wins over ``SGLANG_IS_IN_CI=1``.
    """
    return get_ci_test_range(full_range, ci_range)
