"""Judging one attempt from its exit status and its case record, and naming its cases.

The record (:mod:`ci_runner.execution.case_record`) says which cases ran, how each ended and
which was running when the file stopped. :func:`judge_exit` turns that and the exit status into
the attempt's status; :func:`attempt_cases` into the cases every report shows, the running case
of a timeout or a crash carrying the reason (and the stacks) instead of the whole file.
"""

from __future__ import annotations

from collections.abc import Callable

from ci_runner.execution.case_record import CaseRecord, RecordedCase
from ci_runner.execution.retry import (
    PYTEST_NO_TESTS,
    UNITTEST_NO_TESTS,
    broken_file_error,
    pytest_exit_blocks_retry,
)
from ci_runner.execution.signals import signal_name
from ci_runner.model import (
    CRASHED,
    FAILED,
    NO_TESTS,
    PASSED,
    TIMEOUT,
    CaseResult,
    whole_file_case,
)

MAX_NAMED_CASES = 3  # running cases named in a reason; the rest are counted

Verdict = tuple[str, str, bool]  # (status, reason, retriable)


def named(ids: list[str]) -> str:
    """``a`` / ``a, b`` / ``a, b, c and 2 more``."""
    shown = ", ".join(ids[:MAX_NAMED_CASES])
    more = len(ids) - MAX_NAMED_CASES
    return shown + (f" and {more} more" if more > 0 else "")


def while_running(record: CaseRecord) -> str:
    """`` while running <case>`` when the record knows the running case(s), else ``""``."""
    running = [case.id for case in record.running]
    return f" while running {named(running)}" if running else ""


def _runners(record: CaseRecord) -> str:
    return " and ".join(record.runners)


def judge_exit(
    exit_code: int, record: CaseRecord, tail: str, defined_tests: Callable[[], list[str]]
) -> Verdict:
    """(status, reason, retriable) of an attempt that ended by itself.

    ``defined_tests`` is asked only for a file that exits 0 without any case having run: the
    tests it defines make it ``no_tests`` instead of a passing script.
    """
    if exit_code < 0:
        return CRASHED, f"killed by {signal_name(-exit_code)}{while_running(record)}", True
    lost = [case for case in record.cases if case.lost]
    if lost:
        return (
            CRASHED,
            f"{lost[0].lost} (exit {exit_code}) after {named([c.id for c in lost])}",
            True,
        )
    if record.problem:
        return FAILED, f"runner error: case record {record.problem} (exit {exit_code})", False
    if record.running:
        return FAILED, f"exited with code {exit_code}{while_running(record)}", True
    if not record.has_session:
        return _judge_without_cases(exit_code, tail, defined_tests)
    runners = _runners(record)
    pytest_ran = "pytest" in record.runners
    if record.collection_errors:
        return FAILED, f"{record.collection_errors} collection error(s) (exit {exit_code})", False
    if pytest_ran and exit_code == PYTEST_NO_TESTS and _only_module_skips(record):
        return PASSED, "", False  # every module skipped itself: pytest's own report, exit 5
    if _unittest_skipped_all(record, exit_code):
        return PASSED, "", False  # Python 3.12.0-3.12.1's unittest exits 5 when all skipped
    if not record.cases or (pytest_ran and exit_code == PYTEST_NO_TESTS):
        collected = "" if record.collected is None else f"collected {len(record.collected)}, "
        return NO_TESTS, f"{runners} ran no test case ({collected}exit {exit_code})", False
    if exit_code == 0:
        if record.failures:
            return (
                FAILED,
                f"{runners} reported {record.failures} failing case(s) but the file exited 0: "
                "its __main__ block must pass the exit code on (sys.exit(pytest.main(...)), "
                "unittest.main())",
                True,
            )
        return PASSED, "", False
    blocked = pytest_exit_blocks_retry(exit_code) if pytest_ran else None
    if blocked:
        return FAILED, blocked, False
    if record.failures:
        return FAILED, f"{record.failures} failing test case(s) (exit {exit_code})", True
    return FAILED, f"exit code {exit_code} after its cases passed", True


def _only_module_skips(record: CaseRecord) -> bool:
    """The record holds cases, and each is a module pytest skipped while collecting it."""
    return bool(record.cases) and all(
        case.outcome == "skipped" and case.detail == "module" for case in record.cases
    )


def _unittest_skipped_all(record: CaseRecord, exit_code: int) -> bool:
    """Only unittest ran, every case it reported was skipped, and it exited with "no tests
    ran" (5): what Python 3.12.0 and 3.12.1 do for a file whose tests all skip (gh-113661;
    later versions exit 0), not a failure."""
    return (
        exit_code == UNITTEST_NO_TESTS
        and record.runners == ("unittest",)
        and bool(record.cases)
        and not record.failures
        and all(case.outcome == "skipped" for case in record.cases)
    )


def _judge_without_cases(
    exit_code: int, tail: str, defined_tests: Callable[[], list[str]]
) -> Verdict:
    if exit_code == 0:
        tests = defined_tests()
        if tests:
            return (
                NO_TESTS,
                f"defines {len(tests)} test(s) ({named(tests)}) but ran none (exit 0): run it "
                'with launcher = "pytest", or end it with a __main__ block that runs them',
                False,
            )
        return PASSED, "", False
    broken = broken_file_error(tail)
    if broken:
        return FAILED, f"{broken} (exit {exit_code})", False
    return FAILED, f"exit code {exit_code}", True


def recorded_case(case: RecordedCase, path: str) -> CaseResult:
    """A finished case of the record as a report case (JUnit's classname from its id)."""
    file = case.file or case.id.partition("::")[0] or path
    id_path, _, rest = case.id.partition("::")
    parts = rest.split("::") if rest else [case.id]
    # from the id's file, not the defining one: a base class's test belongs to the file it ran in
    module = (id_path if rest else file).removesuffix(".py").replace("/", ".")
    classname = ".".join([module, *parts[:-1]])
    return CaseResult(
        name=parts[-1],
        classname=classname,
        time=case.duration,
        outcome=case.outcome or "error",
        message=case.message,
        text=case.text,
        type=case.detail if case.detail in ("xfail", "xpass", "collection") else "",
        case_id=case.id,
        file=file,
        line=case.line,
    )


def not_run_case(case_id: str, path: str, message: str) -> CaseResult:
    """A case that was collected but never ran (its attempt stopped first): skipped, saying why."""
    return recorded_case(RecordedCase(id=case_id, outcome="skipped", message=message), path)


def attempt_cases(
    path: str,
    status: str,
    reason: str,
    elapsed: float,
    record: CaseRecord,
    detail: str,
    case_reason: str = "",
) -> tuple[CaseResult, ...]:
    """The cases of one attempt: every finished case of the record; each case still running
    when a timeout or crash stopped the file, as an error carrying ``case_reason`` (the reason
    as that case's: ``timed out after 60s limit while running this case``) and ``detail``
    (stacks, output tail); and one case for the whole file when no case shows its failure (or,
    passing, when it has no case: a plain script). A ``no_tests`` attempt keeps only its
    recorded cases; the reports add its own case (:func:`ci_runner.model.report_cases`)."""
    cases = [
        recorded_case(case, path)
        for case in record.cases
        if case.outcome is not None and not case.lost
    ]
    if status == NO_TESTS:
        return tuple(cases)  # the reports add the file's own case: failed, or tolerated
    failing = status in (FAILED, TIMEOUT, CRASHED)
    if failing:
        for case in record.culprits:
            culprit = recorded_case(case, path)
            message = f"{case.lost} after this case ran" if case.lost else case_reason or reason
            cases.append(
                CaseResult(
                    name=culprit.name, classname=culprit.classname,
                    time=culprit.time if case.lost else elapsed, outcome="error",
                    message=message, text=detail,
                    type=TIMEOUT if status == TIMEOUT else CRASHED, case_id=case.id,
                    file=culprit.file, line=culprit.line,
                )
            )  # fmt: skip
    if failing and not any(case.outcome in ("failed", "error") for case in cases):
        outcome = "failed" if status == FAILED else "error"
        cases.append(whole_file_case(path, outcome, elapsed, reason, detail, status))
    if not cases:
        cases.append(whole_file_case(path, "passed", elapsed, "", "", ""))
    return tuple(cases)
