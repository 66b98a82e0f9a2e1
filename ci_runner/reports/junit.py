"""``--junit-xml PATH``: one ``<testsuite>`` per file, rewritten atomically after every file.

Layout (the merge job relies on it): testsuite ``name`` = the file's POSIX path relative to the
root; ``<properties>`` ``path``, ``suite``, ``status``, ``attempts``, ``shard`` ("0/4"),
``est_time``, ``elapsed``; the file's pytest cases (or one case for a non-pytest file). Files
that timed out or crashed get an ``<error type="timeout|crashed">`` case, files that did not run
or are disabled a ``<skipped>`` case with the reason. A flaky file keeps its failed attempts in
``attempt.N`` properties and in the testsuite's ``<system-err>``. At the start every planned file
is written as not_run, so a job killed outright still lists every file.
"""

from __future__ import annotations

import os
import re
import socket
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from junitparser import Error, Failure, JUnitXml, Skipped, SystemErr, TestCase, TestSuite

from ci_runner.model import AttemptResult, CaseResult, FileResult, RunInfo

_XML_ILLEGAL = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
ATTEMPT_TEXT_BYTES = 16 * 1024


def xml_safe(text: str) -> str:
    """Replace characters XML 1.0 forbids (NUL, escape codes, ...) with ``\\xNN``."""
    return _XML_ILLEGAL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def _case(case: CaseResult) -> TestCase:
    element = TestCase(xml_safe(case.name), xml_safe(case.classname), round(case.time, 3))
    message = xml_safe(case.message) if case.message else None
    if case.outcome == "failed":
        result = Failure(message, case.type or None)
    elif case.outcome == "error":
        result = Error(message, case.type or None)
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
    """The ``<testsuite>`` of one file."""
    suite = TestSuite(result.path)
    suite.add_property("path", result.path)
    suite.add_property("suite", result.suite)
    suite.add_property("status", result.status)
    suite.add_property("attempts", str(len(result.attempts)))
    suite.add_property("shard", info.shard)
    suite.add_property("est_time", f"{result.est_time:g}")
    suite.add_property("elapsed", f"{result.elapsed:.3f}")
    if result.reason:
        suite.add_property("reason", xml_safe(result.reason))
    if result.timeout_limit is not None:
        suite.add_property("timeout", f"{result.timeout_limit:g}")
    for attempt in result.attempts:
        suite.add_property(f"attempt.{attempt.number}", xml_safe(_attempt_summary(attempt)))
    suite.add_testcases([_case(case) for case in result.cases])
    failed = result.failed_attempts
    if failed:
        suite.append(SystemErr(_attempt_log(failed)))
    suite.time = round(result.elapsed, 3)
    suite.hostname = socket.gethostname()
    suite.timestamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return suite


def write_junit(path: Path, results: list[FileResult], info: RunInfo) -> None:
    """Write the whole report to ``path`` atomically (temporary file + ``os.replace``)."""
    xml = JUnitXml(f"run_suite {info.hw} {','.join(info.suites)} shard {info.shard}")
    for result in results:
        xml.add_testsuite(file_testsuite(result, info))
    xml.update_statistics()
    for suite, result in zip(xml, results, strict=True):
        suite.time = round(result.elapsed, 3)  # the file's wall time, not the sum of its cases
    xml.time = round(sum(r.elapsed for r in results), 3)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            xml.write(handle)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
