"""``--junit-xml PATH``: one ``<testsuite>`` per file, rewritten atomically after every file.

Layout (the merge job relies on it): testsuite ``name`` = the file's POSIX path relative to the
root; ``<properties>`` ``path``, ``suite``, ``status``, ``attempts``, ``shard`` ("0/4"),
``est_time``, ``elapsed``; the file's pytest cases (or one case for a non-pytest file). Files
that timed out or crashed get an ``<error type="timeout|crashed">`` case, files that did not run
or are disabled a ``<skipped>`` case with the reason. Names and texts are made XML-safe
(:func:`~ci_runner.safe_text.xml_safe`), so a file name with an escape code or a child's NUL
byte never makes the report unreadable. A flaky file keeps its failed attempts in
``attempt.N`` properties and in the testsuite's ``<system-err>``. At the start every planned file
is written as not_run, so a job killed outright still lists every file.
"""

from __future__ import annotations

import io
import socket
from datetime import UTC, datetime
from pathlib import Path

from junitparser import Error, Failure, JUnitXml, Skipped, SystemErr, TestCase, TestSuite

from ci_runner.file_safety import write_atomic
from ci_runner.model import AttemptResult, CaseResult, FileResult, RunInfo, report_cases
from ci_runner.safe_text import xml_safe

__all__ = ["file_testsuite", "write_junit", "xml_safe"]

ATTEMPT_TEXT_BYTES = 16 * 1024


def _case(case: CaseResult) -> TestCase:
    element = TestCase(xml_safe(case.name), xml_safe(case.classname), round(case.time, 3))
    message = xml_safe(case.message) if case.message else None
    kind = xml_safe(case.type) if case.type else None
    if case.outcome == "failed":
        result = Failure(message, kind)
    elif case.outcome == "error":
        result = Error(message, kind)
    elif case.outcome == "skipped":
        result = Skipped(message)
    else:
        return element
    if case.text:
        result.text = xml_safe(case.text)
    element.result = [result]
    return element


def _attempt_summary(attempt: AttemptResult) -> str:
    return f"{attempt.status} in {attempt.elapsed:.1f}s" + (
        f": {attempt.reason}" if attempt.reason else ""
    )


def _attempt_log(attempts: tuple[AttemptResult, ...]) -> str:
    parts = []
    for attempt in attempts:
        tail = attempt.output_tail[-ATTEMPT_TEXT_BYTES:]
        cut = attempt.tail_truncated or len(attempt.output_tail) > ATTEMPT_TEXT_BYTES
        parts.append(
            f"===== attempt {attempt.number}: {_attempt_summary(attempt)} =====\n"
            + ("[... output truncated, last part follows ...]\n" if cut else "")
            + tail
        )
    return xml_safe("\n".join(parts))


def file_testsuite(result: FileResult, info: RunInfo) -> TestSuite:
    """The ``<testsuite>`` of one file; every name and text goes through :func:`xml_safe`."""
    suite = TestSuite(xml_safe(result.path))
    properties = [
        ("path", result.path),
        ("suite", result.suite),
        ("status", result.status),
        ("attempts", str(len(result.attempts))),
        ("shard", info.shard),
        ("est_time", f"{result.est_time:g}"),
        ("elapsed", f"{result.elapsed:.3f}"),
    ]
    if result.reason:
        properties.append(("reason", result.reason))
    if result.timeout_limit is not None:
        properties.append(("timeout", f"{result.timeout_limit:g}"))
    properties += [(f"attempt.{a.number}", _attempt_summary(a)) for a in result.attempts]
    for name, value in properties:
        suite.add_property(name, xml_safe(value))
    suite.add_testcases([_case(case) for case in report_cases(result)])
    failed = result.failed_attempts
    if failed:
        suite.append(SystemErr(_attempt_log(failed)))
    suite.time = round(result.elapsed, 3)
    suite.hostname = socket.gethostname()
    suite.timestamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return suite


def write_junit(path: Path, results: list[FileResult], info: RunInfo) -> None:
    """Write the whole report to ``path`` atomically (temporary file + ``os.replace``)."""
    xml = JUnitXml(xml_safe(f"run_suite {info.hw} {','.join(info.suites)} shard {info.shard}"))
    for result in results:
        xml.add_testsuite(file_testsuite(result, info))
    xml.update_statistics()
    for suite, result in zip(xml, results, strict=True):
        suite.time = round(result.elapsed, 3)  # the file's wall time, not the sum of its cases
    xml.time = round(sum(r.elapsed for r in results), 3)
    buffer = io.BytesIO()
    xml.write(buffer)
    write_atomic(path, buffer.getvalue())
