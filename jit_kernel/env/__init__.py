"""The environment switches of the kernel library, its tests and its benchmarks.

* ``SGLANG_IS_IN_CI``: set by every CI workflow; tests and benchmarks use their small sweeps.
* ``SGLANG_JIT_KERNEL_RUN_FULL_TESTS``: set by nightly runs (``run_suite.py --nightly``); full
  sweeps even in CI.
* ``SGLANG_KERNEL_DISABLE_LOG_BANDWIDTH``: benchmarks print times only.

Booleans accept the values the runner accepts (``ci_runner.env``; a test keeps the two in
agreement): 1/true/yes/on, 0/false/no/off, any case; anything else is an error, not False.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TypeVar

T = TypeVar("T")

IS_IN_CI = "SGLANG_IS_IN_CI"
RUN_FULL_TESTS = "SGLANG_JIT_KERNEL_RUN_FULL_TESTS"
DISABLE_LOG_BANDWIDTH = "SGLANG_KERNEL_DISABLE_LOG_BANDWIDTH"

_BOOLEANS = {"1": True, "true": True, "yes": True, "on": True}
_BOOLEANS |= {"0": False, "false": False, "no": False, "off": False}


def get_bool_env(
    name: str, default: bool = False, environ: Mapping[str, str] | None = None
) -> bool:
    """Boolean variable ``name``; unset or empty gives ``default``; any other word raises."""
    value = (os.environ if environ is None else environ).get(name, "").strip()
    if not value:
        return default
    try:
        return _BOOLEANS[value.lower()]
    except KeyError:
        raise ValueError(
            f"environment variable {name}={value!r} is not a boolean: use one of "
            "1, on, true, yes or 0, false, no, off"
        ) from None


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
