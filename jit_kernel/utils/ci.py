"""The CI environment contract shared by kernel tests and benchmarks.

* ``SGLANG_IS_IN_CI``: set by every CI workflow; tests and benchmarks use their small sweeps.
* ``SGLANG_JIT_KERNEL_RUN_FULL_TESTS``: set by nightly runs (``run_suite.py --nightly``); full
  sweeps even in CI.

Both are read through the project's one boolean parser, :func:`ci_runner.env.get_bool_env`.
"""

from __future__ import annotations

from typing import TypeVar

from ci_runner.env import IS_IN_CI, RUN_FULL_TESTS, get_bool_env

T = TypeVar("T")


def is_in_ci() -> bool:
    """True when ``SGLANG_IS_IN_CI`` is set to a true value."""
    return get_bool_env(IS_IN_CI)


def should_run_full_tests() -> bool:
    """True when ``SGLANG_JIT_KERNEL_RUN_FULL_TESTS`` asks for the full parameter grids."""
    return get_bool_env(RUN_FULL_TESTS)


def get_ci_test_range(full_range: T, ci_range: T) -> T:
    """The full grid locally and in nightly runs; the small ``ci_range`` in per-commit CI."""
    if should_run_full_tests():
        return full_range
    if is_in_ci():
        return ci_range
    return full_range
