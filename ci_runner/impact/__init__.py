"""Stage 4, change impact: of the selected files, keep those a change can affect.

``--changed-since REF`` / ``--changed-files PATH`` (:mod:`.changes`) name the changed files; the
dependency graph of the suite's test files (:mod:`.graph`: Python imports, kernel loader
references and the ``#include`` closure the JIT cache key uses) decides which tests each one
reaches (:mod:`.selection`), and anything it cannot attribute or prove is kept (fail open), with
the reason (:mod:`.report` shows them: one summary line for a run, the reasons for a dry run).
The repository's layout comes from its packaging (:mod:`.import_roots`) and the catalog's
``[tool.ci-runner.change-impact]`` table (:mod:`.config`).

The names below load on first use, so a run without ``--changed-*`` never loads the graph.
"""

from ci_runner.lazy_exports import lazy_exports

_EXPORTS = {
    "Change": "ci_runner.impact.changes",
    "ChangeInputError": "ci_runner.impact.changes",
    "ChangeSet": "ci_runner.impact.changes",
    "changes_from_list": "ci_runner.impact.changes",
    "changes_since": "ci_runner.impact.changes",
    "impact_document": "ci_runner.impact.report",
    "impact_lines": "ci_runner.impact.report",
    "impact_summary": "ci_runner.impact.report",
    "ChangeImpact": "ci_runner.impact.selection",
    "Link": "ci_runner.impact.selection",
    "Reason": "ci_runner.impact.selection",
    "RecordedDependencies": "ci_runner.impact.selection",
    "select_changed": "ci_runner.impact.selection",
    "RecordError": "ci_runner.impact.record_format",
    "RecordSet": "ci_runner.impact.record_format",
    "read_records": "ci_runner.impact.record_format",
    "select_with_records": "ci_runner.impact.recorded",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
