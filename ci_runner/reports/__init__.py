"""Stage 6, reports of a shard run: console, JUnit XML, timings JSONL, GitHub step summary.

* :mod:`.shard_reports`: :class:`ShardReports`, the executor's listener that feeds them all;
* :mod:`.console`, :mod:`.junit`, :mod:`.timings`, :mod:`.step_summary`: one format each.
"""

from ci_runner.reports.console import ConsoleReport
from ci_runner.reports.shard_reports import ReportOptions, ShardReports

__all__ = ["ConsoleReport", "ReportOptions", "ShardReports"]
