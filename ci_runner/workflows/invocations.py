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

Reading is bounded, and what is not read is said (:attr:`WorkflowScan.notes`, naming the file
and key): a file by :mod:`.yaml_file` (size, YAML alias expansion); a matrix at GitHub's 256
jobs, its size computed before any row is built; reusable workflows at GitHub's 10 levels and
:data:`MAX_CONTEXTS` ways of calling one; :data:`MAX_SCOPES` (caller, matrix row) pairs and
:data:`MAX_CALL_READS` calls per step;
expressions by :mod:`.expressions`. A value of the wrong YAML type anywhere (``strategy: [1]``)
is a note and is read as absent.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ci_runner.catalog.limits import number_text
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
from ci_runner.workflows.runner_key import runner_key
from ci_runner.workflows.yaml_file import WorkflowFileError, load_workflow_file

WORKFLOW_DIR = ".github/workflows"
_LOCAL_USES = "./.github/workflows/"
_KEY_FLAGS = ("--hw", "--suite", "--nightly", "--auto-partition")
MAX_MATRIX_JOBS = 256  # GitHub's limit of jobs one matrix generates
MAX_CALL_DEPTH = 10  # GitHub's limit of nested reusable workflows
MAX_CONTEXTS = 256  # ways one reusable workflow is called (callers x their matrix rows)
MAX_SCOPES = 4096  # (way it is called, matrix row) pairs read per step
MAX_CALL_READS = 100_000  # run_suite.py calls read per step: its calls x its scopes
MAX_CALL_READS = 100_000  # run_suite.py calls read per step: its calls x its scopes
MAX_SHARDS = 4096  # --auto-partition-size, as run_suite.py accepts it
_YAML_LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")  # YAML's, not str.splitlines'

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
    runner_key: str | None = None  # the key a computed runs-on looks its label up with
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
    errors: list[str] = field(default_factory=list)  # files not read
    notes: list[str] = field(default_factory=list)  # what was not expanded or had a wrong type


class Notes(list):
    """What reading left out, each once, in order (``file: key: why``)."""

    def add(self, note: str) -> None:
        if note not in self:
            self.append(note)


def mapping(value: Any, where: str, notes: Notes) -> dict:
    """``value`` when it is a YAML map; absent is ``{}``; any other type is a note, and ``{}``."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    notes.add(f"{where} must be a map, got {_type(value)}; not read")
    return {}


def sequence(value: Any, where: str, notes: Notes) -> list:
    """``value`` when it is a YAML list; absent is ``[]``; any other type is a note, and ``[]``."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    notes.add(f"{where} must be a list, got {_type(value)}; not read")
    return []


def _type(value: Any) -> str:
    names = {dict: "a map", list: "a list", str: "a string", bool: "a boolean"}
    return names.get(type(value), "a number" if isinstance(value, int | float) else "null")


@dataclass
class _Workflow:
    rel: str
    data: dict
    lines: list[str]
    notes: Notes = field(default_factory=Notes)

    @functools.cached_property
    def stripped(self) -> list[str]:
        return [text.strip() for text in self.lines]

    @functools.cached_property
    def starts(self) -> dict[str, list[int]]:
        """Line indexes by stripped text, and by the text after ``run:`` on a line."""
        found: dict[str, list[int]] = {}
        for index, text in enumerate(self.stripped):
            found.setdefault(text, []).append(index)
            _, run, after = text.partition("run: ")
            if run and after != text:
                found.setdefault(after, []).append(index)
        return found

    cursor: int = 0  # where the previous step's script started: steps come in file order

    @functools.cached_property
    def computes_partitions(self) -> bool:
        return any("compute_partitions.py" in line for line in self.lines)

    @functools.cached_property
    def triggers(self) -> dict:
        on = self.data.get("on", self.data.get(True))
        if isinstance(on, str):
            return {on: None}
        if isinstance(on, list):
            return dict.fromkeys(item for item in on if isinstance(item, str))
        return mapping(on, f"{self.rel}: on", self.notes)

    def input_defaults(self, trigger: str) -> dict[str, Any]:
        where = f"{self.rel}: on.{trigger}"
        spec = mapping(self.triggers.get(trigger), where, self.notes)
        inputs = mapping(spec.get("inputs"), f"{where}.inputs", self.notes)
        return {
            str(name): mapping(value, f"{where}.inputs.{name}", self.notes).get("default")
            for name, value in inputs.items()
        }

    @functools.cached_property
    def jobs(self) -> dict[str, dict]:
        jobs = mapping(self.data.get("jobs"), f"{self.rel}: jobs", self.notes)
        return {
            str(job_id): job
            for job_id, job in jobs.items()
            if mapping(job, f"{self.rel}: jobs.{job_id}", self.notes)
        }

    def part(self, job_id: str, block: dict, key: str, kind: Callable = mapping) -> Any:
        """``block[key]`` of job ``job_id`` (a map, or a list with ``kind=sequence``)."""
        return kind(block.get(key), f"{self.rel}: jobs.{job_id}.{key}", self.notes)


@dataclass(frozen=True)
class _Context:
    inputs: dict[str, Any]
    via: str


def load_workflows(root: Path) -> tuple[dict[str, _Workflow], list[str]]:
    """The workflow files under ``root/.github/workflows`` by file name, and load errors."""
    workflows, errors = {}, []
    directory = root / WORKFLOW_DIR
    paths = (
        sorted([*directory.glob("*.yml"), *directory.glob("*.yaml")]) if directory.is_dir() else []
    )
    for path in paths:
        rel = f"{WORKFLOW_DIR}/{path.name}"
        try:
            data = load_workflow_file(path, rel)
        except WorkflowFileError as exc:
            errors.append(str(exc))
            continue
        if isinstance(data, dict):
            text = path.read_bytes().decode("utf-8", "replace")
            workflows[path.name] = _Workflow(rel, data, _YAML_LINE_BREAK.split(text))
        elif data is not None:
            errors.append(f"{rel}: a workflow must be a map, got {_type(data)}")
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
                workflow.part(job_id, job, "with").get("pr_test_yml")
                or called.input_defaults("workflow_call").get("pr_test_yml")
                or workflow.rel
            )
            outputs = LazyValues({"partitions": lambda yml=str(yml): self.partitions_for(yml)})
            context[job_id] = Partial(outputs=outputs, result="success")
        return context

    def contexts(self, workflow: _Workflow, stack: tuple[str, ...] = ()) -> list[_Context]:
        """The input sets ``workflow`` runs with: direct triggers' defaults, then each caller's
        (at most :data:`MAX_CONTEXTS`, through at most :data:`MAX_CALL_DEPTH` levels)."""
        name = Path(workflow.rel).name
        if name in self._contexts:
            return self._contexts[name]
        found: list[_Context] = []
        if any(trigger != "workflow_call" for trigger in workflow.triggers):
            found.append(_Context(workflow.input_defaults("workflow_dispatch"), "direct"))
        defaults = workflow.input_defaults("workflow_call")
        for caller, job_id, job in self.callers.get(name, []):
            if Path(caller.rel).name in stack:
                continue
            if len(stack) >= MAX_CALL_DEPTH:
                chain = " <- ".join(Path(n).name for n in (*stack, name))
                workflow.notes.add(
                    f"{workflow.rel}: reached through more than {MAX_CALL_DEPTH} levels of "
                    f"reusable workflows ({chain} <- ...); its callers are not read"
                )
                break
            for outer in self.contexts(caller, (*stack, name)):
                base = {"inputs": outer.inputs, "needs": self.needs(caller)}
                for row in self.matrix_rows(caller, job_id, job, base):
                    if len(found) >= MAX_CONTEXTS:
                        workflow.notes.add(
                            f"{workflow.rel}: called in more than {MAX_CONTEXTS} ways (callers "
                            "and their matrix rows); the others are not read"
                        )
                        self._contexts[name] = found
                        return found
                    scope = {**base, "matrix": row}
                    given = {
                        k: _value(v, scope) for k, v in caller.part(job_id, job, "with").items()
                    }
                    via = f"{caller.rel} job {job_id}" + (
                        "" if outer.via == "direct" else f" <- {outer.via}"
                    )
                    found.append(_Context({**defaults, **given}, via))
        self._contexts[name] = found
        return found

    @staticmethod
    def matrix_rows(workflow: _Workflow, job_id: str, job: dict, scope: dict) -> list[dict]:
        """The rows of the job's matrix (``include``/``exclude`` as GitHub applies them); an
        unknown row when the matrix depends on the run or is over :data:`MAX_MATRIX_JOBS`."""
        strategy = workflow.part(job_id, job, "strategy")
        where = f"{workflow.rel}: jobs.{job_id}.strategy.matrix"
        if strategy.get("matrix") is None:
            return [{}]
        matrix = _value(strategy["matrix"], scope)
        if matrix is UNKNOWN:
            return [Partial()]
        matrix = mapping(matrix, where, workflow.notes)
        axes: dict[str, list] = {}
        for key, values in matrix.items():
            if key in ("include", "exclude"):
                continue
            values = _value(values, scope)
            if values is UNKNOWN:
                values = [UNKNOWN]
            elif not isinstance(values, list):
                workflow.notes.add(f"{where}.{key} must be a list, got {_type(values)}; not read")
                values = [UNKNOWN]
            axes[str(key)] = values
        combinations = math.prod(min(len(v), MAX_MATRIX_JOBS + 1) for v in axes.values())
        includes = _entries(matrix.get("include"), scope, f"{where}.include", workflow.notes)
        excludes = _entries(matrix.get("exclude"), scope, f"{where}.exclude", workflow.notes)
        if combinations > MAX_MATRIX_JOBS or len(includes) > MAX_MATRIX_JOBS:
            product = math.prod(len(v) for v in axes.values())
            shown = f"{product:,}" if product.bit_length() <= 64 else number_text(product)
            sizes = " x ".join(str(len(v)) for v in list(axes.values())[:20])
            sizes += " x ..." if len(axes) > 20 else ""
            what = [f"{sizes} = {shown} combinations"] if axes else []
            what += [f"{len(includes):,} include entries"] if includes else []
            workflow.notes.add(
                f"{where}: {' and '.join(what)}, more than the {MAX_MATRIX_JOBS} jobs GitHub "
                "runs from one matrix; not expanded"
            )
            return [Partial()]
        rows = [dict(zip(axes, combo, strict=True)) for combo in itertools.product(*axes.values())]
        base_rows = [dict(row) for row in rows] if axes else []
        rows = rows if axes else []
        for entry in includes:
            merged = False
            for row, base in zip(rows[: len(base_rows)], base_rows, strict=False):
                if all(base.get(k, v) == v for k, v in entry.items() if k in axes):
                    row.update(entry)
                    merged = True
            if not merged:
                rows.append(dict(entry))
        rows = [
            r for r in rows if not any(all(r.get(k) == v for k, v in e.items()) for e in excludes)
        ]
        if len(rows) > MAX_MATRIX_JOBS:
            workflow.notes.add(
                f"{where}: {len(rows)} jobs, more than the {MAX_MATRIX_JOBS} GitHub runs from "
                "one matrix; not expanded"
            )
            return [Partial()]
        return rows or [{}]

    # ------------------------------------------------------------------ invocations

    def scan(self, scan: WorkflowScan) -> None:
        for workflow in self.workflows.values():
            for job_id, job in workflow.jobs.items():
                for number, step in enumerate(workflow.part(job_id, job, "steps", sequence), 1):
                    where = f"{workflow.rel}: jobs.{job_id}.steps[{number}]"
                    step = mapping(step, where, workflow.notes)
                    run = step.get("run")
                    if run is not None and not isinstance(run, str):
                        workflow.notes.add(f"{where}.run must be a string, got {_type(run)}")
                    elif run is not None:
                        self._scan_step(scan, workflow, (job_id, job), step)
        for workflow in self.workflows.values():
            scan.notes.extend(note for note in workflow.notes if note not in scan.notes)

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
        start = _script_start(workflow, script)
        numbers = {
            i: start + 1 + line.first if start is not None else _file_line(workflow, script, line)
            for i, line in targets
        }
        contexts = self.contexts(workflow)
        if not contexts:
            for i, _ in targets:
                scan.unresolved.append(
                    Unresolved(workflow.rel, numbers[i], "reusable workflow that no workflow calls")
                )
            return
        assigned = shell_line.assignments_before(lines, [i for i, _ in targets])
        scopes = 0
        for context in contexts:
            base = {"inputs": context.inputs, "needs": self.needs(workflow)}
            for row in self.matrix_rows(workflow, job_id, job, base):
                scopes += 1
                if scopes > min(MAX_SCOPES, max(1, MAX_CALL_READS // len(targets))):
                    workflow.notes.add(
                        f"{workflow.rel}:{min(numbers.values())}: its {len(targets)} "
                        f"run_suite.py call(s) run in {scopes - 1}+ (caller, matrix row) "
                        f"combinations, more than the {MAX_SCOPES} (and {MAX_CALL_READS:,} calls) "
                        "read per step; the others are not read"
                    )
                    return
                scope = {**base, "matrix": row}
                env = Partial()
                for where, source in (
                    ("env", workflow.data),
                    (f"jobs.{job_id}.env", job),
                    (f"jobs.{job_id}.steps.env", step),
                ):
                    block = mapping(source.get("env"), f"{workflow.rel}: {where}", workflow.notes)
                    for key, value in block.items():
                        if isinstance(value, dict | list):  # GitHub takes strings, numbers
                            workflow.notes.add(
                                f"{workflow.rel}: {where}.{key} must be a string, number or "
                                f"boolean, got {_type(value)}; not read"
                            )
                            continue
                        env[str(key)] = to_text(_value(value, {**scope, "env": env}))
                scope["env"] = env
                budget = _job_budget(job_id, job, step, scope)
                for i, _ in targets:
                    self._scan_line(
                        scan, workflow, numbers[i], lines, i, scope, context.via, budget, assigned
                    )

    def _scan_line(self, scan, workflow, number, lines, index, scope, via, budget, assignments):
        sources: list[str] = []

        def unknown(source: str) -> str:
            sources.append(source)
            return shell_line.marker(len(sources) - 1)

        assigned = {k: substitute(v, scope, unknown) for k, v in assignments[index].items()}
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
    key = runner_key(job.get("runs-on"), scope) if runner is UNKNOWN else None
    if runner is UNKNOWN:
        runner = None
        if key is None:  # with a known lookup key, the key stands for the label
            notes.append(f"runs-on {job.get('runs-on')!r} depends on the run")
    elif isinstance(runner, list | dict):
        notes.append(f"runs-on {to_text(runner)[:80]!r} is not a single label")
        runner = None
    elif runner is not None:
        runner = to_text(runner)
    job_minutes = _minutes(job, scope, "the job's", notes)
    step_minutes = _minutes(step, scope, "the step's", notes)
    known = [m for m in (job_minutes, step_minutes) if m is not None]
    return {
        "job": job_id,
        "runner": runner,
        "runner_key": key,
        "timeout_minutes": min(known) if known else None,
        "step_timeout": step_minutes is not None and step_minutes == min(known),
        "notes": tuple(notes),
    }


def _minutes(block: dict, scope: dict, whose: str, notes: list[str]) -> float | None:
    raw = block.get("timeout-minutes")
    value = _value(raw, scope)
    if value is UNKNOWN:
        notes.append(f"{whose} timeout-minutes {raw!r} depends on the run")
        return None
    if value is None:
        return None
    minutes = value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if isinstance(value, str):
        try:
            minutes = float(value)
        except ValueError:
            minutes = None
    if minutes is None or not math.isfinite(minutes) or minutes <= 0:
        notes.append(f"{whose} timeout-minutes {to_text(value)[:40]!r} is not a number of minutes")
        return None
    return float(minutes)


def _entries(value: Any, scope: dict, where: str, notes: Notes) -> list[dict]:
    """A matrix's ``include`` or ``exclude`` entries (maps; anything else is a note)."""
    value = _value(value, scope) if value is not None else []
    if value is UNKNOWN:
        return []
    entries = []
    for index, entry in enumerate(sequence(value, where, notes)):
        entry = mapping(entry, f"{where}[{index}]", notes)
        entries.append({str(k): _value(v, scope) for k, v in entry.items()})
    return entries


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


_VERIFIED_LINES = 200  # lines of a script compared with the file to place it


def _script_start(workflow: _Workflow, script: str) -> int | None:
    """The 0-based line of the file where a step's script starts: the first place at or after
    the previous step's whose lines are the script's (steps come in file order, so placing all
    of them is linear); None when there is none (a quoted scalar with escapes)."""
    physical = [text.strip() for text in script.split("\n")]
    if physical and physical[-1] == "":
        physical.pop()
    if not physical:
        return None
    candidates = workflow.starts.get(physical[0], [])
    compared = physical[:_VERIFIED_LINES]
    after = bisect.bisect_left(candidates, workflow.cursor)
    for start in itertools.chain(candidates[after:], candidates[:after]):
        if workflow.stripped[start + 1 : start + len(compared)] == compared[1:]:
            workflow.cursor = start
            return start
    return None


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
        decimal = flags.size.isdecimal() and len(flags.size) <= len(str(MAX_SHARDS))
        if not decimal or not 1 <= int(flags.size) <= MAX_SHARDS:
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
