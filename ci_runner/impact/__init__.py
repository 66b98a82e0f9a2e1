"""Stage 4, change impact: of the selected files, keep those a change can affect.

``--changed-since REF`` / ``--changed-files PATH`` (:mod:`.changes`) name the changed files; the
dependency graph of the suite's test files (:mod:`.graph`: Python imports, kernel loader
references and the ``#include`` closure the JIT cache key uses) decides which tests each one
reaches (:mod:`.selection`), and anything it cannot attribute runs the whole suite, with the
reason (:mod:`.report` shows them). The repository's layout comes from the catalog's
``[tool.ci-runner.change-impact]`` table (:mod:`.config`).
"""

from ci_runner.impact.changes import (
    Change,
    ChangeInputError,
    ChangeSet,
    changes_from_list,
    changes_since,
)
from ci_runner.impact.record_format import RecordError, RecordSet, read_records
from ci_runner.impact.recorded import select_with_records
from ci_runner.impact.report import impact_document, impact_lines
from ci_runner.impact.selection import ChangeImpact, Link, Reason, select_changed

__all__ = [
    "Change",
    "ChangeImpact",
    "ChangeInputError",
    "ChangeSet",
    "Link",
    "Reason",
    "RecordError",
    "RecordSet",
    "changes_from_list",
    "changes_since",
    "impact_document",
    "impact_lines",
    "read_records",
    "select_changed",
    "select_with_records",
]
