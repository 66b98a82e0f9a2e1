"""What GitHub Actions tells a step about itself, and the annotations the runner prints there.

:class:`GitHubContext` reads ``GITHUB_SERVER_URL``, ``GITHUB_REPOSITORY``, ``GITHUB_SHA``,
``GITHUB_RUN_ID``, ``GITHUB_RUN_ATTEMPT`` and ``GITHUB_WORKSPACE``: links to a test's source
line (``<server>/<repo>/blob/<sha>/<path>#L<line>``) and to the run attempt that holds the job's
log. Outside Actions (a variable missing) there are no links, only plain text.

:func:`annotations` turns a shard's failing, flaky and no-test cases into workflow commands
(``::error file=<path>,line=<n>,title=<case>::<message>``), which GitHub shows on the pull
request's Checks tab and on the diff. GitHub shows at most 10 errors and 10 warnings of a step,
so at most :data:`MAX_ANNOTATIONS` of each are printed: the first ones in report order, the last
of them saying how many more there are (all are in the step summary and the JUnit report).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from ci_runner.model import (
    FLAKY,
    NO_TESTS,
    CaseResult,
    FileResult,
    ShardOutcome,
    report_cases,
    whole_file_case,
)
from ci_runner.safe_text import one_line, printable

MAX_ANNOTATIONS = 10  # per kind (error, warning): GitHub shows no more of a step
MAX_MESSAGE_CHARS = 1000


@dataclass(frozen=True)
class GitHubContext:
    """Links into the repository and the run; empty fields mean no links."""

    server: str = ""
    repository: str = ""
    sha: str = ""
    run_id: str = ""
    run_attempt: str = ""
    prefix: str = ""  # the catalog root's path inside the checkout ("" or "sub/dir/")

    @classmethod
    def from_environment(
        cls, root: Path, environ: Mapping[str, str] | None = None
    ) -> GitHubContext:
        env = os.environ if environ is None else environ
        workspace = env.get("GITHUB_WORKSPACE", "").strip()
        prefix = ""
        if workspace:
            try:
                inside = Path(root).resolve().relative_to(Path(workspace).resolve())
            except (ValueError, OSError):
                inside = None
            if inside is not None and inside.parts:
                prefix = inside.as_posix() + "/"
        return cls(
            server=env.get("GITHUB_SERVER_URL", "").strip().rstrip("/"),
            repository=env.get("GITHUB_REPOSITORY", "").strip(),
            sha=env.get("GITHUB_SHA", "").strip(),
            run_id=env.get("GITHUB_RUN_ID", "").strip(),
            run_attempt=env.get("GITHUB_RUN_ATTEMPT", "").strip(),
            prefix=prefix,
        )

    def repo_path(self, path: str) -> str:
        """``path`` (relative to the catalog root) relative to the checkout."""
        return self.prefix + path

    def blob_url(self, path: str, line: int = 0) -> str | None:
        """``<server>/<repo>/blob/<sha>/<path>#L<line>``, every part percent-encoded."""
        if not (self.server and self.repository and self.sha and path):
            return None
        anchor = f"#L{line}" if line > 0 else ""
        where = "/".join(_url(part) for part in (self.repository, "blob", self.sha))
        return f"{_url(self.server, ':')}/{where}/{_url(self.repo_path(path))}{anchor}"

    def run_url(self) -> str | None:
        """The run attempt's page, which lists the jobs and opens their logs (a step is told
        no job id to link the log itself)."""
        if not (self.server and self.repository and self.run_id):
            return None
        attempt = f"/attempts/{_url(self.run_attempt)}" if self.run_attempt else ""
        runs = f"{_url(self.repository)}/actions/runs/{_url(self.run_id)}"
        return f"{_url(self.server, ':')}/{runs}{attempt}"


def _url(text: str, also_safe: str = "") -> str:
    """A URL part: any character a URL cannot hold as it is percent-encoded (``/`` kept)."""
    return quote(printable(text), safe="/" + also_safe)


_CONTROL = re.compile("[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f]")


def escape_data(text: str) -> str:
    """A workflow command's message: ``%``, CR and LF escaped as GitHub reads them; any other
    control character (an escape code, NUL) shown as ``\\xNN``, so none reaches the log."""
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", printable(text))
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value: one line, ``%``, ``:`` and ``,`` escaped."""
    return one_line(text).replace("%", "%25").replace(":", "%3A").replace(",", "%2C")


def command(kind: str, message: str, file: str = "", line: int = 0, title: str = "") -> str:
    """``::<kind> file=<file>,line=<line>,title=<title>::<message>`` (empty properties left out)."""
    properties = [
        f"{key}={escape_property(value)}"
        for key, value in (
            ("file", file),
            ("line", str(line) if line > 0 else ""),
            ("title", title),
        )
        if value
    ]
    text = message if len(message) <= MAX_MESSAGE_CHARS else message[:MAX_MESSAGE_CHARS] + "..."
    head = f"::{kind} {','.join(properties)}" if properties else f"::{kind}"
    return f"{head}::{escape_data(text)}"


def case_name(case: CaseResult, result: FileResult) -> str:
    """``path::Class::test`` for a test case, the file's path for the file's own case."""
    return case.case_id or result.path


def failing_cases(result: FileResult) -> list[CaseResult]:
    """The cases that show why a failing file failed (its own case when none does)."""
    return [c for c in report_cases(result) if c.outcome in ("failed", "error")]


def flaky_cases(result: FileResult) -> list[tuple[CaseResult, str]]:
    """(case of the passing attempt, the failure it had before) for each case of a flaky file
    that failed on an earlier attempt; the file's own case when none can be named."""
    final = {c.case_id: c for c in result.cases if c.case_id}
    found: dict[str, tuple[CaseResult, str]] = {}
    for attempt in result.attempts[:-1]:
        for case in attempt.cases:
            if case.outcome in ("failed", "error") and case.case_id in final:
                found.setdefault(case.case_id, (final[case.case_id], case.message))
    if found:
        return list(found.values())
    own = [c for c in result.cases if not c.case_id]
    file_case = own[0] if own else whole_file_case(result.path, "passed", 0.0, "", "", FLAKY)
    return [(file_case, result.reason)]


def annotations(outcome: ShardOutcome, context: GitHubContext) -> list[str]:
    """The error and warning commands of the shard, at most :data:`MAX_ANNOTATIONS` each."""
    errors: list[str] = []
    warnings: list[str] = []
    for result in outcome.failing:
        for case in failing_cases(result):
            errors.append(
                command(
                    "error",
                    f"{result.status}: {case.message or result.reason}",
                    context.repo_path(case.file or result.path),
                    case.line,
                    case_name(case, result),
                )
            )
    for result in outcome.results:
        if result.status == FLAKY:
            for case, before in flaky_cases(result):
                warnings.append(
                    command(
                        "warning",
                        f"flaky: failed, then passed on attempt {len(result.attempts)}: {before}",
                        context.repo_path(case.file or result.path),
                        case.line,
                        case_name(case, result),
                    )
                )
        elif result.status == NO_TESTS and not result.fails_unquarantined:
            warnings.append(
                command(
                    "warning",
                    f"ran no tests: {result.reason} ({result.tolerated})",
                    context.repo_path(result.path),
                    title=f"{result.path}: ran no tests",
                )
            )
    return _bounded("error", errors, "failing test case(s)") + _bounded(
        "warning", warnings, "warning(s)"
    )


def _bounded(kind: str, lines: list[str], what: str) -> list[str]:
    if len(lines) <= MAX_ANNOTATIONS:
        return lines
    more = len(lines) - (MAX_ANNOTATIONS - 1)
    return [
        *lines[: MAX_ANNOTATIONS - 1],
        command(kind, f"{more} more {what}: see the job's step summary and JUnit report"),
    ]
