"""``flaky-report``: how often each file and each test case flaked, over the reports of many runs.

Input: ``--junit-xml`` reports (a shard's, or merge-junit's ``--out``) and ``--timings-out``
JSON lines, as downloaded from many CI runs. Each file's result is one run of the file:

* a file is **flaky** in a run when its status is ``flaky`` (failed, then passed on a retry),
  **failed** when ``failed``, ``timeout`` or ``crashed``; ``passed`` counts as a clean run, and
  files that did not run (``not_run``, ``disabled``, ``skipped``, carried over by
  ``--resume-from``) are not runs;
* a case (JUnit only) is **flaky** when its ``<testcase>`` holds Surefire's ``<flakyFailure>`` or
  ``<flakyError>`` (it failed, then passed on a rerun), **failed** when it ends in a failure or
  an error, clean when it passed; a skipped case is not a run.

The flake rate is flaky runs / runs. *First* and *last seen* are the times of the first and the
last flaky run: a JUnit report's ``timestamp``, else the report file's modification time. The
same result found twice (a shard's report and the merged one) counts once.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from junitparser import Error, Failure, Skipped
from junitparser.xunit2 import FlakyError, FlakyFailure

from ci_runner.catalog.node_ids import case_node_id, is_whole_file_case
from ci_runner.cli_errors import StoreOnce, robust_output, usage_error
from ci_runner.file_safety import read_regular_text, why
from ci_runner.maintenance.junit_files import JUnitReadError, properties, read_testsuites
from ci_runner.safe_text import one_line

FLAKY_FILE = "flaky"
FAILED_FILE = frozenset({"failed", "timeout", "crashed"})
CLEAN_FILE = "passed"


class FlakyInputError(ValueError):
    """A report cannot be read; the message names the file and line."""


@dataclass
class Tally:
    """Runs of one file or case, and when it flaked."""

    name: str
    runs: int = 0
    flaky: int = 0
    failed: int = 0
    flaky_times: list[str] = field(default_factory=list)

    def add(self, outcome: str, when: str) -> None:
        self.runs += 1
        if outcome == "flaky":
            self.flaky += 1
            self.flaky_times.append(when)
        elif outcome == "failed":
            self.failed += 1

    @property
    def rate(self) -> float:
        return self.flaky / self.runs if self.runs else 0.0

    def row(self) -> dict[str, object]:
        times = sorted(self.flaky_times)
        return {
            "name": self.name,
            "runs": self.runs,
            "flaky": self.flaky,
            "failed": self.failed,
            "flake_rate": round(self.rate, 4),
            "first_seen": times[0] if times else None,
            "last_seen": times[-1] if times else None,
        }


@dataclass
class FlakeData:
    """Every file's and case's tally, and how much input they came from."""

    files: dict[str, Tally] = field(default_factory=dict)
    cases: dict[str, Tally] = field(default_factory=dict)
    reports: int = 0

    def add_file(self, path: str, status: str, when: str) -> None:
        outcome = _file_outcome(status)
        if outcome is not None:
            self.files.setdefault(path, Tally(path)).add(outcome, when)

    def add_case(self, node_id: str, outcome: str, when: str) -> None:
        self.cases.setdefault(node_id, Tally(node_id)).add(outcome, when)


def _file_outcome(status: str) -> str | None:
    if status == FLAKY_FILE:
        return "flaky"
    if status in FAILED_FILE:
        return "failed"
    return "clean" if status == CLEAN_FILE else None


def report_files(paths: Iterable[Path]) -> list[Path]:
    """The report files to read: a directory means every ``*.xml`` under it (JUnit has the
    cases), or every ``*.jsonl`` when it has none."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(path.rglob("*.xml")) or sorted(path.rglob("*.jsonl")))
        elif os.path.lexists(path):
            found.append(path)
        else:
            raise FlakyInputError(f"{path}: report file or directory not found")
    if not found:
        raise FlakyInputError("no *.xml or *.jsonl reports found (pass --timings FILE_OR_DIR)")
    return found


def _modified(path: Path) -> str:
    stamp = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S")


def _case_outcome(case: object) -> str | None:
    results = list(case.result)  # type: ignore[attr-defined]
    if any(isinstance(r, Skipped) for r in results):
        return None
    if any(isinstance(r, Failure | Error) for r in results):
        return "failed"
    flaky = [*case.iterchildren(FlakyFailure), *case.iterchildren(FlakyError)]  # type: ignore[attr-defined]
    return "flaky" if flaky else "clean"


def _read_junit(path: Path, data: FlakeData, seen: set[tuple[str, ...]]) -> None:
    try:
        suites = read_testsuites(path)
    except JUnitReadError as exc:
        raise FlakyInputError(str(exc)) from None
    fallback = _modified(path)
    for suite in suites:
        props = properties(suite)
        if "path" not in props or "status" not in props or props.get("resumed") == "true":
            continue  # not a run_suite.py file result, or not run in this report
        when = str(suite.timestamp or fallback)
        key = ("xml", props["path"], props.get("suite", ""), props.get("shard", ""),
               props["status"], props.get("elapsed", ""), when)  # fmt: skip
        if key in seen:
            continue
        seen.add(key)
        data.add_file(props["path"], props["status"], when)
        for case in suite:
            name, classname = str(case.name or ""), str(case.classname or "")
            outcome = _case_outcome(case)
            if outcome is not None and not is_whole_file_case(props["path"], classname, name):
                data.add_case(case_node_id(props["path"], classname, name), outcome, when)


def _read_jsonl(path: Path, data: FlakeData, seen: set[tuple[str, ...]]) -> None:
    try:
        text = read_regular_text(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise FlakyInputError(f"{path}: cannot read it as UTF-8 text ({why(exc)})") from None
    when = _modified(path)
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            file, status = row["path"], row["status"]
        except (json.JSONDecodeError, KeyError, TypeError, RecursionError) as exc:
            raise FlakyInputError(
                f"{path}:{number}: expected a --timings-out JSON object with path and status "
                f"({type(exc).__name__}: {str(exc)[:200]})"
            ) from None
        if not isinstance(file, str) or not isinstance(status, str):
            raise FlakyInputError(f"{path}:{number}: path and status must be strings")
        if row.get("resumed") is True:
            continue
        key = ("jsonl", file, str(row.get("suite")), str(row.get("shard")), status,
               str(row.get("elapsed")), str(row.get("plan_hash")))  # fmt: skip
        if key not in seen:
            seen.add(key)
            data.add_file(file, status, when)


def load_flakes(paths: Iterable[Path]) -> FlakeData:
    """Tally every file result and case result of the reports under ``paths``."""
    data = FlakeData()
    seen: set[tuple[str, ...]] = set()
    for path in report_files(paths):
        data.reports += 1
        if path.suffix == ".xml":
            _read_junit(path, data, seen)
        else:
            _read_jsonl(path, data, seen)
    return data


def _ranked(tallies: Iterable[Tally], everything: bool) -> list[Tally]:
    shown = [t for t in tallies if everything or t.flaky or t.failed]
    return sorted(shown, key=lambda t: (-t.rate, -t.failed, t.name))


def report_lines(data: FlakeData, everything: bool) -> list[str]:
    """The text report: a table of files, then one of cases."""
    lines = [
        f"flaky-report: {data.reports} report file(s), {len(data.files)} file(s), "
        f"{len(data.cases)} case(s)"
    ]
    for title, tallies in (("files", data.files), ("cases", data.cases)):
        ranked = _ranked(tallies.values(), everything)
        note = "" if everything else " that flaked or failed"
        lines += ["", f"{title}{note}: {len(ranked)} of {len(tallies)}"]
        if not ranked:
            continue
        rows = [("flake rate", "runs", "flaky", "failed", "first seen", "last seen", "name")]
        for tally in ranked:
            row = tally.row()
            rows.append(
                (
                    f"{tally.rate:.1%}",
                    str(tally.runs),
                    str(tally.flaky),
                    str(tally.failed),
                    str(row["first_seen"] or "-"),
                    str(row["last_seen"] or "-"),
                    one_line(tally.name),
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(6)]
        lines += ["  ".join([*(r[i].ljust(widths[i]) for i in range(6)), r[6]]) for r in rows]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ci_runner.maintenance flaky-report",
        description="Each file's and test case's flake rate over the reports of many runs.",
    )
    parser.add_argument(
        "--timings",
        action="append",
        required=True,
        type=Path,
        metavar="FILE_OR_DIR",
        help="JUnit XML (--junit-xml, merge-junit --out) or timings JSONL (--timings-out) of "
        "past runs; repeatable; a directory means every *.xml under it (every *.jsonl if it "
        "has no *.xml)",
    )
    parser.add_argument(
        "--all", action="store_true", help="list every file and case, not only those that "
        "flaked or failed"
    )  # fmt: skip
    parser.add_argument(
        "--format",
        action=StoreOnce,
        choices=("text", "json"),
        default="text",
        help="text tables (default) or one JSON object",
    )
    args = parser.parse_args(argv)
    robust_output()
    try:
        data = load_flakes(args.timings)
    except FlakyInputError as exc:
        return usage_error(exc, prog="flaky-report")
    if args.format == "json":
        document = {
            "reports": data.reports,
            "files": [t.row() for t in _ranked(data.files.values(), args.all)],
            "cases": [t.row() for t in _ranked(data.cases.values(), args.all)],
        }
        print(json.dumps(document, indent=1))
    else:
        print("\n".join(report_lines(data, args.all)))
    return 0
