"""Per-file time limits.

Flat: ``--timeout-per-file S``, else the suite's ``timeout-per-file`` from the catalog, else
1200 s; with ``--enable-retry`` the catalog's ``retry-timeout-increase`` (or the flag of that
name) is added to every attempt's flat limit, as SGLang's runner does. With
``--timeout-from-est-time`` the limit follows the file's declared est_time, by the catalog's
``est-timeout`` rule:

* ``"ci-runner"`` (default): ``min(max(3 * est_time + 60, 60), cap)``, ``cap`` =
  ``--timeout-per-file`` when given, else 3600 s;
* ``"sglang"``: ``max(1.5 * est_time, est_time + 1800)``, no cap (``--timeout-per-file`` is
  ignored, as upstream ignores it).

Both add slack as well as a proportion because slow runs are mostly slow by a constant (cold
caches, JIT compiles, server start).
"""

from __future__ import annotations

from collections.abc import Mapping

from ci_runner.catalog import DEFAULT_TIMEOUT_PER_FILE
from ci_runner.catalog.execution_settings import EST_TIMEOUT_CI_RUNNER, EST_TIMEOUT_SGLANG

EST_FACTOR = 3.0
EST_SLACK_SECONDS = 60.0
EST_FLOOR_SECONDS = 60.0
EST_CAP_SECONDS = 3600.0
SGLANG_EST_FACTOR = 1.5
SGLANG_EST_SLACK_SECONDS = 1800.0


def timeout_from_est(
    est_time: float, cap: float | None, rule: str = EST_TIMEOUT_CI_RUNNER
) -> float:
    """The est-derived limit (see module docstring)."""
    if rule == EST_TIMEOUT_SGLANG:
        return max(SGLANG_EST_FACTOR * est_time, est_time + SGLANG_EST_SLACK_SECONDS)
    limit = max(EST_FACTOR * est_time + EST_SLACK_SECONDS, EST_FLOOR_SECONDS)
    return min(limit, cap if cap is not None else EST_CAP_SECONDS)


def timeout_for(
    suite: str,
    est_time: float,
    *,
    flag_timeout: float | None,
    from_est: bool,
    suite_timeouts: Mapping[str, float | None],
    est_rule: str = EST_TIMEOUT_CI_RUNNER,
    retry_increase: float = 0.0,
) -> float:
    """The time limit in seconds for one attempt of one file.

    ``retry_increase``: added to a flat limit (0 unless retries are on).
    """
    if from_est:
        return timeout_from_est(est_time, flag_timeout, est_rule)
    if flag_timeout is not None:
        return flag_timeout + retry_increase
    suite_limit = suite_timeouts.get(suite)
    return (float(suite_limit) if suite_limit else DEFAULT_TIMEOUT_PER_FILE) + retry_increase
