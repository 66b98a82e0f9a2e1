"""A pytest plugin that writes each case to the case record as it starts and ends.

Loaded with ``-p ci_runner_pytest_plugin``, which the runner adds to ``PYTEST_ADDOPTS``. A case's
outcome follows pytest's own JUnit report: a failing setup or teardown is an ``error``, a
failing call ``failed``, a skip ``skipped`` (an xfail too, with detail ``xfail``), else
``passed``; the first failure of a case stands. Under pytest-xdist the controller writes the
record (it sees every worker's reports), the workers do not.

Under ``--record-deps`` it records each case's code under its own context
(:mod:`ci_runner_case_context`), in xdist's workers (its controller runs no case). It also
deselects the cases the runner's selection leaves out (:mod:`ci_runner_case_select`) and, after
each case, ends the process when the CUDA context is lost (:mod:`ci_runner_cuda_check`).
"""

from __future__ import annotations

import os

import ci_runner_case_context as case_context
import ci_runner_case_record as record
import ci_runner_case_select as select
import ci_runner_cuda_check as cuda_check
import pytest


def pytest_configure(config) -> None:
    worker = hasattr(config, "workerinput")
    controller = not worker and getattr(config.option, "dist", "no") != "no"  # runs no case
    if case_context.recording() and not controller:  # --record-deps: by case
        config.pluginmanager.register(_Contexts(str(config.rootpath)), "ci_runner_contexts")
    if worker:  # an xdist worker: the controller reports its cases
        return
    writer = record.writer()
    if writer is None:
        return
    record.set_pytest_active(True)
    config.pluginmanager.register(_Recorder(config, writer), "ci_runner_recorder")


def pytest_unconfigure(config) -> None:
    record.set_pytest_active(False)


def _message(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (path, line, reason)
        return record.first_line(str(longrepr[2]).removeprefix("Skipped: "))
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None and getattr(crash, "message", None):
        return record.first_line(crash.message)
    return record.first_line(str(longrepr or ""))


def case_id(root: str, nodeid: str) -> tuple[str, str]:
    """(root-relative id, root-relative file) of a pytest node id."""
    path, sep, rest = nodeid.partition("::")
    file = record.relative(os.path.join(root, path)) if path else ""
    return (file + sep + rest if file else nodeid), file


class _Contexts:
    """Each case's code under its id; fixtures wider than a function under the file's."""

    def __init__(self, root: str) -> None:
        self.root = root

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        case_context.enter(case_id(self.root, nodeid)[0])

    def pytest_runtest_logfinish(self, nodeid, location) -> None:
        case_context.leave()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        shared = fixturedef.scope != "function"  # its value outlives the case that set it up
        before = case_context.switch(case_context.FILE_LEVEL) if shared else None
        try:
            yield
        finally:
            if before is not None:
                case_context.switch(before)


class _Recorder:
    def __init__(self, config, writer) -> None:
        self.root = str(config.rootpath)
        self.writer = writer
        self.reports: dict[str, list] = {}
        writer.session("pytest")

    def _id(self, nodeid: str) -> tuple[str, str]:
        return case_id(self.root, nodeid)

    def pytest_collectreport(self, report) -> None:
        """A collection error is an ``error`` case; a module skipped while it is collected
        (``pytest.skip(..., allow_module_level=True)``) is one ``skipped`` case, detail
        ``module``: pytest reports it and the runner must not call the file test-less."""
        if not (report.failed or report.skipped):
            return
        case_id, file = self._id(report.nodeid)
        self.writer.write("start", id=case_id, nodeid=report.nodeid, file=file, line=0)
        if report.skipped:
            self.writer.write(
                "end", id=case_id, outcome="skipped", detail="module", message=_message(report),
                text="", duration=0.0,
            )  # fmt: skip
            return
        self.writer.write(
            "end", id=case_id, outcome="error", detail="collection",
            message=f"collection error: {_message(report)}",
            text=record.clip(report.longreprtext), duration=0.0,
        )  # fmt: skip

    def pytest_collection_modifyitems(self, session, config, items) -> None:
        """Leave out the cases the runner's selection does not run (before they are counted)."""
        if not select.active():
            return
        kept, dropped = [], []
        for item in items:
            (kept if select.wanted(self._id(item.nodeid)[0]) else dropped).append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept

    def pytest_collection_finish(self, session) -> None:
        self.writer.write("collected", ids=[self._id(item.nodeid)[0] for item in session.items])

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        case_id, _ = self._id(nodeid)
        path, line = location[0], location[1]
        file = record.relative(os.path.join(self.root, path)) if path else ""
        self.reports[nodeid] = []
        self.writer.write(
            "start", id=case_id, nodeid=nodeid, file=file, line=line + 1 if line is not None else 0
        )

    def pytest_runtest_logreport(self, report) -> None:
        self.reports.setdefault(report.nodeid, []).append(report)

    def pytest_runtest_logfinish(self, nodeid, location) -> None:
        reports = self.reports.pop(nodeid, [])
        outcome, detail, message, text = "passed", "", "", ""
        for report in reports:
            if report.failed:
                if outcome in ("failed", "error"):
                    continue
                outcome = "failed" if report.when == "call" else "error"
                message, text = _message(report), record.clip(report.longreprtext)
            elif report.skipped and outcome == "passed":
                outcome, message = "skipped", _message(report)
                if hasattr(report, "wasxfail"):
                    detail, message = "xfail", f"xfail: {report.wasxfail}".rstrip(": ")
            elif report.when == "call" and hasattr(report, "wasxfail") and outcome == "passed":
                detail = "xpass"
        case_id = self._id(nodeid)[0]
        self.writer.write(
            "end", id=case_id, outcome=outcome, detail=detail, message=message,
            text=text, duration=round(sum(r.duration for r in reports), 6),
        )  # fmt: skip
        cuda_check.end_if_lost(self.writer, case_id)

    def pytest_sessionfinish(self, session, exitstatus) -> None:
        self.writer.write("finish", exitstatus=int(exitstatus))
