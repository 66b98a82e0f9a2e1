"""Reading the case record of one attempt (its format: ``ci_runner_case_record``, in
:mod:`ci_runner.execution.child`).

:func:`read_record` gives the cases of the outermost processes that reported cases (the lowest
``depth`` with a session line), in the order they started; a case without an ``end`` line was
running when its process stopped. :func:`running_case` reads only the record's end, for the
heartbeat of a file still running. A line that is not a record (a test wrote into the file) is
a :attr:`CaseRecord.problem`, which fails the file as a runner error; a last line without its
newline (a write cut short by a full disk) is ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ci_runner.execution.child.ci_runner_case_record import OUTCOMES
from ci_runner.file_safety import open_regular

MAX_RECORD_BYTES = 256 * 1024 * 1024  # more than any real record; a larger one is a problem
TAIL_BYTES = 64 * 1024  # what the heartbeat reads


@dataclass
class RecordedCase:
    """One case of the record: started, and ended unless ``outcome`` is None."""

    id: str
    file: str = ""
    line: int = 0
    nodeid: str = ""
    pid: int = 0
    outcome: str | None = None  # None: running when its process stopped
    detail: str = ""
    message: str = ""
    text: str = ""
    duration: float = 0.0
    lost: str = ""  # why its process ended it after it ran (the CUDA context was lost)


@dataclass
class CaseRecord:
    """What the outermost reporting processes of one attempt wrote."""

    runners: tuple[str, ...] = ()  # "pytest" / "unittest": whose sessions are counted
    cases: list[RecordedCase] = field(default_factory=list)
    collected: tuple[str, ...] | None = None  # pytest's collected ids, when it got that far
    exitstatus: int | None = None  # pytest's, when its session finished
    problem: str = ""  # the first line that is not a record, as "line N: why"

    @property
    def has_session(self) -> bool:
        return bool(self.runners)

    @property
    def running(self) -> list[RecordedCase]:
        return [case for case in self.cases if case.outcome is None]

    @property
    def culprits(self) -> list[RecordedCase]:
        """The cases its process died in: running when it stopped, or ended by the process
        after they ran (an ``abort`` line: the CUDA context was lost)."""
        return [case for case in self.cases if case.outcome is None or case.lost]

    @property
    def failures(self) -> int:
        return sum(case.outcome in ("failed", "error") for case in self.cases)

    @property
    def collection_errors(self) -> int:
        return sum(case.detail == "collection" for case in self.cases)


class _BadLine(ValueError):
    pass


def _text(event: dict, key: str) -> str:
    value = event.get(key, "")
    if not isinstance(value, str):
        raise _BadLine(f"{key} is {type(value).__name__}, expected a string")
    return value


def _int(event: dict, key: str) -> int:
    value = event.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _BadLine(f"{key} is {type(value).__name__}, expected an integer")
    return value


def _parse(line: bytes) -> dict:
    try:
        event = json.loads(line)
    except ValueError as exc:
        raise _BadLine(f"not JSON ({exc})") from None
    if not isinstance(event, dict) or not isinstance(event.get("event"), str):
        raise _BadLine("not an object with an 'event'")
    _int(event, "pid")
    _int(event, "depth")
    kind = event["event"]
    if kind in ("start", "end"):
        if not _text(event, "id"):
            raise _BadLine(f"a {kind} line without an id")
        if kind == "start":
            _text(event, "file")
            _int(event, "line")
        elif event.get("outcome") not in OUTCOMES:
            raise _BadLine(f"outcome {event.get('outcome')!r} is not one of {', '.join(OUTCOMES)}")
        else:
            for key in ("message", "text", "detail"):
                _text(event, key)
            if not isinstance(event.get("duration", 0.0), int | float):
                raise _BadLine("duration is not a number")
    elif kind == "abort" and not (_text(event, "id") and _text(event, "reason")):
        raise _BadLine("an abort line without an id and a reason")
    return event


def _lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    return lines[:-1]  # the last piece is "" or a line cut short


def _events(lines: list[bytes], first_number: int) -> tuple[list[dict], str]:
    events: list[dict] = []
    problem = ""
    for number, line in enumerate(lines, start=first_number):
        if not line.strip():
            continue
        try:
            events.append(_parse(line))
        except _BadLine as exc:
            problem = problem or f"line {number}: {exc}"
    return events, problem


def _outermost(events: list[dict]) -> int | None:
    sessions = [e["depth"] for e in events if e["event"] == "session"]
    if sessions:
        return min(sessions)
    starts = [e["depth"] for e in events if e["event"] == "start"]
    return min(starts) if starts else None


def _build(events: list[dict]) -> CaseRecord:
    depth = _outermost(events)
    record = CaseRecord()
    runners: list[str] = []
    open_cases: dict[tuple[int, str], list[RecordedCase]] = {}
    for event in events:
        if event["depth"] != depth:
            continue
        kind, pid = event["event"], event["pid"]
        if kind == "session":
            runner = str(event.get("runner", ""))
            if runner not in runners:
                runners.append(runner)
        elif kind == "collected" and isinstance(event.get("ids"), list):
            record.collected = tuple(str(i) for i in event["ids"])
        elif kind == "finish" and isinstance(event.get("exitstatus"), int):
            record.exitstatus = event["exitstatus"]
        elif kind == "start":
            case = RecordedCase(
                id=event["id"], file=event.get("file", ""), line=event.get("line", 0),
                nodeid=str(event.get("nodeid", "")), pid=pid,
            )  # fmt: skip
            record.cases.append(case)
            open_cases.setdefault((pid, case.id), []).append(case)
        elif kind == "end":
            started = open_cases.get((pid, event["id"]))
            if started:
                case = started.pop()
            else:  # an end without its start: keep the result
                case = RecordedCase(id=event["id"], pid=pid)
                record.cases.append(case)
            case.outcome = event["outcome"]
            case.detail = event.get("detail", "")
            case.message = event.get("message", "")
            case.text = event.get("text", "")
            case.duration = max(0.0, float(event.get("duration", 0.0)))
        elif kind == "abort":
            ended = [c for c in record.cases if c.id == event["id"] and c.pid == pid]
            if ended:
                ended[-1].lost = event["reason"]
    record.runners = tuple(runners)
    return record


def read_record(path: Path | str) -> CaseRecord:
    """The record at ``path``; an empty one when it is absent (the file ran no Python, or
    cleared its environment) or not a regular file."""
    try:
        with open_regular(path, follow_links=False) as handle:
            data = handle.read(MAX_RECORD_BYTES + 1)
    except OSError:
        return CaseRecord()
    if len(data) > MAX_RECORD_BYTES:
        return CaseRecord(problem=f"larger than {MAX_RECORD_BYTES // (1024 * 1024)} MiB")
    events, problem = _events(_lines(data), 1)
    record = _build(events)
    record.problem = problem
    return record


def running_case(path: Path | str) -> str | None:
    """The id of the case running now, from the end of the record (None: none known)."""
    try:
        with open_regular(path, follow_links=False) as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - TAIL_BYTES))
            data = handle.read(TAIL_BYTES)
    except OSError:
        return None
    lines = _lines(data)
    if size > TAIL_BYTES and lines:
        lines = lines[1:]  # the first piece may start mid-line
    events, _ = _events(lines, 1)
    running = _build(events).running
    return running[-1].id if running else None
