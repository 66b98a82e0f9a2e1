"""Reading JUnit XML reports written by shards (or anyone): every failure is one message.

A report is read only when it is a regular file (a FIFO would block), parsed with junitparser,
and its attributes are read as written (:func:`raw_attributes`), so a count or a time that is not
a number is the caller's to judge, never a traceback from inside junitparser.
"""

from __future__ import annotations

import html
import math
import re
from pathlib import Path
from xml.etree.ElementTree import ParseError

from junitparser import JUnitXml, JUnitXmlError, TestSuite

from ci_runner.file_safety import read_regular, why


class JUnitReadError(ValueError):
    """A report cannot be read as JUnit XML; the message names the file."""


def read_testsuites(path: Path) -> list[TestSuite]:
    """Every ``<testsuite>`` of the report at ``path`` (a lone ``<testsuite>`` root too)."""
    try:
        data = read_regular(path)
    except OSError as exc:
        raise JUnitReadError(f"{path}: cannot read it ({why(exc)})") from None
    try:
        return list(JUnitXml.fromstring(data))
    except (ParseError, JUnitXmlError, ValueError, RecursionError) as exc:
        raise JUnitReadError(f"{path}: not a readable JUnit XML file ({exc})") from None


def properties(suite: TestSuite) -> dict[str, str]:
    """The ``<property name= value=>`` pairs of a testsuite (a missing value is ``""``)."""
    return {str(p.name): str(p.value or "") for p in suite.properties() if p.name}


def number(text: object) -> float | None:
    """``text`` as a finite float, or ``None`` when it is absent or not a finite number."""
    try:
        value = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


_ATTRIBUTE = re.compile(r'\s([\w.:-]+)="([^"]*)"')


def raw_attributes(suite: TestSuite) -> dict[str, str]:
    """The testsuite's attributes as written. Read them so, not through junitparser's
    attributes: reading a missing count makes it recount the whole testsuite and rewrite them."""
    start = suite.tostring().split(b">", 1)[0].decode("utf-8", "replace")
    return {name: html.unescape(value) for name, value in _ATTRIBUTE.findall(start)}
