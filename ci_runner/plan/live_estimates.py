"""``--partition-model-file PATH``: measured per-file seconds that replace est_time for packing.

The file is SGLang's ``sglang-ci-stats`` ``model.json``; the runner reads one key of it::

    {"est": {"<suite>": {"<path from the repository root>": <seconds>, ...}, ...}, ...}

A file of a suite the ``est`` table lists is packed with its measured seconds; other files keep
their in-source est_time, and so does every time limit. A missing file is a notice (the workflow
that fetches it may be skipped) and the run packs with est_time; a file that exists but does not
have this shape is an error naming the file and the key, because packing silently from the wrong
numbers would give each shard a different plan from its siblings.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ci_runner.catalog.limits import MAX_SECONDS, is_finite_number, number_text
from ci_runner.file_safety import read_regular_text, why

EST_KEY = "est"


class LiveEstimateError(ValueError):
    """The partition model file exists but is not usable; the message names file and key."""


@dataclass(frozen=True)
class LiveEstimates:
    """Measured seconds by suite, then by root-relative path; ``notice`` says what was used."""

    by_suite: dict[str, dict[str, float]] = field(default_factory=dict)
    notice: str = ""

    def seconds(self, suite: str, path: str, est_time: float) -> float:
        """The packing estimate of one file: measured when known, else ``est_time``."""
        return self.by_suite.get(suite, {}).get(path, est_time)


def load_live_estimates(path: Path, suites: Iterable[str]) -> LiveEstimates:
    """Read the ``est`` table of ``path`` for ``suites`` (see module docstring)."""
    suites = list(suites)
    try:
        text = read_regular_text(path)
    except FileNotFoundError:
        return LiveEstimates(notice=f"partition model {path}: not found; packing with est_time")
    except (OSError, ValueError) as exc:  # not a regular file, not UTF-8, no permission
        raise LiveEstimateError(
            f"--partition-model-file {path}: cannot read it: {why(exc)}"
        ) from None
    try:
        model = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise LiveEstimateError(f"--partition-model-file {path}: not valid JSON: {exc}") from None
    where = f"--partition-model-file {path}"
    if not isinstance(model, dict):
        raise LiveEstimateError(f"{where}: expected a JSON object with an {EST_KEY!r} key")
    table = model.get(EST_KEY)
    if not isinstance(table, dict):
        raise LiveEstimateError(
            f"{where}: key {EST_KEY!r} must be an object of suite -> {{path: seconds}}, got "
            f"{_shown(table)}"
        )
    by_suite: dict[str, dict[str, float]] = {}
    for suite in suites:
        entries = table.get(suite)
        if entries is None:
            continue
        if not isinstance(entries, dict):
            raise LiveEstimateError(
                f"{where}: key {EST_KEY}.{suite} must be an object of path -> seconds, got "
                f"{_shown(entries)}"
            )
        for file, seconds in entries.items():
            if not is_finite_number(seconds) or not 0 <= seconds <= MAX_SECONDS:
                raise LiveEstimateError(
                    f"{where}: key {EST_KEY}.{suite}.{file} must be a number of seconds from 0 "
                    f"to {MAX_SECONDS}, got {_shown(seconds)}"
                )
        if entries:
            by_suite[suite] = {file: float(seconds) for file, seconds in entries.items()}
    count = sum(len(entries) for entries in by_suite.values())
    missing = [s for s in suites if s not in by_suite]
    notice = f"partition model {path}: {count} measured file time(s)"
    if missing:
        notice += f"; est_time for suite(s) it does not list: {', '.join(missing)}"
    return LiveEstimates(by_suite, notice)


def _shown(value: object) -> str:
    return number_text(value) if not isinstance(value, dict | list) else type(value).__name__
