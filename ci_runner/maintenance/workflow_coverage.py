"""Workflow coverage (``check-workflow-dispatch``): every catalog suite is run by some workflow,
and every suite a workflow runs is in the catalog. A suite that no workflow runs is a silent drop:
its files pass every lint and never run.

The check reads ``.github/workflows/*.yml`` (bounded: :mod:`ci_runner.workflows.yaml_file`) and
judges what each ``run:`` script executes (:mod:`ci_runner.maintenance.shell_flow`). A command
that launches the runner (``run_suite.py``, ``run-suite``, ``python -m ci_runner.cli``; not
``echo run_suite.py``, not ``python -m`` a module that runs nothing) *runs* its ``--suite`` (a
name or a comma list, the flag repeatable) unless it only plans (``--dry-run``,
``--print-matrix``, ``init``), and only when it is proven to run: not in a job or step whose
``if:`` is always false (``if: false``, ``if: ${{ false }}``), in a job that needs one that
never runs, in a reusable workflow no running job calls, or in a part of the script that never
runs or may not run (``true || ...``, after ``exit``, inside a shell ``if``); a suite run only
there is reported with the reason. ``$VAR`` and ``${{ env.X }}`` resolve through the step, job
and workflow ``env:``; ``${{ matrix.X }}`` through a literal matrix (values or ``include``). A
shell script that a step runs (``bash .ci/run``, ``./scripts/x.sh``) is read too. A suite that
cannot be resolved is an error: write it literally so this check can see it.
"""

from __future__ import annotations

import argparse
import itertools
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ci_runner.catalog import Catalog, CatalogError, find_root, load_catalog
from ci_runner.cli_errors import StoreOnce, robust_output, usage_error
from ci_runner.file_safety import read_regular_text
from ci_runner.maintenance.shell_commands import (
    RUN_SUITE_MODULES,
    launched,
    option_values,
    run_suite_launch,
    simple_commands,
    strip_assignments,
)
from ci_runner.maintenance.shell_flow import (
    MAY,
    NEVER,
    PROVEN,
    RUNS,
    ShellSyntaxError,
    Verdict,
    commands,
)
from ci_runner.workflows.expressions import UNKNOWN, ExpressionError, evaluate, truthy
from ci_runner.workflows.yaml_file import WorkflowFileError, load_workflow_file

WORKFLOW_DIR = ".github/workflows"
PLANNING_FLAGS = frozenset({"--dry-run", "--print-matrix", "--help", "-h"})
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
SHELLS = frozenset({"bash", "sh", "zsh"})
UNRESOLVED = "@@unresolved-expression@@"
MAX_EXPANSIONS = 4096  # command lines one command expands to over matrix and env values
MAX_ENV_DEPTH = 20  # env values that name env values that name ...
STATUS_FUNCTIONS = re.compile(r"\b(always|failure|cancelled)\s*\(", re.IGNORECASE)


class DispatchInputError(Exception):
    """A workflow cannot be read; the message names the file."""


@dataclass(frozen=True)
class Invocation:
    """One run_suite invocation found in a workflow step (or a script it runs)."""

    where: str  # "<workflow> job '<id>' step <n>[ via <script>]"
    suites: tuple[str, ...]
    hw: str | None
    nightly: bool
    planning: bool
    verdict: Verdict = PROVEN  # whether the command is proven to run

    @property
    def runs(self) -> bool:
        return self.verdict.runs == RUNS


@dataclass(frozen=True)
class Context:
    """What ``$VAR`` and ``${{ ... }}`` can resolve to at one step."""

    env: Mapping[str, str]
    matrix: Mapping[str, tuple[str, ...]]


class Unresolved(Exception):
    """A value depends on something not literal in the YAML."""


def _expand_expressions(text: str, ctx: Context, depth: int = 0) -> list[str]:
    """``text`` with every ``${{ ... }}`` replaced; several results for multi-valued matrix keys
    (at most :data:`MAX_EXPANSIONS`)."""
    match = EXPRESSION.search(text)
    if match is None:
        return [text]
    if depth > MAX_ENV_DEPTH:
        raise Unresolved(f"env values refer to env values more than {MAX_ENV_DEPTH} deep")
    expression = match.group(1)
    if m := re.fullmatch(r"matrix\.([\w-]+)", expression):
        values = ctx.matrix.get(m.group(1))
        if not values:
            raise Unresolved(f"${{{{ {expression} }}}} is not a literal matrix value")
    elif m := re.fullmatch(r"env\.([\w-]+)", expression):
        if m.group(1) not in ctx.env:
            raise Unresolved(f"${{{{ {expression} }}}} is not set in env:")
        values = tuple(_expand_expressions(ctx.env[m.group(1)], ctx, depth + 1))
    else:
        raise Unresolved(f"${{{{ {expression} }}}} is computed at run time")
    head, tail = text[: match.start()], text[match.end() :]
    found: list[str] = []
    for value in values:
        found += _expand_expressions(head + value + tail, ctx, depth)
        if len(found) > MAX_EXPANSIONS:
            raise Unresolved(
                f"it expands to more than {MAX_EXPANSIONS} command lines over the matrix"
            )
    return found


def _expand_variables(token: str, ctx: Context, depth: int = 0) -> list[str]:
    if UNRESOLVED in token:
        raise Unresolved("it comes from a ${{ ... }} expression computed at run time")
    match = VARIABLE.search(token)
    if match is None:
        return [token]
    if depth > MAX_ENV_DEPTH:
        raise Unresolved(f"variables refer to variables more than {MAX_ENV_DEPTH} deep")
    name = match.group(1) or match.group(2)
    if name not in ctx.env:
        raise Unresolved(f"${name} is not set in env:")
    head, tail = token[: match.start()], token[match.end() :]
    found: list[str] = []
    for value in _expand_expressions(ctx.env[name], ctx):
        found += _expand_variables(head + value + tail, ctx, depth + 1)
        if len(found) > MAX_EXPANSIONS:
            raise Unresolved(f"it expands to more than {MAX_EXPANSIONS} values")
    return found


def _expanded_commands(text: str, ctx: Context) -> list[str]:
    """A command's text with ``${{ ... }}`` expanded (one per matrix value); an expression
    that cannot be resolved becomes a marker that makes any suite containing it unresolvable."""
    try:
        return _expand_expressions(text, ctx)
    except Unresolved:
        return [EXPRESSION.sub(UNRESOLVED, text)]


def _hide_expressions(script: str) -> tuple[str, Callable[[str], str]]:
    """``script`` with each ``${{ ... }}`` as a plain word, so quotes or operators inside an
    expression do not change how the shell script reads; and the function that puts them back."""
    found: list[str] = []
    prefix = next(
        head
        for head in (f"__ci_runner_expression{n}_" for n in itertools.count())
        if head not in script
    )
    shown = re.compile(re.escape(prefix) + r"(\d+)__")

    def hide(match: re.Match[str]) -> str:
        found.append(match.group(0))
        return f"{prefix}{len(found) - 1}__"

    hidden = EXPRESSION.sub(hide, script)
    return hidden, lambda text: shown.sub(lambda m: found[int(m.group(1))], text)


def scan_script(
    script: str,
    ctx: Context,
    where: str,
    root: Path,
    seen: frozenset[str] = frozenset(),
    outer: Verdict = PROVEN,
) -> tuple[list[Invocation], list[str]]:
    """run_suite invocations of one shell script, with whether each is proven to run (within
    ``outer``: the step's), and problems (unresolvable suites, unreadable scripts)."""
    invocations: list[Invocation] = []
    problems: list[str] = []
    hidden, restore = _hide_expressions(script)
    try:
        found = commands(hidden)
    except ShellSyntaxError as exc:
        problems.append(f"{where}: cannot read the script as shell ({exc})")
        return invocations, problems
    for command in found:
        verdict = outer.then(command.verdict)
        text = restore(command.text)
        if "run_suite" not in text and "run-suite" not in text and "ci_runner" not in text:
            invocations_in, problems_in = _follow_scripts(text, ctx, where, root, seen, verdict)
            invocations += invocations_in
            problems += problems_in
            continue
        for line in _expanded_commands(text, ctx):
            try:
                line_commands = list(simple_commands(line))
            except ValueError as exc:
                problems.append(f"{where}: cannot tokenize `{line.strip()}` ({exc})")
                continue
            for raw in line_commands:
                found_call = _invocation(raw, ctx, where, problems)
                if found_call is not None:
                    invocations.append(replace(found_call, verdict=verdict))
    return invocations, problems


def _invocation(raw: list[str], ctx: Context, where: str, problems: list[str]) -> Invocation | None:
    """The runner invocation ``raw`` (one simple command) is, if it is one."""
    command = launched(strip_assignments(raw))
    found = run_suite_launch(command)
    if found is None:
        return None
    start, launcher = found
    args = command[start:]
    if launcher.startswith("-m ") and launcher[3:] not in RUN_SUITE_MODULES:
        if any(arg == "--suite" or arg.startswith("--suite=") for arg in args):
            problems.append(
                f"{where}: `python {launcher}` runs no suite ({launcher[3:]} is no entry "
                f"point of the runner): use `python run_suite.py` or "
                f"`python -m {RUN_SUITE_MODULES[0]}`"
            )
        return None
    planning = any(arg in PLANNING_FLAGS for arg in args) or args[:1] == ["init"]
    suites: list[str] = []
    try:
        for value in option_values(args, "--suite"):
            for expanded in _expand_variables(value, ctx):
                for text in _expand_expressions(expanded, ctx):
                    suites += [s.strip() for s in text.split(",") if s.strip()]
        hws = [h for v in option_values(args, "--hw") for h in _expand_variables(v, ctx)]
    except Unresolved as exc:
        if not planning:
            problems.append(
                f"{where}: cannot tell which suite `{' '.join(command)[:200]}` runs: {exc}; "
                "write --suite literally, or set it in env:/a literal matrix"
            )
        return None
    if not suites and not planning:
        problems.append(f"{where}: `{' '.join(command)[:200]}` has no --suite")
    return Invocation(
        where=where,
        suites=tuple(suites),
        hw=hws[0] if hws else None,
        nightly="--nightly" in args,
        planning=planning,
    )


def _follow_scripts(
    line: str, ctx: Context, where: str, root: Path, seen: frozenset[str], verdict: Verdict
) -> tuple[list[Invocation], list[str]]:
    """Scan a repository shell script that ``line`` runs (``bash X``, ``sh X``, ``./X``)."""
    invocations: list[Invocation] = []
    problems: list[str] = []
    try:
        line_commands = list(simple_commands(line))
    except ValueError:
        return [], []
    for raw in line_commands:
        command = strip_assignments(raw)
        if not command:
            continue
        target = command[1] if command[0] in SHELLS and len(command) > 1 else command[0]
        if target.startswith("-") or target in seen:
            continue
        path = (root / target).resolve()
        if not path.is_file() or path.suffix == ".py" or root.resolve() not in path.parents:
            continue
        try:
            text = read_regular_text(path)
        except (OSError, UnicodeDecodeError):
            problems.append(f"{where}: runs {target}, which cannot be read as UTF-8 text")
            continue
        found, issues = scan_script(
            text, ctx, f"{where} via {target}", root, seen | {target}, verdict
        )
        invocations += found
        problems += issues
    return invocations, problems


_SCALARS = (str, int, float, bool)


def _scalar(value: object) -> str | None:
    """A YAML scalar as GitHub spells it (``true``); ``None`` for a list or a map, which an
    ``env:`` or matrix value cannot be (and whose text an alias bomb makes astronomically long)."""
    if not isinstance(value, _SCALARS):
        return None
    return str(value).lower() if isinstance(value, bool) else str(value)


def _string_map(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    pairs = ((str(k), _scalar(v)) for k, v in value.items())
    return {k: v for k, v in pairs if v is not None}


def _literal_matrix(strategy: object) -> dict[str, tuple[str, ...]]:
    """Literal values of a job's matrix; a ``${{ fromJSON(...) }}`` matrix contributes none."""
    if not isinstance(strategy, dict) or not isinstance(strategy.get("matrix"), dict):
        return {}
    values: dict[str, list[str]] = {}
    for key, value in strategy["matrix"].items():
        if key == "include" and isinstance(value, list):
            for entry in value:
                if isinstance(entry, dict):
                    for k, v in _string_map(entry).items():
                        values.setdefault(k, []).append(v)
        elif key != "exclude" and isinstance(value, list):
            scalars = (_scalar(v) for v in value)
            values.setdefault(str(key), []).extend(v for v in scalars if v is not None)
    return {k: tuple(dict.fromkeys(v)) for k, v in values.items()}


def condition(value: Any) -> Verdict:
    """A job's or step's ``if:``: never runs when it is always false (``false``, ``0``, ``''``,
    ``${{ false }}``, ``1 == 2``); else it runs on the runs it selects (a trigger's choice)."""
    raw = value
    if value is None:
        return PROVEN
    if isinstance(value, str):
        text = value.strip()
        whole = EXPRESSION.fullmatch(text)
        if whole is None and "${{" in text:
            return PROVEN  # a template: a non-empty string, decided at run time
        try:
            value = evaluate(whole.group(1) if whole else text, {})
        except ExpressionError:
            return PROVEN
    if value is UNKNOWN or truthy(value):
        return PROVEN
    shown = str(raw).lower() if isinstance(raw, bool) else str(raw)
    return Verdict(NEVER, f"its `if: {shown[:80]}` is always false")


def _step_shell(workflow: dict, job: dict, step: dict) -> str | None:
    """The shell a step's ``run:`` runs in: its ``shell:``, else the job's and workflow's
    ``defaults.run.shell``; None for GitHub's default (bash, else sh)."""
    for block in (step, (job.get("defaults") or {}), (workflow.get("defaults") or {})):
        if not isinstance(block, dict):
            continue
        shell = block.get("shell") if block is step else (block.get("run") or {})
        if block is not step:
            shell = shell.get("shell") if isinstance(shell, dict) else None
        if isinstance(shell, str) and shell.strip():
            return shell.split()[0].rsplit("/", 1)[-1]
    return None


def _job_verdicts(jobs: dict[str, Any], called: Verdict) -> dict[str, Verdict]:
    """Each job's verdict: its ``if:``, the verdict of the workflow (``called``), and ``needs``
    (a job that needs one that never runs is skipped, unless its ``if:`` calls always(),
    failure() or cancelled())."""
    verdicts = {
        str(job_id): called.then(condition(job.get("if"))) if isinstance(job, dict) else called
        for job_id, job in jobs.items()
    }
    changed = True
    while changed:
        changed = False
        for job_id, job in jobs.items():
            if not isinstance(job, dict) or verdicts[str(job_id)].runs == NEVER:
                continue
            needs = job.get("needs")
            needs = [needs] if isinstance(needs, str) else needs if isinstance(needs, list) else []
            if STATUS_FUNCTIONS.search(str(job.get("if", ""))):
                continue
            for needed in needs:
                if isinstance(needed, str) and verdicts.get(needed, PROVEN).runs == NEVER:
                    why = f"it needs job {needed!r}, which never runs"
                    verdicts[str(job_id)] = Verdict(NEVER, why)
                    changed = True
                    break
    return verdicts


def load_workflows(directory: Path, root: Path) -> dict[str, tuple[str, dict]]:
    """Every workflow file of ``directory`` by file name: (path shown, data)."""
    found: dict[str, tuple[str, dict]] = {}
    for path in sorted([*directory.glob("*.yml"), *directory.glob("*.yaml")]):
        path = path.resolve()
        rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
        try:
            data = load_workflow_file(path, str(path))
        except WorkflowFileError as exc:
            raise DispatchInputError(str(exc)) from None
        if isinstance(data, dict) and isinstance(data.get("jobs"), dict):
            found[path.name] = (rel, data)
    return found


def _triggers(data: dict) -> set[str]:
    on = data.get("on", data.get(True))
    if isinstance(on, str):
        return {on}
    if isinstance(on, list | dict):
        return {str(item) for item in on}
    return set()


def workflow_verdicts(workflows: dict[str, tuple[str, dict]]) -> dict[str, Verdict]:
    """Each workflow's verdict: one with a trigger of its own runs; a reusable one
    (``on: workflow_call`` only) runs when a job that runs calls it (``uses:
    ./.github/workflows/<it>``), through any number of callers; one that no workflow here calls
    may not run (a caller in another repository cannot be seen)."""
    verdicts: dict[str, Verdict] = {}
    for name, (_, data) in workflows.items():
        triggers = _triggers(data)
        if not triggers:
            verdicts[name] = Verdict(NEVER, "the workflow has no `on:` trigger")
        elif triggers == {"workflow_call"}:
            why = "no workflow of this repository calls this reusable workflow (a caller in "
            verdicts[name] = Verdict(MAY, why + "another repository cannot be seen)")
        else:
            verdicts[name] = PROVEN
    called: set[str] = set()
    changed = True
    while changed:  # a call from a workflow that runs makes the called one run
        changed = False
        for name, (rel, data) in workflows.items():
            jobs = _job_verdicts(data["jobs"], verdicts[name])
            for job_id, job in data["jobs"].items():
                uses = job.get("uses") if isinstance(job, dict) else None
                if not (isinstance(uses, str) and uses.startswith("./.github/workflows/")):
                    continue
                target = uses.removeprefix("./.github/workflows/").split("@")[0]
                if target not in verdicts or _triggers(workflows[target][1]) != {"workflow_call"}:
                    continue
                runs = jobs[str(job_id)]
                via = Verdict(
                    runs.runs, f"called by {rel} job {job_id!r}, which {runs.runs}: {runs.why}"
                )
                if target not in called or _ORDER[runs.runs] < _ORDER[verdicts[target].runs]:
                    verdicts[target] = PROVEN if runs.runs == RUNS else via
                    called.add(target)
                    changed = True
    return verdicts


_ORDER = {RUNS: 0, MAY: 1, NEVER: 2}


def scan_workflow(
    path: Path, root: Path, data: dict | None = None, called: Verdict = PROVEN
) -> tuple[list[Invocation], list[str]]:
    """All run_suite invocations of one workflow file; ``called``: whether the workflow runs."""
    rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
    if data is None:
        try:
            data = load_workflow_file(path, str(path))
        except WorkflowFileError as exc:
            raise DispatchInputError(str(exc)) from None
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), dict):
        return [], []
    workflow_env = _string_map(data.get("env"))
    invocations: list[Invocation] = []
    problems: list[str] = []
    jobs = _job_verdicts(data["jobs"], called)
    for job_id, job in data["jobs"].items():
        if not isinstance(job, dict):
            continue
        job_env = {**workflow_env, **_string_map(job.get("env"))}
        matrix = _literal_matrix(job.get("strategy"))
        steps = job.get("steps")
        for number, step in enumerate(steps if isinstance(steps, list) else [], start=1):
            if not isinstance(step, dict) or not isinstance(step.get("run"), str):
                continue
            ctx = Context(env={**job_env, **_string_map(step.get("env"))}, matrix=matrix)
            where = f"{rel} job {job_id!r} step {number}"
            if isinstance(step.get("name"), str):
                where += f" ({step['name']})"
            verdict = jobs[str(job_id)].then(condition(step.get("if")))
            shell = _step_shell(data, job, step)
            if shell is not None and shell not in SHELLS:
                why = f"the step runs in `shell: {shell}`, which this check does not read"
                verdict = verdict.then(Verdict(MAY, why))
            found, issues = scan_script(step["run"], ctx, where, root, outer=verdict)
            invocations += found
            problems += issues
    return invocations, problems


def check(catalog: Catalog, invocations: Sequence[Invocation]) -> list[str]:
    """Problems: unknown suites, wrong --hw, nightly without --nightly, suites nobody runs (or
    runs only where the call is not proven to run: each such call and why)."""
    problems: list[str] = []
    run: set[str] = set()
    unproven: dict[str, list[str]] = {}
    for inv in invocations:
        for name in inv.suites:
            suite = catalog.get(name, inv.hw)
            if catalog.rules is not None and inv.hw is not None:  # suites-from: its tables
                if not catalog.rules.knows(inv.hw, name):
                    problems.append(
                        f"{inv.where}: suite {name!r} is not a {inv.hw} suite of "
                        f"{catalog.rules.path}'s tables"
                    )
                    continue
                suite = catalog.suite_for(name, inv.hw)
            if suite is None:
                renamed = catalog.renamed(name)
                hint = f" (renamed to {renamed.name!r})" if renamed else ""
                problems.append(f"{inv.where}: suite {name!r} is not in the catalog{hint}")
                continue
            if inv.planning:
                continue
            if not inv.runs:
                unproven.setdefault(name, []).append(
                    f"{inv.where} {inv.verdict.runs}: {inv.verdict.why}"
                )
                continue
            run.add(name)
            if inv.hw is not None and inv.hw != suite.hw:
                problems.append(
                    f"{inv.where}: suite {name!r} is hw={suite.hw!r} in the catalog but runs "
                    f"with --hw {inv.hw}"
                )
            if suite.nightly and not inv.nightly:
                problems.append(
                    f"{inv.where}: nightly suite {name!r} runs without --nightly, which "
                    "selects none of its files"
                )
    for suite in catalog.suites:
        if suite.name not in run:
            seen = unproven.get(suite.name, [])
            why = (
                f"no workflow is proven to run it (its calls: {'; '.join(seen)}), so its files "
                "may never run"
                if seen
                else "no workflow runs it, so its files never run"
            )
            problems.append(
                f"suite {suite.name!r} (hw={suite.hw}) is in the catalog but {why}: add a job "
                f"running `python run_suite.py --hw {suite.hw} --suite {suite.name}"
                f"{' --nightly' if suite.nightly else ''}`, or remove the suite from "
                "[tool.ci-runner]"
            )
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ci_runner.maintenance check-workflow-dispatch",
        description="Every catalog suite is run by a workflow, and every suite run is in the "
        "catalog.",
    )
    parser.add_argument(
        "--root", action=StoreOnce, help="repository root (default: found from the cwd)"
    )
    parser.add_argument(
        "--workflows",
        action=StoreOnce,
        help=f"workflow directory (default: <root>/{WORKFLOW_DIR})",
    )
    parser.add_argument("--verbose", action="store_true", help="list every invocation found")
    args = parser.parse_args(argv)
    robust_output()
    try:
        root = Path(args.root).resolve() if args.root else find_root(Path.cwd())
        catalog = load_catalog(root)
        directory = Path(args.workflows) if args.workflows else root / WORKFLOW_DIR
        if not directory.is_dir():
            raise DispatchInputError(f"{directory}: workflow directory not found")
        workflows = load_workflows(directory, root)
        called = workflow_verdicts(workflows)
        invocations: list[Invocation] = []
        problems: list[str] = []
        for name, (_, data) in workflows.items():
            path = (directory / name).resolve()
            found, issues = scan_workflow(path, root, data, called[name])
            invocations += found
            problems += issues
    except (CatalogError, DispatchInputError) as exc:
        return usage_error(exc)
    if args.verbose:
        for inv in invocations:
            kind = "plans" if inv.planning else "runs"
            verdict = "" if inv.runs else f" [{inv.verdict.runs}: {inv.verdict.why}]"
            print(f"{inv.where}: {kind} {', '.join(inv.suites) or '-'} (--hw {inv.hw}){verdict}")
    problems += check(catalog, invocations)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        return 1
    ran = {s for inv in invocations if not inv.planning and inv.runs for s in inv.suites}
    print(f"all {len(catalog.suites)} catalog suite(s) are run by a workflow ({len(ran)} found)")
    return 0
