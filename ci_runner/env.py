"""The project's one parser for boolean environment variables.

Every boolean switch (``SGLANG_IS_IN_CI``, ``SGLANG_JIT_KERNEL_RUN_FULL_TESTS``,
``SGLANG_KERNEL_DISABLE_LOG_BANDWIDTH``, ...) is read through :func:`get_bool_env`, so ``1``
and ``true`` mean the same everywhere and a typo is an error instead of a silent ``False``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

TRUE_VALUES = frozenset({"1", "true", "yes", "on"})
FALSE_VALUES = frozenset({"0", "false", "no", "off"})

IS_IN_CI = "SGLANG_IS_IN_CI"
RUN_FULL_TESTS = "SGLANG_JIT_KERNEL_RUN_FULL_TESTS"
DISABLE_LOG_BANDWIDTH = "SGLANG_KERNEL_DISABLE_LOG_BANDWIDTH"
GITHUB_ACTIONS = "GITHUB_ACTIONS"
CGROUPS = "CI_RUNNER_CGROUPS"  # default on: a cgroup per attempt where one can be created
# Boolean variables run_suite.py checks before anything runs: a typo is exit 2, not a default.
CHECKED_BOOLEAN_VARIABLES = (
    IS_IN_CI,
    RUN_FULL_TESTS,
    DISABLE_LOG_BANDWIDTH,
    GITHUB_ACTIONS,
    CGROUPS,
)


class EnvVarError(ValueError):
    """A boolean environment variable holds a value that is neither true nor false."""


def parse_bool(value: str, name: str) -> bool:
    """Parse ``value`` (the content of variable ``name``) as a boolean, case-insensitively."""
    text = value.strip().lower()
    if text in TRUE_VALUES:
        return True
    if text in FALSE_VALUES:
        return False
    raise EnvVarError(
        f"environment variable {name}={value!r} is not a boolean: "
        f"use one of {', '.join(sorted(TRUE_VALUES))} or {', '.join(sorted(FALSE_VALUES))}"
    )


def get_bool_env(
    name: str, default: bool = False, environ: Mapping[str, str] | None = None
) -> bool:
    """Read boolean variable ``name``; unset or empty gives ``default``; garbage raises."""
    env = os.environ if environ is None else environ
    value = env.get(name)
    if value is None or value.strip() == "":
        return default
    return parse_bool(value, name)


def check_boolean_environment(environ: Mapping[str, str] | None = None) -> str | None:
    """The error message for the first invalid variable of ``CHECKED_BOOLEAN_VARIABLES``."""
    for name in CHECKED_BOOLEAN_VARIABLES:
        try:
            get_bool_env(name, environ=environ)
        except EnvVarError as exc:
            return str(exc)
    return None
