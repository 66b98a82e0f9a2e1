"""``--from-junit REPORT [--failed-only]``: what to run again, read from a run's JUnit report.

The report is a ``--junit-xml`` file, the merged one of ``merge-junit``, or a directory of them
(every ``*.xml`` under it). Only ``<testsuite>`` elements written by ``run_suite.py`` count (they
carry a ``path`` property). Without ``--failed-only`` every file the report ran runs again,
whole. With it:

* a ``failed``, ``timeout`` or ``crashed`` file runs again with only its failing cases (their
  node ids from the case's ``classname`` and ``name``); when a failing case stands for the whole
  file (a crash or timeout no case was named for, a script), the whole file runs;
* a ``not_run`` file (fail-fast, a cancelled job) runs whole: it has no result yet, and so does
  a file with a status this version does not know (what cannot be shown to have passed runs);
* ``passed``, ``flaky``, ``disabled`` and ``skipped`` files do not run, nor quarantined ones
  (their failures failed no job).
"""

from __future__ import annotations

from pathlib import Path

from junitparser import Error, Failure

from ci_runner.catalog.node_ids import (
    NodeIdError,
    case_node_id,
    check_case,
    check_relative_path,
    is_whole_file_case,
)
from ci_runner.maintenance.junit_files import JUnitReadError, properties, read_testsuites
from ci_runner.select.subset import RunRequest, RunRequestError

RERUN_STATUSES = frozenset({"failed", "timeout", "crashed"})
PASSING = frozenset({"passed", "flaky"})
NEVER_RUN = frozenset({"disabled", "skipped"})  # by design: not run by any rerun either


def _reports(path: Path) -> list[Path]:
    if path.is_dir():
        found = sorted(path.rglob("*.xml"))
        if not found:
            raise RunRequestError(f"--from-junit {path}: a directory without *.xml reports")
        return found
    return [path]


def _failing_cases(suite: object, path: str) -> list[str] | None:
    """Node ids of the failing cases of one file's testsuite; None when one of them stands for
    the whole file (or cannot be named), so the whole file must run."""
    node_ids = []
    for case in suite:  # type: ignore[attr-defined]
        if not any(isinstance(result, Failure | Error) for result in case.result):
            continue
        name, classname = str(case.name or ""), str(case.classname or "")
        if is_whole_file_case(path, classname, name):
            return None
        node_id = case_node_id(path, classname, name)
        try:
            check_case(node_id.partition("::")[2], "case")
        except NodeIdError:
            return None
        node_ids.append(node_id)
    return node_ids or None


def junit_request(report: Path, failed_only: bool) -> RunRequest:
    """The files (and cases) ``report`` says to run again (see the module docstring)."""
    origin = f"--from-junit {report}"
    files: dict[str, tuple[str, ...]] = {}
    notes: list[str] = []
    seen = 0
    for xml in _reports(report):
        try:
            suites = read_testsuites(xml)
        except JUnitReadError as exc:
            raise RunRequestError(f"--from-junit: {exc}") from None
        for suite in suites:
            props = properties(suite)
            if "path" not in props or "status" not in props:
                continue  # not written by run_suite.py
            seen += 1
            try:
                path = check_relative_path(props["path"], f"{xml}: testsuite path")
            except NodeIdError as exc:
                raise RunRequestError(f"--from-junit {exc}") from None
            status = props["status"]
            if status in NEVER_RUN:
                continue
            if not failed_only:
                files[path] = ()
            elif status in PASSING:
                continue
            elif props.get("quarantined"):
                notes.append(f"{origin}: {path} left out: quarantined ({props['quarantined']})")
            elif status in RERUN_STATUSES:
                cases = _failing_cases(suite, path)
                previous = files.get(path)
                if cases is None or previous == ():
                    files[path] = ()
                else:
                    files[path] = tuple(dict.fromkeys([*(previous or ()), *cases]))
            else:  # not_run, or a status this version does not know: it did not pass
                files[path] = ()
    if not seen:
        raise RunRequestError(
            f"--from-junit {report}: no testsuite written by run_suite.py (none has a 'path' "
            "and a 'status' property); pass a --junit-xml report or merge-junit's --out"
        )
    return RunRequest(
        files, origin + (" --failed-only" if failed_only else ""), False, tuple(notes)
    )
