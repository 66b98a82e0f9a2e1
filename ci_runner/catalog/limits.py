"""The ranges the runner's numbers must fall in, wherever they come from (a registration, the
catalog, a flag), and how an out-of-range value is shown in the message that rejects it.

A value outside its range is an error naming the key or flag, never a value the runner chokes on
later (``est_time=1e308`` overflowed the planner; ``--gpus 10**11`` built a list of that many
slots).
"""

from __future__ import annotations

import math

MAX_SECONDS = 7 * 24 * 3600  # est_time, time limits, waits and budgets: a week at most
MAX_MINUTES = MAX_SECONDS // 60  # job-timeout-minutes, --matrix-target-minutes
MAX_GPUS = 1024  # gpus-per-file, min_gpus, --gpus, device ids of a runner
MAX_ATTEMPTS = 100  # --max-attempts
MAX_JOBS = 1024  # --jobs: files at a time on a CPU backend
SHOWN_DIGITS = 20


def number_text(value: object) -> str:
    """``repr(value)``, except that a huge integer is summarised (its repr can be 10,000 digits
    long, or raise past Python's 4,300-digit conversion limit)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        digits = int(value.bit_length() * math.log10(2)) + 1
        sign = "-" if value < 0 else ""
        return f"{sign}an integer of about {digits} digits"
    text = repr(value)
    return text if len(text) <= 2 * SHOWN_DIGITS else text[: 2 * SHOWN_DIGITS] + "..."


def is_finite_number(value: object) -> bool:
    """An ``int`` or ``float`` (not ``bool``) that is finite as a float."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, int):
        return value.bit_length() <= 1024  # float(value) would overflow
    return math.isfinite(value)
