"""What ``init`` learns from ``.github/workflows``: each suite's runner label, job budget and
partition size, and the suites that workflows run but no file registers yet.

The workflows are read by :mod:`ci_runner.workflows.invocations` (matrix rows, reusable workflows
with their ``with:`` inputs). A value that depends on the run (an expression over ``github``,
``secrets``, another job's outputs) is never guessed: the suite keeps no value, and a note names
the workflow file, line and job.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path

from ci_runner.catalog.limits import MAX_MINUTES
from ci_runner.workflows.expressions import UNKNOWN
from ci_runner.workflows.invocations import WORKFLOW_DIR, Invocation, scan_workflows

GITHUB_DEFAULT_JOB_MINUTES = (
    360.0  # a job without timeout-minutes (GitHub Actions' documented default)
)


@dataclass
class WorkflowFacts:
    """The suites' values from the workflows, and what could not be read."""

    runs: dict[tuple[str, str], list[Invocation]] = field(default_factory=dict)  # (hw, suite)
    notes: list[str] = field(default_factory=list)


def read_workflows(root: Path) -> WorkflowFacts:
    """Every resolved ``run_suite.py --hw H --suite S`` call of the root's workflows, by (H, S)."""
    facts = WorkflowFacts()
    if not (root / WORKFLOW_DIR).is_dir():
        return facts
    try:
        import yaml  # noqa: F401  (PyYAML: the dev extra; only reading workflows needs it)
    except ImportError:
        facts.notes.append(
            f"{WORKFLOW_DIR}/ not read: PyYAML is not installed (pip install pyyaml), so no "
            "suite got a runner or job-timeout-minutes from the workflows"
        )
        return facts
    # init runs no repository script, so partitions computed by one stay unknown
    scan = scan_workflows(root, lambda _yml: UNKNOWN, size_optional=True)
    facts.notes += [f"workflow not read: {error}" for error in scan.errors]
    facts.notes += [f"workflow partly read: {note}" for note in scan.notes]
    facts.notes += [
        f"{item.where}: run_suite.py call not resolved: {_without_via(item.reason)}"
        for item in scan.unresolved
    ]
    runs: dict[tuple[str, str], list[Invocation]] = defaultdict(list)
    for invocation in scan.invocations:
        for suite in filter(None, (s.strip() for s in invocation.suite.split(","))):
            runs[(invocation.hw, suite)].append(replace(invocation, suite=suite))
        facts.notes += [
            f"{invocation.where} (job {invocation.job!r}): {note}; not written"
            for note in invocation.notes
        ]
    facts.runs = dict(runs)
    facts.notes = list(dict.fromkeys(facts.notes))
    return facts


def _without_via(reason: str) -> str:
    """A reason without its "(<caller> job <id> <- ...)" tail: one note per workflow line."""
    head, _, tail = reason.rpartition(" (")
    is_via = tail == "direct)" or (tail.endswith(")") and " job " in tail)
    return head if head and is_via else reason


@dataclass(frozen=True)
class SuiteValues:
    """One suite's values agreed by its workflow calls (None: none given, or they disagree)."""

    runner: str | None
    runner_key: str | None  # the key a computed runs-on looks its label up with
    job_timeout_minutes: float | None
    timeout_is_default: bool  # no job or step sets timeout-minutes: GitHub's default applies
    timeout_from_step: bool  # the run step's own timeout-minutes (below the job's)
    partition_sizes: tuple[int, ...]
    nightly: bool
    where: tuple[str, ...]
    conflicts: tuple[str, ...]

    @property
    def has_settings(self) -> bool:
        """True when the workflows give a runner, a runner key or a job budget."""
        return any(v is not None for v in (self.runner, self.runner_key, self.job_timeout_minutes))


def suite_values(hw: str, suite: str, calls: list[Invocation]) -> SuiteValues:
    """The runner and budget the calls of one suite agree on; a disagreement is a conflict and
    the most frequent value is written (ties: the first in file order)."""
    conflicts: list[str] = []
    runner = _agreed(f"{hw} suite {suite!r}: runs-on", [(c.runner, c) for c in calls], conflicts)
    key = _agreed(
        f"{hw} suite {suite!r}: runs-on key", [(c.runner_key, c) for c in calls], conflicts
    )
    timeouts = [(c.timeout_minutes, c) for c in calls if c.timeout_minutes is not None]
    timeout = _agreed(f"{hw} suite {suite!r}: timeout-minutes", timeouts, conflicts)
    unknown = any("timeout-minutes" in note for c in calls for note in c.notes)
    is_default = timeout is None and not unknown
    if is_default:
        timeout = GITHUB_DEFAULT_JOB_MINUTES
    if timeout is not None and not 0 < timeout <= MAX_MINUTES:
        conflicts.append(
            f"{hw} suite {suite!r}: timeout-minutes {timeout:g} is outside (0, {MAX_MINUTES}]; "
            "not written"
        )
        timeout = None
    sizes = tuple(sorted({c.size for c in calls if c.size is not None}))
    return SuiteValues(
        runner=runner,
        runner_key=key,
        job_timeout_minutes=timeout,
        timeout_is_default=is_default,
        timeout_from_step=any(c.step_timeout and c.timeout_minutes == timeout for c in calls),
        partition_sizes=sizes,
        nightly=any(c.nightly for c in calls),
        where=tuple(dict.fromkeys(f"{c.where} job {c.job!r}" for c in calls)),
        conflicts=tuple(conflicts),
    )


def _agreed(what: str, values: list[tuple[object, Invocation]], conflicts: list[str]):
    known = [(value, call) for value, call in values if value is not None]
    if not known:
        return None
    votes = Counter(value for value, _ in known)
    chosen = max(votes, key=lambda v: (votes[v], -[x for x, _ in known].index(v)))
    if len(votes) > 1:
        seen = "; ".join(
            f"{_shown(value)} ({', '.join(sorted({c.where for v, c in known if v == value}))})"
            for value in votes
        )
        conflicts.append(f"{what} differs between workflow calls: {seen}; wrote {_shown(chosen)}")
    return chosen


def _shown(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else repr(value)
