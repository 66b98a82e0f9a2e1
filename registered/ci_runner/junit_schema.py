"""A checker for the common JUnit XML schema (Jenkins ``junit-10.xsd``), without lxml.

It checks what that XSD says: which elements may appear where and in which order, which
attributes each element may carry, the required ones, and numeric attribute types; plus the
elements Maven Surefire's schema (``surefire-test-report-3.0.xsd``) adds to a ``<testcase>``
for reruns: ``<flakyFailure>``, ``<flakyError>``, ``<rerunFailure>`` and ``<rerunError>``,
each with ``message``/``type`` and a ``<stackTrace>``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

# element -> (allowed attributes, required attributes, ordered child groups)
_SPEC: dict[str, tuple[set[str], set[str], list[set[str]]]] = {
    "testsuites": (
        {"name", "time", "tests", "failures", "disabled", "errors", "skipped"},
        set(),
        [{"testsuite"}],
    ),
    "testsuite": (
        {
            "name",
            "tests",
            "failures",
            "errors",
            "time",
            "disabled",
            "skipped",
            "timestamp",
            "hostname",
            "id",
            "package",
            "file",
            "log",
            "url",
            "version",
        },
        {"name", "tests"},
        [{"properties"}, {"testcase"}, {"system-out"}, {"system-err"}],
    ),
    "properties": (set(), set(), [{"property"}]),
    "property": ({"name", "value"}, {"name", "value"}, []),
    "testcase": (
        {"name", "assertions", "time", "classname", "status", "class", "file", "line"},
        {"name"},
        [
            {
                "skipped",
                "error",
                "failure",
                "system-out",
                "system-err",
                "flakyFailure",
                "flakyError",
                "rerunFailure",
                "rerunError",
            },
        ],
    ),
    **{
        tag: ({"message", "type"}, set(), [{"stackTrace"}, {"system-out"}, {"system-err"}])
        for tag in ("flakyFailure", "flakyError", "rerunFailure", "rerunError")
    },
    "stackTrace": (set(), set(), []),
    "skipped": ({"message"}, set(), []),
    "error": ({"message", "type"}, set(), []),
    "failure": ({"message", "type"}, set(), []),
    "system-out": (set(), set(), []),
    "system-err": (set(), set(), []),
}
_NUMERIC = {"tests", "failures", "errors", "skipped", "disabled", "time", "assertions", "line"}


def schema_problems(path: Path | str) -> list[str]:
    """Every violation found in the file (an empty list means valid)."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        return [f"not well-formed XML: {exc}"]
    if root.tag not in ("testsuites", "testsuite"):
        return [f"root element is <{root.tag}>, expected <testsuites> or <testsuite>"]
    problems: list[str] = []
    _check(root, problems, root.tag)
    return problems


def _check(elem: ET.Element, problems: list[str], where: str) -> None:
    allowed, required, groups = _SPEC[elem.tag]
    for attr, value in elem.attrib.items():
        if attr not in allowed:
            problems.append(f"{where}: attribute {attr!r} not allowed")
        elif attr in _NUMERIC:
            try:
                float(value)
            except ValueError:
                problems.append(f"{where}: attribute {attr}={value!r} is not a number")
    problems.extend(
        f"{where}: missing attribute {a!r}" for a in sorted(required - set(elem.attrib))
    )
    position = 0
    for child in elem:
        while position < len(groups) and child.tag not in groups[position]:
            position += 1
        if position == len(groups):
            problems.append(f"{where}: <{child.tag}> not allowed here or out of order")
            continue
        _check(child, problems, f"{where}/{child.tag}")
    if elem.tag == "testcase":
        results = [c.tag for c in elem if c.tag in ("skipped", "error", "failure")]
        if "skipped" in results and len(results) > 1:
            problems.append(f"{where}: <skipped> cannot be combined with error/failure")
