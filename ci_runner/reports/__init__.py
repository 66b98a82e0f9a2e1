"""Stage 6, reports of a shard run: console, JUnit XML, timings JSONL, GitHub step summary.

* :mod:`.shard_reports`: :class:`ShardReports`, the executor's listener that feeds them all;
* :mod:`.console`, :mod:`.junit`, :mod:`.timings`, :mod:`.step_summary`: one format each.

The names below load on first use, so a dry run never loads junitparser.
"""

from ci_runner.lazy_exports import lazy_exports

_EXPORTS = {
    "ConsoleReport": "ci_runner.reports.console",
    "ReportOptions": "ci_runner.reports.shard_reports",
    "ShardReports": "ci_runner.reports.shard_reports",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
