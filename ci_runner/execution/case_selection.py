"""The cases one run of a file is asked to run: :class:`CaseSelection`.

``only``: the node ids of ``--tests`` / ``--from-junit`` (an id names a case, every case of a
class, or every parameter of a test); ``None`` runs every case. ``skip``: exact ids of cases that
already have a result, left out of a retry (only what failed runs again) and of the fresh
process that takes over after a crash (only what did not run yet). The runner writes it next to
the attempt's other files and names it in ``$CI_RUNNER_CASE_SELECTION``; the child bootstrap
applies it (:mod:`ci_runner.execution.child.ci_runner_case_select`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ci_runner.execution.child.ci_runner_case_select import SELECTION_VARIABLE

__all__ = ["EVERY_CASE", "SELECTION_VARIABLE", "CaseSelection"]


@dataclass(frozen=True)
class CaseSelection:
    """Which cases of a file run: ``only`` these (None: all), minus the ``skip`` ids."""

    only: tuple[str, ...] | None = None
    skip: frozenset[str] = field(default_factory=frozenset)

    @property
    def active(self) -> bool:
        return self.only is not None or bool(self.skip)

    def skipping(self, ids: Iterable[str]) -> CaseSelection:
        """This selection, also leaving out ``ids``."""
        return CaseSelection(self.only, self.skip | frozenset(ids))

    def write(self, path: Path) -> None:
        """The file the child reads (``$CI_RUNNER_CASE_SELECTION``)."""
        document = {
            "only": None if self.only is None else list(self.only),
            "skip": sorted(self.skip),
        }
        path.write_text(json.dumps(document), encoding="utf-8")

    def describe(self) -> str:
        """``2 case(s) asked for`` / ``every case but the 5 that already ran``, for messages."""
        if self.only is not None:
            return f"the {len(self.only)} case(s) asked for"
        return f"every case but the {len(self.skip)} that already have a result"


EVERY_CASE = CaseSelection()
