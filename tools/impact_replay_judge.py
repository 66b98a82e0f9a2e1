"""Judging a selection against the whole suite's failures (lab tool, see
``tools/impact_replay.py``): JUnit reading, the shares, the misses and the summary table.

Every function here is pure: the replay stores, per mutant, the failures of one whole-suite run
and, per commit, the case times, so a selection computed by any version of the selection code
can be judged again without running a test (``rejudge``).
"""

from __future__ import annotations

import json
import statistics
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from pathlib import Path

Key = tuple[str, str]  # (classname, name) as pytest's xunit1 JUnit and the runner's write them
FILE_LEVEL = ""  # the classname of a failure that no case of the commit's run names


def cases_of(junit: Path) -> dict[Key, tuple[str, float, str]]:
    """(classname, name) -> (outcome, seconds, file attribute) of a JUnit file ({} if none)."""
    found: dict[Key, tuple[str, float, str]] = {}
    if not junit.exists():
        return found
    try:
        tree = ET.parse(junit)
    except ET.ParseError:
        return found
    for suite in tree.iter("testsuite"):
        suite_name = suite.get("name", "")
        for case in suite.iter("testcase"):
            outcome = "passed"
            for child in case:
                if child.tag in ("failure", "error"):
                    outcome = "failed"
                elif child.tag == "skipped" and outcome == "passed":
                    outcome = "skipped"
            file = case.get("file") or (suite_name if suite_name.endswith(".py") else "")
            key = (case.get("classname", ""), case.get("name", ""))
            found[key] = (outcome, float(case.get("time") or 0), file)
    return found


def file_of(classname: str, tests: Iterable[str]) -> str | None:
    """The test file of a pytest classname (``tests.test_x.TestY`` -> ``tests/test_x.py``); a
    collection error's name (``tests/test_x.py`` or ``tests.test_x``) gives its file too."""
    known = set(tests)
    if classname in known:
        return classname
    parts = classname.removesuffix(".py").replace("/", ".").split(".")
    for end in range(len(parts), 0, -1):
        candidate = "/".join(parts[:end]) + ".py"
        if candidate in known:
            return candidate
    return None


def case_file(key: Key, file: str, tests: Iterable[str]) -> str | None:
    """The test file of a JUnit entry: its file attribute, its classname, or (a collection
    error has no classname) its name."""
    known = set(tests)
    if file in known:
        return file
    return file_of(key[0], known) or (file_of(key[1], known) if not key[0] else None)


def junit_key(case_id: str) -> Key:
    """(classname, name) of a pytest node id as xunit1 JUnit writes it."""
    path, _, rest = case_id.partition("::")
    parts = rest.split("::")
    return ".".join([path.removesuffix(".py").replace("/", "."), *parts[:-1]]), parts[-1]


def collected_ids(output: str, status: int, files: list[str]) -> list[str]:
    """The node ids ``pytest -q --collect-only`` printed for ``files``; a file it could not
    collect (``ERROR path``) stands whole, and so does every file when pytest could not start
    (an exit status other than 0 or 5, nothing printed)."""
    known = set(files)
    selected = []
    for line in output.splitlines():
        line = line.strip()
        if "::" in line and line.partition("::")[0] in known:
            selected.append(line)
        elif line.startswith("ERROR ") and line.split()[1] in known:
            selected.append(line.split()[1])
    if not selected and status not in (0, 5):  # 5: nothing collected (nothing selected)
        return list(files)
    return selected


def failures_of(
    cases: Mapping[Key, tuple[str, float, str]], tests: Iterable[str], passing: set[str]
) -> list[list[str]]:
    """``[file, classname, name]`` of every failed entry in a file that passed at the commit."""
    out = []
    for key, (outcome, _, file) in sorted(cases.items()):
        path = case_file(key, file, tests)
        if outcome == "failed" and path in passing:
            out.append([path, key[0], key[1]])
    return out


def catches(
    failures: list[list[str]], whole: set[str], some: dict[str, set[Key]], case_keys: set[Key]
) -> bool:
    """Does a selection (``whole`` files, ``some`` cases of other files) run a failing case?
    A failure that is no case of the commit's run (a collection error, a file that timed out)
    is caught by any selection that runs some of its file."""
    for path, classname, name in failures:
        key = (classname, name)
        if path in whole or key in some.get(path, set()):
            return True
        if path in some and key not in case_keys:
            return True
    return False


def judge(row: dict, base: dict, ours: Mapping[str, Iterable[str]]) -> dict:
    """The verdicts and shares of ``row`` (one mutant: its failures and testmon's selected node
    ids) for our selection ``ours`` (file -> node ids of its cases to run; empty: every case),
    with ``base`` the commit's case times. A mutant is killed when the whole suite failed a case
    (or a file) that passed at the commit; a miss is a killed mutant whose failures no selected
    case is among."""
    tests = base["tests"]
    case_time = {(c, n): t for c, n, t, _ in base["case_time"]}
    case_files = {(c, n): f for c, n, _, f in base["case_time"]}
    case_keys = set(case_time)
    total = sum(case_time.values()) or 1.0
    failures = row["failures"]
    killed = bool(failures)
    whole = {p for p, cases in ours.items() if not list(cases)}
    some: dict[str, set[Key]] = {}
    for path, cases in ours.items():
        for case in cases:
            some.setdefault(path, set()).add(junit_key(case))
    selected_keys = {k for keys in some.values() for k in keys}
    ours_share = sum(
        t for k, t in case_time.items() if case_files[k] in whole or k in selected_keys
    )
    testmon: dict[str, set[Key]] = {}
    for node in row["testmon_selected"]:
        key = junit_key(node)
        path = case_file(key, "", tests) or node.partition("::")[0]
        testmon.setdefault(path, set()).add(key)
    testmon_keys = {k for keys in testmon.values() for k in keys}
    ours_kill = catches(failures, whole, some, case_keys)
    testmon_kill = catches(failures, set(), testmon, case_keys)
    wall = base.get("file_wall") or {}
    wall_total = sum(wall.values()) or 1.0
    return {
        "killed": killed,
        "ours_kill": ours_kill,
        "ours_miss": killed and not ours_kill,
        "ours_share": round(ours_share / total, 4),
        "ours_wall_share": round(sum(wall.get(p, 0.0) for p in ours) / wall_total, 4),
        "ours_files": len(ours),
        "ours_partial": sum(1 for cases in ours.values() if list(cases)),
        "ours_cases": sum(len(keys) for keys in some.values()),
        "testmon_kill": testmon_kill,
        "testmon_miss": killed and not testmon_kill,
        "testmon_share": round(sum(case_time.get(k, 0.0) for k in testmon_keys) / total, 4),
        "testmon_cases": len(testmon_keys),
    }


TABLE_HEAD = (
    "| code base | commits | mutants | killed by the whole suite | misses: ours / testmon | "
    "median share of case time: ours / testmon | mean: ours / testmon | kept files run in part |"
)


def _killed(row: dict) -> bool:
    """Killed by the whole suite (rows of the earlier format: ``full_kill`` and ``confirmed``)."""
    return row["killed"] if "killed" in row else row["full_kill"] and row["confirmed"]


def table_row(name: str, rows: list[dict]) -> str:
    """One line of the summary table for a code base's judged rows."""
    ours = [r["ours_share"] for r in rows]
    theirs = [r["testmon_share"] for r in rows]
    return (
        f"| {name} | {len({r['commit'] for r in rows})} | {len(rows)} | "
        f"{sum(_killed(r) for r in rows)} | {sum(r['ours_miss'] for r in rows)} / "
        f"{sum(r['testmon_miss'] for r in rows)} | {statistics.median(ours):.1%} / "
        f"{statistics.median(theirs):.1%} | {statistics.fmean(ours):.1%} / "
        f"{statistics.fmean(theirs):.1%} | "
        f"{sum(r.get('ours_partial', 0) for r in rows)} of {sum(r['ours_files'] for r in rows)} |"
    )


def miss_lines(name: str, rows: list[dict]) -> list[str]:
    """One line per miss of either tool: where the mutant is, and which cases failed."""
    out = []
    for r in rows:
        if r["ours_miss"] or r["testmon_miss"]:
            failures = r.get("failures") or [[k, "", ""] for k in r.get("killers", [])]
            failing = sorted({f"{f}::{n}" if c else f for f, c, n in failures})[:4]
            out.append(
                f"miss: {name} {r['commit'][:10]} {r['file']}:{r['line']} {r['operator']}: ours "
                f"{'missed' if r['ours_miss'] else 'ok'}, testmon "
                f"{'missed' if r['testmon_miss'] else 'ok'}; failing: {', '.join(failing)}"
            )
    return out


def read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
