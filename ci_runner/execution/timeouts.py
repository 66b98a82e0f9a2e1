"""Per-file time limits.

Flat: ``--timeout-per-file S``, else the suite's ``timeout-per-file`` from the catalog, else
1200 s. With ``--timeout-from-est-time`` the limit follows the file's declared est_time::

    limit = min(max(3 * est_time + 60, 60), cap)

where ``cap`` is ``--timeout-per-file`` when given, else 3600 s. The slack is additive as well
as proportional because slow runs are mostly slow by a constant (cold caches, JIT compiles).
"""

from __future__ import annotations

from collections.abc import Mapping

from ci_runner.catalog import DEFAULT_TIMEOUT_PER_FILE

EST_FACTOR = 3.0
EST_SLACK_SECONDS = 60.0
EST_FLOOR_SECONDS = 60.0
EST_CAP_SECONDS = 3600.0


def timeout_from_est(est_time: float, cap: float | None) -> float:
    """The est-derived limit (see module docstring)."""
    limit = max(EST_FACTOR * est_time + EST_SLACK_SECONDS, EST_FLOOR_SECONDS)
    return min(limit, cap if cap is not None else EST_CAP_SECONDS)


def timeout_for(
    suite: str,
    est_time: float,
    *,
    flag_timeout: float | None,
    from_est: bool,
    suite_timeouts: Mapping[str, float | None],
) -> float:
    """The time limit in seconds for one attempt of one file."""
    if from_est:
        return timeout_from_est(est_time, flag_timeout)
    if flag_timeout is not None:
        return flag_timeout
    suite_limit = suite_timeouts.get(suite)
    return float(suite_limit) if suite_limit else DEFAULT_TIMEOUT_PER_FILE
