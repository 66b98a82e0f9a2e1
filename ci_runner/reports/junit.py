"""``--junit-xml PATH``: one ``<testsuite>`` per file, rewritten atomically after every file.

Layout (the merge job relies on it): testsuite ``name`` = the file's POSIX path relative to the
root; ``<properties>`` ``path``, ``suite``, ``status``, ``attempts``, ``shard`` ("0/4"),
``est_time``, ``elapsed``; the file's test cases (or one case for a file without any), each with
``file`` and ``line`` attributes. The case that was running when a file timed out or crashed
gets ``<error type="timeout|crashed">`` with the stacks and the output; a failure no case shows
gets a case for the whole file; files that did not run or are disabled a ``<skipped>`` case with
the reason. Retries use Maven Surefire's elements, so viewers show them: a case that failed and
then passed carries ``<flakyFailure>`` / ``<flakyError>`` for each failed attempt, a case that
failed every attempt ``<rerunFailure>`` / ``<rerunError>`` for the attempts before the last; a
flaky case's first child is a ``<system-out>`` saying so, for viewers without those elements.
Names and texts are made XML-safe (:func:`~ci_runner.safe_text.xml_safe`), so a file name with an
escape code or a child's NUL byte never makes the report unreadable. Failed attempts are also
kept in ``attempt.N`` properties and in the testsuite's ``<system-err>``. At the start every
planned file is written as not_run, so a job killed outright still lists every file.
"""

from __future__ import annotations

import io
import socket
from datetime import UTC, datetime
from pathlib import Path

from junitparser import (
    Attr,
    Error,
    Failure,
    IntAttr,
    JUnitXml,
    Skipped,
    SystemErr,
    SystemOut,
    TestSuite,
)
from junitparser.xunit2 import FlakyError, FlakyFailure, RerunError, RerunFailure
from junitparser.xunit2 import TestCase as SurefireCase

from ci_runner.execution.stacks import format_stacks
from ci_runner.file_safety import write_atomic
from ci_runner.model import (
    AttemptResult,
    CaseResult,
    FileResult,
    RunInfo,
    report_cases,
)
from ci_runner.safe_text import xml_safe

__all__ = ["file_testsuite", "write_junit", "xml_safe"]

ATTEMPT_TEXT_BYTES = 16 * 1024


class _TestCase(SurefireCase):
    """A ``<testcase>`` with the ``file`` and ``line`` attributes viewers link from."""

    file = Attr()
    line = IntAttr()


def _case(case: CaseResult) -> _TestCase:
    element = _TestCase(xml_safe(case.name), xml_safe(case.classname), round(case.time, 3))
    if case.file:
        element.file = xml_safe(case.file)
    if case.line > 0:
        element.line = case.line
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


def _interim(case: CaseResult, flaky: bool):
    """A Surefire element for ``case``'s failure in another attempt."""
    if flaky:
        kind = FlakyFailure if case.outcome == "failed" else FlakyError
    else:
        kind = RerunFailure if case.outcome == "failed" else RerunError
    element = kind(xml_safe(case.message) or None, xml_safe(case.type) or None)
    if case.text:
        element.stack_trace = xml_safe(case.text)
    return element


def _other_attempts(result: FileResult, case: CaseResult) -> list[CaseResult]:
    """The same case failing in the attempts before the decisive one (the file's own case
    matches the file's own case)."""
    found = []
    for attempt in result.attempts[:-1]:
        for other in attempt.cases:
            same = other.case_id == case.case_id if case.case_id else not other.case_id
            if same and other.outcome in ("failed", "error"):
                found.append(other)
                break
    return found


def _flaky_note(result: FileResult, others: list[CaseResult]) -> SystemOut:
    """A passing case's ``<system-out>`` naming the attempts it failed in, first among its
    children: viewers that know no Surefire element (junit2html, xunit-viewer) show this."""
    failed = "; ".join(f"{other.outcome}: {other.message}" for other in others)
    return SystemOut(xml_safe(f"flaky: {failed}; passed on attempt {len(result.attempts)}"))


def _cases(result: FileResult) -> list[_TestCase]:
    elements = []
    retried = len(result.attempts) > 1
    for case in report_cases(result):
        element = _case(case)
        failed = case.outcome in ("failed", "error")
        if retried and (failed or case.outcome == "passed"):
            # a case that passed after failing is flaky, whatever the rest of its file did
            others = _other_attempts(result, case)
            if not failed and others:
                element.append(_flaky_note(result, others))
            for other in others:
                element.add_interim_result(_interim(other, flaky=not failed))
        elements.append(element)
    return elements


def _attempt_summary(attempt: AttemptResult) -> str:
    return f"{attempt.status} in {attempt.elapsed:.1f}s" + (
        f": {attempt.reason}" if attempt.reason else ""
    )


def _attempt_log(attempts: tuple[AttemptResult, ...]) -> str:
    parts = []
    for attempt in attempts:
        tail = attempt.output_tail[-ATTEMPT_TEXT_BYTES:]
        cut = attempt.tail_truncated or len(attempt.output_tail) > ATTEMPT_TEXT_BYTES
        stacks = format_stacks(attempt.stacks, attempt.stacks_omitted)
        parts.append(
            f"===== attempt {attempt.number}: {_attempt_summary(attempt)} =====\n"
            + (
                f"[Python stacks before the kill]\n{stacks[-ATTEMPT_TEXT_BYTES:]}\n"
                if stacks
                else ""
            )
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
    if result.tolerated:
        properties.append(("tolerated", result.tolerated))
    if result.quarantined is not None:
        properties.append(("quarantined", result.quarantined))
    if result.resumed:
        properties.append(("resumed", "true"))
    properties += [(f"attempt.{a.number}", _attempt_summary(a)) for a in result.attempts]
    for name, value in properties:
        suite.add_property(name, xml_safe(value))
    suite.add_testcases(_cases(result))
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
