"""Per-test-case results of a file, read from the JUnit XML its pytest run writes.

The runner never imports a test file, so it asks pytest inside the child for a private JUnit
XML through ``PYTEST_ADDOPTS``. A file that leaves no XML behind is not a pytest file (or died
before pytest finished) and counts as one case.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping
from pathlib import Path
from xml.etree.ElementTree import ParseError

from junitparser import Error, Failure, JUnitXml, JUnitXmlError, Skipped, TestCase

from ci_runner.model import CaseResult

ADDOPTS_VARIABLE = "PYTEST_ADDOPTS"
MAX_CASE_TEXT = 16 * 1024  # failure text kept per pytest case


def pytest_addopts(existing: str | None, junit_path: Path) -> str:
    """``PYTEST_ADDOPTS`` for the child: the caller's value plus our private JUnit XML."""
    ours = f"--junitxml={shlex.quote(str(junit_path))} -p no:cacheprovider"
    return f"{existing} {ours}" if existing and existing.strip() else ours


def child_addopts(environ: Mapping[str, str], junit_path: Path) -> str:
    return pytest_addopts(environ.get(ADDOPTS_VARIABLE), junit_path)


def _clip(text: str | None) -> str:
    text = text or ""
    if len(text) > MAX_CASE_TEXT:
        return "[... truncated ...]\n" + text[-MAX_CASE_TEXT:]
    return text


class ChildReportError(ValueError):
    """The child's JUnit XML parses but holds values no pytest writes (``time="n/a"``)."""


def _seconds(case: TestCase, where: str) -> float:
    """A case's ``time`` attribute: absent is 0, anything but a finite number >= 0 an error."""
    try:
        value = float(case.time or 0.0)
    except (TypeError, ValueError) as exc:
        raise ChildReportError(
            f"{where} has a time that is not a number of seconds ({exc})"
        ) from None
    if not math.isfinite(value) or value < 0:
        raise ChildReportError(f"{where} has time={value!r}, expected a number of seconds >= 0")
    return value


class PytestReport:
    """The cases of one pytest run, or ``None`` from :meth:`load` when there is no report."""

    def __init__(self, cases: tuple[CaseResult, ...], collection_errors: int) -> None:
        self.cases = cases
        self.collection_errors = collection_errors

    @property
    def failures(self) -> int:
        return sum(case.outcome in ("failed", "error") for case in self.cases)

    @classmethod
    def load(cls, path: Path) -> PytestReport | None:
        """Parse the XML at ``path``; ``None`` if absent or unreadable (a killed child).

        Raises :class:`ChildReportError` when it parses but holds a value no pytest writes.
        """
        if not path.is_file() or path.stat().st_size == 0:
            return None
        try:
            xml = JUnitXml.fromfile(str(path))
        except (ParseError, JUnitXmlError, OSError, ValueError):
            return None
        try:
            return cls._read(xml)
        except ChildReportError:
            raise
        except (ValueError, TypeError, AttributeError) as exc:
            raise ChildReportError(f"its pytest JUnit XML is malformed ({exc})") from None

    @classmethod
    def _read(cls, xml: JUnitXml) -> PytestReport:
        cases: list[CaseResult] = []
        collection_errors = 0
        for suite in xml:
            for case in suite:
                outcome, message, text = "passed", "", ""
                for result in case.result:
                    message = result.message or ""
                    text = _clip(result.text)
                    if isinstance(result, Error):
                        outcome = "error"
                        if "collection failure" in message:
                            collection_errors += 1
                    elif isinstance(result, Failure):
                        outcome = "failed"
                    elif isinstance(result, Skipped):
                        outcome = "skipped"
                    break
                name = case.name or ""
                cases.append(
                    CaseResult(
                        name=name,
                        classname=case.classname or "",
                        time=_seconds(case, f"test case {name[:80]!r}"),
                        outcome=outcome,
                        message=message,
                        text=text,
                    )
                )
        return cls(tuple(cases), collection_errors)
