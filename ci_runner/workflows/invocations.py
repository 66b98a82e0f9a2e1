"""Every ``run_suite.py`` invocation in ``.github/workflows/*.yml``, resolved to (hw, suite, nightly,
shard count), with its job's runner label (``runs-on``) and budget (``timeout-minutes``).

``init`` reads them to fill the drafted suites; ``tools/compare_sglang`` to enumerate upstream's
cases.

A reusable workflow (``on: workflow_call``) is evaluated once per calling job, with the inputs
its ``with:`` block passes (evaluated in the caller's own context, matrix rows included) over the
inputs' defaults; a job's ``strategy.matrix`` is expanded row by row (``include``/``exclude``
as GitHub does). ``needs.<job>.outputs.partitions`` is the JSON that upstream's
``compute_partitions.py`` prints for the workflow file that job passes as ``pr_test_yml``
(a ``partitions_for`` callback; ``tools/compare_sglang`` runs that script, ``init`` does not).
Anything else that depends on a run (``github``,
``secrets``, other job outputs) is unknown; an invocation whose hw, suite or shard count
depends on such a value is listed as unresolved, with the expression.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ci_runner.workflows import shell_line
from ci_runner.workflows.expressions import (
    EXPRESSION,
    UNKNOWN,
    LazyValues,
    Partial,
    evaluate,
    substitute,
    to_text,
)

WORKFLOW_DIR = ".github/workflows"
_LOCAL_USES = "./.github/workflows/"
_KEY_FLAGS = ("--hw", "--suite", "--nightly", "--auto-partition")

PartitionsFor = Callable[[str], Any]
"""``pr_test_yml`` (a path relative to the root) -> compute_partitions JSON text, or UNKNOWN."""


@dataclass(frozen=True)
class Invocation:
    """One resolved ``run_suite.py`` call of a workflow."""

    workflow: str
    line: int
    hw: str
    suite: str
    nightly: bool
    size: int | None
    via: str
    job: str = ""
    runner: str | None = None  # the job's runs-on label; None: not a literal single label
    # minutes the run step has: its timeout-minutes capped by the job's; None: neither is set
    timeout_minutes: float | None = None
    step_timeout: bool = False  # timeout_minutes is the step's own
    notes: tuple[str, ...] = ()  # why runner / timeout_minutes could not be read

    @property
    def where(self) -> str:
        return f"{self.workflow}:{self.line}"


@dataclass(frozen=True)
class Unresolved:
    """A ``run_suite.py`` call whose hw, suite or shard count the workflows do not determine."""

    workflow: str
    line: int
    reason: str

    @property
    def where(self) -> str:
        return f"{self.workflow}:{self.line}"


@dataclass
class WorkflowScan:
    invocations: list[Invocation] = field(default_factory=list)
    unresolved: list[Unresolved] = field(default_factory=list)
    other_scripts: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class _Workflow:
    rel: str
    data: dict
    lines: list[str]

    @functools.cached_property
    def stripped(self) -> list[str]:
        return [text.strip() for text in self.lines]

    @functools.cached_property
    def computes_partitions(self) -> bool:
        return any("compute_partitions.py" in line for line in self.lines)

    @property
    def triggers(self) -> dict:
        on = self.data.get("on", self.data.get(True))
        if isinstance(on, str):
            return {on: None}
        if isinstance(on, list):
            return dict.fromkeys(on)
        return on if isinstance(on, dict) else {}

    def input_defaults(self, trigger: str) -> dict[str, Any]:
        spec = self.triggers.get(trigger) or {}
        inputs = spec.get("inputs") if isinstance(spec, dict) else None
        return {
            name: (value or {}).get("default") if isinstance(value, dict) else None
            for name, value in (inputs or {}).items()
        }

    @property
    def jobs(self) -> dict[str, dict]:
        jobs = self.data.get("jobs") or {}
        return {k: v for k, v in jobs.items() if isinstance(v, dict)}


@dataclass(frozen=True)
class _Context:
    inputs: dict[str, Any]
    via: str


def load_workflows(root: Path) -> tuple[dict[str, _Workflow], list[str]]:
    """The workflow files under ``root/.github/workflows`` by file name, and load errors."""
    import yaml  # PyYAML: only the commands that read workflows need it

    workflows, errors = {}, []
    directory = root / WORKFLOW_DIR
    paths = (
        sorted([*directory.glob("*.yml"), *directory.glob("*.yaml")]) if directory.is_dir() else []
    )
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError as exc:
            errors.append(f"{WORKFLOW_DIR}/{path.name}: not valid YAML ({exc})")
            continue
        if isinstance(data, dict):
            workflows[path.name] = _Workflow(f"{WORKFLOW_DIR}/{path.name}", data, text.splitlines())
    return workflows, errors


class _Resolver:
    def __init__(
        self, workflows: dict[str, _Workflow], partitions_for: PartitionsFor, size_optional: bool
    ):
        self.size_optional = size_optional
        self.workflows = workflows
        self.partitions_for = partitions_for
        self.callers: dict[str, list[tuple[_Workflow, str, dict]]] = {}
        for workflow in workflows.values():
            for job_id, job in workflow.jobs.items():
                uses = job.get("uses")
                if isinstance(uses, str) and uses.startswith(_LOCAL_USES):
                    target = uses[len(_LOCAL_USES) :].split("@")[0]
                    self.callers.setdefault(target, []).append((workflow, job_id, job))
        self._contexts: dict[str, list[_Context]] = {}

    # ------------------------------------------------------------------ contexts

    def needs(self, workflow: _Workflow) -> Partial:
        """``needs``: for a job that computes partitions, its ``outputs.partitions``."""
        context = Partial()
        for job_id, job in workflow.jobs.items():
            uses = job.get("uses")
            called = (
                self.workflows.get(uses[len(_LOCAL_USES) :])
                if isinstance(uses, str) and uses.startswith(_LOCAL_USES)
                else None
            )
            if called is None or not called.computes_partitions:
                continue
            yml = (
                (job.get("with") or {}).get("pr_test_yml")
                or called.input_defaults("workflow_call").get("pr_test_yml")
                or workflow.rel
            )
            outputs = LazyValues({"partitions": lambda yml=str(yml): self.partitions_for(yml)})
            context[job_id] = Partial(outputs=outputs, result="success")
        return context

    def contexts(self, workflow: _Workflow, stack: tuple[str, ...] = ()) -> list[_Context]:
        """The input sets ``workflow`` runs with: direct triggers' defaults, then each caller's."""
        name = Path(workflow.rel).name
        if name in self._contexts:
            return self._contexts[name]
        found = []
        if any(trigger != "workflow_call" for trigger in workflow.triggers):
            found.append(_Context(workflow.input_defaults("workflow_dispatch"), "direct"))
        defaults = workflow.input_defaults("workflow_call")
        for caller, job_id, job in self.callers.get(name, []):
            if Path(caller.rel).name in stack:
                continue
            for outer in self.contexts(caller, (*stack, name)):
                base = {"inputs": outer.inputs, "needs": self.needs(caller)}
                for row in self.matrix_rows(job, base):
                    scope = {**base, "matrix": row}
                    given = {k: _value(v, scope) for k, v in (job.get("with") or {}).items()}
                    via = f"{caller.rel} job {job_id}" + (
                        "" if outer.via == "direct" else f" <- {outer.via}"
                    )
                    found.append(_Context({**defaults, **given}, via))
        self._contexts[name] = found
        return found

    @staticmethod
    def matrix_rows(job: dict, scope: dict) -> list[dict]:
        matrix = (job.get("strategy") or {}).get("matrix")
        if matrix is None:
            return [{}]
        matrix = _value(matrix, scope)
        if not isinstance(matrix, dict):
            return [Partial()]
        axes = {}
        for key, values in matrix.items():
            if key in ("include", "exclude"):
                continue
            values = _value(values, scope)
            axes[key] = values if isinstance(values, list) else [UNKNOWN]
        rows = [dict(zip(axes, combo, strict=True)) for combo in itertools.product(*axes.values())]
        base_rows = [dict(row) for row in rows] if axes else []
        rows = rows if axes else []
        for entry in _entries(matrix.get("include"), scope):
            merged = False
            for row, base in zip(rows[: len(base_rows)], base_rows, strict=False):
                if all(base.get(k, v) == v for k, v in entry.items() if k in axes):
                    row.update(entry)
                    merged = True
            if not merged:
                rows.append(dict(entry))
        excluded = _entries(matrix.get("exclude"), scope)
        rows = [
            r for r in rows if not any(all(r.get(k) == v for k, v in e.items()) for e in excluded)
        ]
        return rows or [{}]

    # ------------------------------------------------------------------ invocations

    def scan(self, scan: WorkflowScan) -> None:
        for workflow in self.workflows.values():
            for job_id, job in workflow.jobs.items():
                for step in job.get("steps") or []:
                    if isinstance(step, dict) and isinstance(step.get("run"), str):
                        self._scan_step(scan, workflow, (job_id, job), step)

    def _scan_step(
        self, scan: WorkflowScan, workflow: _Workflow, named_job: tuple[str, dict], step: dict
    ) -> None:
        job_id, job = named_job
        script = step["run"]
        lines = shell_line.logical_lines(script)
        targets = [
            (i, line)
            for i, line in enumerate(lines)
            if "run_suite.py" in line.text and not line.text.lstrip().startswith("#")
        ]
        if not targets:
            return
        numbers = {i: _file_line(workflow, script, line) for i, line in targets}
        contexts = self.contexts(workflow)
        if not contexts:
            for i, _ in targets:
                scan.unresolved.append(
                    Unresolved(workflow.rel, numbers[i], "reusable workflow that no workflow calls")
                )
            return
        for context in contexts:
            base = {"inputs": context.inputs, "needs": self.needs(workflow)}
            for row in self.matrix_rows(job, base):
                scope = {**base, "matrix": row}
                env = Partial()
                for source in (workflow.data, job, step):
                    for key, value in (source.get("env") or {}).items():
                        env[key] = to_text(_value(value, {**scope, "env": env}))
                scope["env"] = env
                budget = _job_budget(job_id, job, step, scope)
                for i, _ in targets:
                    self._scan_line(
                        scan, workflow, numbers[i], lines, i, scope, context.via, budget
                    )

    def _scan_line(self, scan, workflow, number, lines, index, scope, via, budget) -> None:
        sources: list[str] = []

        def unknown(source: str) -> str:
            sources.append(source)
            return shell_line.marker(len(sources) - 1)

        assigned = {
            k: substitute(v, scope, unknown)
            for k, v in shell_line.shell_assignments(lines, index).items()
        }
        env = {k: v for k, v in scope["env"].items() if v is not UNKNOWN}
        text = substitute(lines[index].text, scope, unknown)
        text = shell_line.expand_variables(text, {**env, **assigned}, unknown)
        for call in shell_line.find_calls(text):
            if call.script not in shell_line.UPSTREAM_SCRIPT_PATHS:
                scan.other_scripts.append(f"{workflow.rel}:{number}: {call.script}")
                continue
            flags = shell_line.read_flags(call.args)
            if flags.hw is None:  # upstream's test/run_suite.py requires --hw (test/srt's has none)
                scan.other_scripts.append(f"{workflow.rel}:{number}: {call.script} without --hw")
                continue
            found = _invocation(workflow.rel, number, flags, sources, via, self.size_optional)
            if isinstance(found, Invocation):
                found = replace(found, **{**budget, "notes": found.notes + budget["notes"]})
            target = scan.invocations if isinstance(found, Invocation) else scan.unresolved
            target.append(found)


def _job_budget(job_id: str, job: dict, step: dict, scope: dict) -> dict[str, Any]:
    """The job's runner label, and the minutes the step that runs the suite has: its own
    timeout-minutes, capped by the job's; with why any of them is unknown."""
    notes: list[str] = []
    runner = _value(job.get("runs-on"), scope)
    if runner is UNKNOWN:
        runner = None
        notes.append(f"runs-on {job.get('runs-on')!r} depends on the run")
    elif isinstance(runner, list | dict):
        notes.append(f"runs-on {runner!r} is not a single label")
        runner = None
    elif runner is not None:
        runner = to_text(runner)
    job_minutes = _minutes(job, scope, "the job's", notes)
    step_minutes = _minutes(step, scope, "the step's", notes)
    known = [m for m in (job_minutes, step_minutes) if m is not None]
    return {
        "job": job_id,
        "runner": runner,
        "timeout_minutes": min(known) if known else None,
        "step_timeout": step_minutes is not None and step_minutes == min(known),
        "notes": tuple(notes),
    }


def _minutes(block: dict, scope: dict, whose: str, notes: list[str]) -> float | None:
    raw = block.get("timeout-minutes")
    value = _value(raw, scope)
    if value is UNKNOWN or isinstance(value, bool):
        notes.append(f"{whose} timeout-minutes {raw!r} depends on the run")
        return None
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        notes.append(f"{whose} timeout-minutes {value!r} is not a number")
        return None


def _entries(value: Any, scope: dict) -> list[dict]:
    value = _value(value, scope) if value is not None else []
    if not isinstance(value, list):
        return []
    return [{k: _value(v, scope) for k, v in e.items()} for e in value if isinstance(e, dict)]


def _value(value: Any, scope: dict) -> Any:
    """A YAML value with its expressions evaluated (a lone ``${{ x }}`` keeps x's type)."""
    if not isinstance(value, str):
        return value
    match = EXPRESSION.fullmatch(value.strip())
    if match:
        try:
            return evaluate(match.group(1), scope)
        except ValueError:
            return UNKNOWN
    unknown_seen = []
    text = substitute(value, scope, lambda source: unknown_seen.append(source) or "")
    return UNKNOWN if unknown_seen else text


def _file_line(workflow: _Workflow, script: str, line: shell_line.LogicalLine) -> int:
    """1-based line in the workflow file where a logical line of a step's script starts.

    The candidate whose preceding lines match most of the script's preceding lines wins, so a
    command repeated in several steps gets each step's own line.
    """
    physical = [text.strip() for text in script.splitlines()]
    lines = workflow.stripped
    target = physical[line.first]
    run_target = f"run: {target}"
    best, best_score = 0, -1
    for index, stripped in enumerate(lines):
        if stripped != target and not stripped.endswith(run_target):
            continue
        score = 0
        while (
            score < line.first
            and index - score - 1 >= 0
            and lines[index - score - 1] == physical[line.first - score - 1]
        ):
            score += 1
        if score > best_score:
            best, best_score = index + 1, score
    if best == 0:  # a folded scalar (>-) joins the lines: the line that starts the command
        best = next(
            (
                index + 1
                for index, stripped in enumerate(lines)
                if len(stripped) > 3 and target.startswith(stripped)
            ),
            0,
        )
    return best


def _invocation(
    rel, number, flags: shell_line.Flags, sources: list[str], via: str, size_optional: bool
):
    def unresolved_in(value: str | None) -> list[str]:
        return [sources[i] for i in shell_line.marker_indexes(value or "")]

    notes: tuple[str, ...] = ()
    hidden_size = unresolved_in(flags.size)
    if hidden_size and size_optional:  # the suite is still known; only the size is not
        notes = (f"--auto-partition-size depends on {', '.join(hidden_size)}",)
        flags = replace(flags, size=None)
    for name, value in (
        ("--hw", flags.hw),
        ("--suite", flags.suite),
        ("--auto-partition-size", flags.size),
    ):
        hidden = unresolved_in(value)
        if hidden:
            return Unresolved(rel, number, f"{name} depends on {', '.join(hidden)} ({via})")
    for word in flags.other_words:
        for source in unresolved_in(word):
            if any(flag in source for flag in _KEY_FLAGS):
                return Unresolved(rel, number, f"flags depend on {source} ({via})")
    if flags.hw is None or flags.suite is None:
        return Unresolved(rel, number, f"no --suite in the call ({via})")
    size = None
    if flags.size is not None:
        if not flags.size.isdigit() or int(flags.size) < 1:
            return Unresolved(
                rel, number, f"--auto-partition-size resolved to {flags.size!r} ({via})"
            )
        size = int(flags.size)
    return Invocation(rel, number, flags.hw, flags.suite, flags.nightly, size, via, notes=notes)


def scan_workflows(
    root: Path, partitions_for: PartitionsFor, size_optional: bool = False
) -> WorkflowScan:
    """Resolve every run_suite.py call of the workflows under ``root``. ``size_optional``: a call
    whose hw and suite resolve but whose ``--auto-partition-size`` does not is an invocation with
    ``size=None`` and a note (else it is unresolved)."""
    workflows, errors = load_workflows(root)
    scan = WorkflowScan(errors=errors)
    _Resolver(workflows, partitions_for, size_optional).scan(scan)
    scan.invocations = _unique(
        scan.invocations,
        lambda i: (i.where, i.hw, i.suite, i.nightly, i.size, i.runner, i.timeout_minutes),
    )
    scan.unresolved = _unique(scan.unresolved, lambda u: (u.where, u.reason))
    scan.other_scripts = sorted(set(scan.other_scripts))
    return scan


def _unique(items: list, key: Callable[[Any], Any]) -> list:
    seen, kept = set(), []
    for item in items:
        if key(item) not in seen:
            seen.add(key(item))
            kept.append(item)
    return kept
