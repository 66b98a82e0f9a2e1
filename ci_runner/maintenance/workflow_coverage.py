"""Workflow coverage (``check-workflow-dispatch``): every catalog suite is run by some workflow,
and every suite a workflow runs is in the catalog. A suite that no workflow runs is a silent drop:
its files pass every lint and never run.

The check reads ``.github/workflows/*.yml`` with PyYAML and tokenizes each ``run:`` script
(:mod:`ci_runner.maintenance.shell_commands`). A command that launches the runner
(``run_suite.py``, ``run-suite``, ``python -m ci_runner.cli``; not ``echo run_suite.py``, not
``python -m`` a module that runs nothing) *runs* its ``--suite`` (a name or a comma list, the
flag repeatable) unless it only plans (``--dry-run``, ``--print-matrix``, ``init``). ``$VAR`` and ``${{ env.X }}`` resolve through the step, job and workflow
``env:``; ``${{ matrix.X }}`` through a literal matrix (values or ``include``). A shell script
that a step runs (``bash .ci/run``, ``./scripts/x.sh``) is read too. A suite that cannot be
resolved is an error: write it literally so this check can see it.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ci_runner.catalog import Catalog, CatalogError, find_root, load_catalog
from ci_runner.cli_errors import StoreOnce, robust_output, usage_error
from ci_runner.file_safety import read_regular_text, why
from ci_runner.maintenance.shell_commands import (
    RUN_SUITE_MODULES,
    launched,
    logical_lines,
    option_values,
    run_suite_launch,
    simple_commands,
    strip_assignments,
)

WORKFLOW_DIR = ".github/workflows"
PLANNING_FLAGS = frozenset({"--dry-run", "--print-matrix", "--help", "-h"})
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
SHELLS = frozenset({"bash", "sh", "zsh"})
UNRESOLVED = "@@unresolved-expression@@"


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


@dataclass(frozen=True)
class Context:
    """What ``$VAR`` and ``${{ ... }}`` can resolve to at one step."""

    env: Mapping[str, str]
    matrix: Mapping[str, tuple[str, ...]]


class Unresolved(Exception):
    """A value depends on something not literal in the YAML."""


def _expand_expressions(text: str, ctx: Context) -> list[str]:
    """``text`` with every ``${{ ... }}`` replaced; several results for multi-valued matrix keys."""
    match = EXPRESSION.search(text)
    if match is None:
        return [text]
    expression = match.group(1)
    if m := re.fullmatch(r"matrix\.([\w-]+)", expression):
        values = ctx.matrix.get(m.group(1))
        if not values:
            raise Unresolved(f"${{{{ {expression} }}}} is not a literal matrix value")
    elif m := re.fullmatch(r"env\.([\w-]+)", expression):
        if m.group(1) not in ctx.env:
            raise Unresolved(f"${{{{ {expression} }}}} is not set in env:")
        values = tuple(_expand_expressions(ctx.env[m.group(1)], ctx))
    else:
        raise Unresolved(f"${{{{ {expression} }}}} is computed at run time")
    head, tail = text[: match.start()], text[match.end() :]
    return [out for value in values for out in _expand_expressions(head + value + tail, ctx)]


def _expand_variables(token: str, ctx: Context) -> list[str]:
    if UNRESOLVED in token:
        raise Unresolved("it comes from a ${{ ... }} expression computed at run time")
    match = VARIABLE.search(token)
    if match is None:
        return [token]
    name = match.group(1) or match.group(2)
    if name not in ctx.env:
        raise Unresolved(f"${name} is not set in env:")
    head, tail = token[: match.start()], token[match.end() :]
    return [
        out
        for value in _expand_expressions(ctx.env[name], ctx)
        for out in _expand_variables(head + value + tail, ctx)
    ]


def _expanded_lines(script: str, ctx: Context) -> Iterator[str]:
    """Logical lines with ``${{ ... }}`` expanded (one line per matrix value); an expression that
    cannot be resolved becomes a marker that makes any suite containing it unresolvable."""
    for line in logical_lines(script):
        try:
            yield from _expand_expressions(line, ctx)
        except Unresolved:
            yield EXPRESSION.sub(UNRESOLVED, line)


def scan_script(
    script: str, ctx: Context, where: str, root: Path, seen: frozenset[str] = frozenset()
) -> tuple[list[Invocation], list[str]]:
    """run_suite invocations of one shell script, and problems (unresolvable suites)."""
    invocations: list[Invocation] = []
    problems: list[str] = []
    for line in _expanded_lines(script, ctx):
        if "run_suite" not in line and "run-suite" not in line and "ci_runner" not in line:
            invocations_in, problems_in = _follow_scripts(line, ctx, where, root, seen)
            invocations += invocations_in
            problems += problems_in
            continue
        try:
            line_commands = list(simple_commands(line))
        except ValueError as exc:
            problems.append(f"{where}: cannot tokenize `{line.strip()}` ({exc})")
            continue
        for raw in line_commands:
            command = launched(strip_assignments(raw))
            found = run_suite_launch(command)
            if found is None:
                continue
            start, launcher = found
            args = command[start:]
            if launcher.startswith("-m ") and launcher[3:] not in RUN_SUITE_MODULES:
                if any(arg == "--suite" or arg.startswith("--suite=") for arg in args):
                    problems.append(
                        f"{where}: `python {launcher}` runs no suite ({launcher[3:]} is no entry "
                        f"point of the runner): use `python run_suite.py` or "
                        f"`python -m {RUN_SUITE_MODULES[0]}`"
                    )
                continue
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
                        f"{where}: cannot tell which suite `{' '.join(command)}` runs: {exc}; "
                        "write --suite literally, or set it in env:/a literal matrix"
                    )
                continue
            if not suites and not planning:
                problems.append(f"{where}: `{' '.join(command)}` has no --suite")
            invocations.append(
                Invocation(
                    where=where,
                    suites=tuple(suites),
                    hw=hws[0] if hws else None,
                    nightly="--nightly" in args,
                    planning=planning,
                )
            )
    return invocations, problems


def _follow_scripts(
    line: str, ctx: Context, where: str, root: Path, seen: frozenset[str]
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
            continue
        found, issues = scan_script(text, ctx, f"{where} via {target}", root, seen | {target})
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


def scan_workflow(path: Path, root: Path) -> tuple[list[Invocation], list[str]]:
    """All run_suite invocations of one workflow file."""
    import yaml  # PyYAML: only this check needs it

    try:
        data = yaml.safe_load(read_regular_text(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise DispatchInputError(f"{path}: cannot read ({why(exc)})") from None
    except yaml.YAMLError as exc:
        raise DispatchInputError(f"{path}: invalid YAML ({exc})") from None
    except RecursionError:
        raise DispatchInputError(f"{path}: invalid YAML (nested too deeply to read)") from None
    rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), dict):
        return [], []
    workflow_env = _string_map(data.get("env"))
    invocations: list[Invocation] = []
    problems: list[str] = []
    for job_id, job in data["jobs"].items():
        if not isinstance(job, dict):
            continue
        job_env = {**workflow_env, **_string_map(job.get("env"))}
        matrix = _literal_matrix(job.get("strategy"))
        for number, step in enumerate(job.get("steps") or [], start=1):
            if not isinstance(step, dict) or not isinstance(step.get("run"), str):
                continue
            ctx = Context(env={**job_env, **_string_map(step.get("env"))}, matrix=matrix)
            where = f"{rel} job {job_id!r} step {number}"
            if isinstance(step.get("name"), str):
                where += f" ({step['name']})"
            found, issues = scan_script(step["run"], ctx, where, root)
            invocations += found
            problems += issues
    return invocations, problems


def check(catalog: Catalog, invocations: Sequence[Invocation]) -> list[str]:
    """Problems: unknown suites, wrong --hw, nightly without --nightly, suites nobody runs."""
    problems: list[str] = []
    run: set[str] = set()
    for inv in invocations:
        for name in inv.suites:
            suite = catalog.get(name)
            if suite is None:
                renamed = catalog.renamed(name)
                hint = f" (renamed to {renamed.name!r})" if renamed else ""
                problems.append(f"{inv.where}: suite {name!r} is not in the catalog{hint}")
                continue
            if inv.planning:
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
            problems.append(
                f"suite {suite.name!r} (hw={suite.hw}) is in the catalog but no workflow runs "
                f"it, so its files never run: add a job running `python run_suite.py --hw "
                f"{suite.hw} --suite {suite.name}{' --nightly' if suite.nightly else ''}`, or "
                "remove the suite from [tool.ci-runner]"
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
        invocations: list[Invocation] = []
        problems: list[str] = []
        for path in sorted([*directory.glob("*.yml"), *directory.glob("*.yaml")]):
            found, issues = scan_workflow(path.resolve(), root)
            invocations += found
            problems += issues
    except (CatalogError, DispatchInputError) as exc:
        return usage_error(exc)
    if args.verbose:
        for inv in invocations:
            kind = "plans" if inv.planning else "runs"
            print(f"{inv.where}: {kind} {', '.join(inv.suites) or '-'} (--hw {inv.hw})")
    problems += check(catalog, invocations)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        return 1
    ran = {s for inv in invocations if not inv.planning for s in inv.suites}
    print(f"all {len(catalog.suites)} catalog suite(s) are run by a workflow ({len(ran)} found)")
    return 0
