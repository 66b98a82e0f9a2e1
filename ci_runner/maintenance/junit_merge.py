"""The aggregate check of a sharded run: merge every shard's JUnit and compare it with the plan.

The planning job saves ``run_suite.py --dry-run --format json`` per suite; every shard uploads
its ``--junit-xml`` (one ``<testsuite>`` per file, with ``path``/``suite``/``status``
properties). This module merges those reports with junitparser and checks that each planned
(path, suite) appears exactly once: nothing lost (a shard that crashed or was never scheduled),
nothing doubled (a step that forgot ``--auto-partition-*`` and ran the whole suite), nothing
unplanned. Exit codes: 0 complete and green, 1 incomplete or a file did not pass, 2 bad input.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from junitparser import JUnitXml, TestSuite

from ci_runner.catalog.limits import MAX_SECONDS
from ci_runner.cli_errors import StoreOnce, robust_output, usage_error
from ci_runner.file_safety import (
    append_regular,
    destination_problem,
    read_regular_text,
    same_file_groups,
    why,
    write_atomic,
)
from ci_runner.maintenance.junit_files import (
    JUnitReadError,
    number,
    properties,
    raw_attributes,
    read_testsuites,
)
from ci_runner.safe_text import one_line, xml_safe

PASSING = frozenset({"passed", "flaky"})
NOT_PASSING = frozenset({"failed", "timeout", "crashed", "no_tests", "not_run"})
DISABLED = "disabled"
NO_TESTS = "no_tests"  # ran no test: fails the check unless its shard tolerated it
SKIPPED = "skipped"  # needed more GPUs than its runner had: reported, does not fail the check

Key = tuple[str, str | None]  # (path, suite); suite None = any suite


class MergeInputError(Exception):
    """A plan or report cannot be read; the message names the file."""


@dataclass(frozen=True)
class Entry:
    """One file's ``<testsuite>`` from one report."""

    path: str
    suite: str | None
    status: str
    elapsed: float | None  # None: the report holds no number of seconds in range
    shard: str
    report: str
    element: TestSuite
    reason: str = ""
    tolerated: str = ""  # a no_tests file the shard's policy did not fail (property tolerated)
    quarantined: str = ""  # the reason a quarantined file's failure fails no check


@dataclass
class Plan:
    """Everything the planning job expected to run (and the disabled files it listed)."""

    files: set[Key] = field(default_factory=set)
    disabled: set[Key] = field(default_factory=set)


@dataclass
class MergeResult:
    """What the check found."""

    entries: list[Entry]
    missing: list[Key]
    duplicated: dict[Key, list[Entry]]
    unplanned: list[Entry]
    not_passing: list[Entry]
    status_counts: Counter
    skipped: list[Entry] = field(default_factory=list)
    quarantined: list[Entry] = field(default_factory=list)  # did not pass, fail no check

    @property
    def complete(self) -> bool:
        return not (self.missing or self.duplicated or self.unplanned)

    @property
    def ok(self) -> bool:
        return self.complete and not self.not_passing


def _key_of(raw: object, where: str) -> Key:
    """A planned (path, suite), spelled as the shard reports spell it (:func:`xml_safe`), so a
    name with an escape code or a non-UTF-8 byte still matches its report."""
    if isinstance(raw, str):
        return (xml_safe(raw), None)
    if isinstance(raw, dict) and isinstance(raw.get("path"), str):
        suite = raw.get("suite")
        return (xml_safe(raw["path"]), xml_safe(suite) if isinstance(suite, str) else None)
    raise MergeInputError(
        f"{where}: expected a path or an object with 'path', got {repr(raw)[:80]}"
    )


def load_plan(paths: Iterable[Path]) -> Plan:
    """Read dry-run JSON files (or every ``*.json`` in a directory) into one :class:`Plan`."""
    plan = Plan()
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(path.rglob("*.json")))
        else:
            files.append(path)
    if not files:
        raise MergeInputError("no plan files given (--plan FILE_OR_DIR)")
    for path in files:
        try:
            data = json.loads(read_regular_text(path))
        except FileNotFoundError:
            raise MergeInputError(f"{path}: plan file not found") from None
        except OSError as exc:
            raise MergeInputError(f"{path}: cannot read the plan ({why(exc)})") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise MergeInputError(f"{path}: not valid JSON ({exc})") from None
        except RecursionError:
            raise MergeInputError(f"{path}: not a dry-run plan (nested too deeply)") from None
        if not isinstance(data, dict) or not isinstance(data.get("files"), list):
            raise MergeInputError(
                f"{path}: not a dry-run plan; expected the JSON object of "
                "`run_suite.py --dry-run --format json` with a 'files' list"
            )
        for i, raw in enumerate(data["files"]):
            plan.files.add(_key_of(raw, f"{path}: files[{i}]"))
        for i, raw in enumerate(data.get("disabled") or []):
            plan.disabled.add(_key_of(raw, f"{path}: disabled[{i}]"))
    return plan


UNREADABLE = "unreadable"  # a report of another writer whose counts are not counts


def _count(text: str | None) -> int | None:
    """A count attribute (``tests``, ``errors``, ...): absent is 0; one that is not a whole
    number from 0 is None."""
    if text is None:
        return 0
    value = number(text.strip())
    return int(value) if value is not None and value.is_integer() and value >= 0 else None


def _status_of(attributes: dict[str, str], props: dict[str, str]) -> tuple[str, str]:
    """(status, reason): the ``status`` property of a run_suite report, else the one its counts
    give; counts that are not counts make it ``unreadable`` (never passed)."""
    status = props.get("status")
    if status:
        return status, props.get("reason", "")
    names = ("tests", "errors", "failures", "skipped")
    counts = {name: _count(attributes.get(name)) for name in names}
    bad = [f"{name}={attributes[name][:20]!r}" for name, value in counts.items() if value is None]
    if bad:
        return UNREADABLE, f"{', '.join(bad)} is not a count: its outcome cannot be told"
    if counts["errors"] or counts["failures"]:
        return "failed", ""
    if counts["tests"] and counts["skipped"] == counts["tests"]:
        return DISABLED, ""
    return "passed", ""


def _elapsed(
    attributes: dict[str, str], props: dict[str, str], where: str, notes: list[str]
) -> float | None:
    """The seconds a file took: its ``elapsed`` property, else the ``time`` attribute; a value
    that is no number of seconds from 0 to a week is a note, and shown as unknown."""
    text = props["elapsed"] if "elapsed" in props else attributes.get("time")
    if text is None:
        return None
    seconds = number(text.strip())
    if seconds is None or not 0 <= seconds <= MAX_SECONDS:
        key = "elapsed" if "elapsed" in props else "time"
        notes.append(
            f"{where}: {key} {one_line(text[:40])!r} is not a number of seconds from 0 to "
            f"{MAX_SECONDS}; shown as unknown"
        )
        return None
    return seconds


def load_reports(directory: Path, notes: list[str] | None = None) -> list[Entry]:
    """Every ``<testsuite>`` of every ``*.xml`` under ``directory`` (recursively); a value
    shown as unknown is a line of ``notes``."""
    notes = [] if notes is None else notes
    if not directory.is_dir():
        raise MergeInputError(f"{directory}: JUnit directory not found (--junit-dir)")
    entries: list[Entry] = []
    for report in sorted(directory.rglob("*.xml")):
        try:
            suites = read_testsuites(report)
        except JUnitReadError as exc:
            raise MergeInputError(str(exc)) from None
        for suite in suites:
            props = properties(suite)
            path = props.get("path") or suite.name
            if not path:
                raise MergeInputError(f"{report}: a <testsuite> has neither a name nor a path")
            where = f"{report}: testsuite {one_line(path[:80])!r}"
            attributes = raw_attributes(suite)
            status, reason = _status_of(attributes, props)
            entries.append(
                Entry(
                    path=path,
                    suite=props.get("suite"),
                    status=status,
                    elapsed=_elapsed(attributes, props, where, notes),
                    shard=props.get("shard", "?"),
                    report=str(report.relative_to(directory)),
                    element=suite,
                    reason=reason,
                    tolerated=props.get("tolerated", ""),
                    quarantined=props.get("quarantined", ""),
                )
            )
    return entries


def _match(entry: Entry, planned: set[Key]) -> Key | None:
    if (entry.path, entry.suite) in planned:
        return (entry.path, entry.suite)
    if (entry.path, None) in planned:
        return (entry.path, None)
    if entry.suite is None:  # a report without a suite property matches the path in any suite
        for key in sorted(planned, key=lambda k: k[1] or ""):
            if key[0] == entry.path:
                return key
    return None


def check(plan: Plan, entries: Sequence[Entry]) -> MergeResult:
    """Compare reports with the plan: exactly once per planned file, nothing else."""
    seen: dict[Key, list[Entry]] = defaultdict(list)
    unplanned: list[Entry] = []
    for entry in entries:
        if entry.status == DISABLED:
            continue  # listed by every shard that selected it; never run, never counted
        key = _match(entry, plan.files)
        if key is None:
            unplanned.append(entry)
        else:
            seen[key].append(entry)
    missing = sorted(
        (key for key in plan.files if key not in seen), key=lambda k: (k[0], k[1] or "")
    )
    duplicated = {
        key: found
        for key, found in sorted(seen.items(), key=lambda kv: (kv[0][0], kv[0][1] or ""))
        if len(found) > 1
    }
    failing = [
        e
        for e in entries
        if e.status not in (*PASSING, DISABLED, SKIPPED)
        and not (e.tolerated and e.status == NO_TESTS)
    ]
    not_passing = [e for e in failing if not e.quarantined or e.status == "not_run"]
    quarantined = [e for e in failing if e.quarantined and e.status != "not_run"]
    skipped = [e for e in entries if e.status == SKIPPED]
    counts = Counter(e.status for e in entries if e.status != DISABLED)
    counts[DISABLED] = len({(e.path, e.suite) for e in entries if e.status == DISABLED})
    return MergeResult(
        list(entries), missing, duplicated, unplanned, not_passing, counts, skipped, quarantined
    )


def merged_xml(entries: Sequence[Entry]) -> JUnitXml:
    """All reports in one document; a disabled file listed by several shards appears once."""
    merged = JUnitXml()
    seen_disabled: set[Key] = set()
    for entry in entries:
        if entry.status == DISABLED:
            if (entry.path, entry.suite) in seen_disabled:
                continue
            seen_disabled.add((entry.path, entry.suite))
        merged.add_testsuite(entry.element)
    return merged


def _name(key: Key) -> str:
    return one_line(f"{key[0]} [{key[1]}]" if key[1] else key[0])


def _seconds(elapsed: float | None) -> str:
    return "elapsed unknown" if elapsed is None else f"{elapsed:.1f}s"


def summary_lines(result: MergeResult, markdown: bool = False) -> list[str]:
    """A human summary; ``markdown`` for ``$GITHUB_STEP_SUMMARY``."""
    bullet = "- " if markdown else "  "
    counts = ", ".join(f"{n} {status}" for status, n in sorted(result.status_counts.items()) if n)
    head = "### Aggregate check" if markdown else "aggregate check:"
    lines = [head, f"{len(result.entries)} report entries: {counts or 'none'}"]
    if result.missing:
        lines.append(f"MISSING: {len(result.missing)} planned file(s) have no report (lost):")
        lines += [f"{bullet}{_name(k)}" for k in result.missing]
    if result.duplicated:
        lines.append(f"DUPLICATED: {len(result.duplicated)} file(s) ran more than once:")
        for key, found in result.duplicated.items():
            where = ", ".join(f"shard {one_line(e.shard)} ({one_line(e.report)})" for e in found)
            lines.append(f"{bullet}{_name(key)}: {len(found)}x in {where}")
    if result.unplanned:
        lines.append(f"UNPLANNED: {len(result.unplanned)} report(s) for files not in the plan:")
        lines += [
            f"{bullet}{_name((e.path, e.suite))} in {one_line(e.report)}" for e in result.unplanned
        ]
    if result.not_passing:
        lines.append(f"NOT PASSING: {len(result.not_passing)} file(s):")
        lines += [
            f"{bullet}{_name((e.path, e.suite))}: {one_line(e.status)} (shard {one_line(e.shard)}, "
            f"{_seconds(e.elapsed)}){': ' + one_line(e.reason) if e.status == UNREADABLE else ''}"
            for e in result.not_passing
        ]
    if result.quarantined:
        lines.append(
            f"QUARANTINED: {len(result.quarantined)} file(s) did not pass; their failures fail "
            "no check:"
        )
        lines += [
            f"{bullet}{_name((e.path, e.suite))}: {one_line(e.status)} (quarantined: "
            f"{one_line(e.quarantined)})"
            for e in result.quarantined
        ]
    if result.skipped:
        lines.append(f"SKIPPED: {len(result.skipped)} file(s) needed more GPUs than their runner:")
        lines += [
            f"{bullet}{_name((e.path, e.suite))} (shard {one_line(e.shard)}): {one_line(e.reason)}"
            for e in result.skipped
        ]
    verdict = "OK: every planned file ran exactly once and passed" if result.ok else "FAILED"
    if result.ok and (result.skipped or result.quarantined):
        verdict = "OK: every planned file was reported exactly once; none failed"
    lines.append(f"**{verdict}**" if markdown else verdict)
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ci_runner.maintenance merge-junit",
        description="Merge every shard's JUnit XML and check it against the planned files.",
    )
    parser.add_argument(
        "--plan",
        action="append",
        required=True,
        type=Path,
        metavar="FILE_OR_DIR",
        help="dry-run JSON of a planned suite (repeatable; a directory means every *.json in it)",
    )
    parser.add_argument(
        "--junit-dir",
        action=StoreOnce,
        required=True,
        type=Path,
        help="directory searched for *.xml reports",
    )
    parser.add_argument(
        "--out", action=StoreOnce, type=Path, help="write the merged JUnit XML here"
    )
    args = parser.parse_args(argv)
    robust_output()
    notes: list[str] = []
    try:
        plan = load_plan(args.plan)
        entries = load_reports(args.junit_dir, notes)
        if args.out is not None:
            _check_out(args.out, set(args.junit_dir.rglob("*.xml")))
    except MergeInputError as exc:
        return usage_error(exc, prog="merge-junit")
    for note in notes:
        print(f"merge-junit: note: {note}", file=sys.stderr)
    result = check(plan, entries)
    if args.out is not None:
        buffer = io.BytesIO()
        merged_xml(entries).write(buffer)
        write_atomic(args.out, buffer.getvalue())
    print("\n".join(summary_lines(result)))
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY", "").strip()
    if step_summary:
        try:
            append_regular(step_summary, "\n".join(summary_lines(result, markdown=True)) + "\n")
        except OSError as exc:
            print(
                f"merge_junit: warning: could not append to {step_summary}: {exc}", file=sys.stderr
            )
    return 0 if result.ok else 1


def _check_out(out: Path, reports: set[Path]) -> None:
    """``--out`` must be a regular file (or new), and none of the reports it merges."""
    problem = destination_problem(out)
    if problem:
        raise MergeInputError(f"--out {out}: {problem}")
    for labels in same_file_groups([("--out", out), *((str(path), path) for path in reports)]):
        if "--out" in labels:
            raise MergeInputError(f"--out {out}: is one of the reports it merges; write elsewhere")
