"""``init``'s choice of ``[tool.ci-runner.policy]``: the policy that reproduces the tree's runner.

A tree whose own runner reads the registrations (a ``run_suite.py`` beside the registered
directory that uses ``ci_register`` / ``collect_tests``, as SGLang's ``test/run_suite.py`` does,
selecting ``t.backend == hw and t.effective_suite == suite and t.nightly == nightly``) gets the
compatible policy; init's report names the facts that need it (one suite with both cadences,
one suite name on two backends). Then:

* every suite is drafted per backend (``suite-names = "per-backend"``);
* the suites the runner's own tables name (module-level dicts of backend -> suite names) join the
  catalog even when no file registers them yet, so their jobs get the same empty-selection notice;
* the runner's backends (its ``--hw`` mapping) get markers;
* files that match the patterns but register nothing are ones the runner does not collect (its
  own sanity check would fail otherwise), so they go into ``exclude-files``.

Any other tree keeps this project's strict policy (no table is written).
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter, defaultdict
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from ci_runner.catalog.policy import COMPATIBLE, STRICT, Policy
from ci_runner.file_safety import read_regular_text
from ci_runner.model import Registration

if TYPE_CHECKING:
    from ci_runner.adoption.draft import Draft

RUNNER_NAME = "run_suite.py"
_PER_REGISTRATION_FILTER = re.compile(r"\.nightly\s*==\s*nightly\b")
_REGISTRY = re.compile(r"\bci_register\b|\bcollect_tests\b")


class RunnerFacts:
    """What the tree's own runner file (``<registered-dir>/../run_suite.py``) says, if any."""

    def __init__(self, root: Path, registered_dir: str) -> None:
        parent = PurePosixPath(registered_dir).parent
        self.path = (root / parent / RUNNER_NAME) if str(parent) != "." else root / RUNNER_NAME
        self.relative = (parent / RUNNER_NAME).as_posix()
        self.text = _read(self.path)
        self.tables: dict[str, dict[str, list[str]]] = {}
        self.backends: list[str] = []
        if self.text:
            self._read_tables()

    @property
    def registry_based(self) -> bool:
        return bool(self.text and _REGISTRY.search(self.text))

    @property
    def filters_per_registration(self) -> bool:
        return bool(self.text and _PER_REGISTRATION_FILTER.search(self.text))

    def _read_tables(self) -> None:
        try:
            tree = ast.parse(self.text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return
        for stmt in tree.body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
                continue
            target, value = stmt.targets[0], stmt.value
            if not (isinstance(target, ast.Name) and isinstance(value, ast.Dict)):
                continue
            backends = _hw_mapping(value)
            if backends:
                self.backends = backends
            table = _suite_table(value)
            if table:
                self.tables[target.id] = table


def _read(path: Path) -> str:
    try:
        return read_regular_text(path)
    except (OSError, UnicodeDecodeError):
        return ""


def _hw_mapping(value: ast.Dict) -> list[str]:
    """``{"cpu": HWBackend.CPU, ...}`` -> ``["cpu", ...]`` (the runner's ``--hw`` names)."""
    names = []
    for key, item in zip(value.keys, value.values, strict=True):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return []
        if not (isinstance(item, ast.Attribute) and item.attr.lower() == key.value):
            return []
        names.append(key.value)
    return names


def _suite_table(value: ast.Dict) -> dict[str, list[str]]:
    """``{HWBackend.CUDA: ["a", "b"], ...}`` -> ``{"cuda": ["a", "b"]}``; else empty."""
    table: dict[str, list[str]] = {}
    for key, item in zip(value.keys, value.values, strict=True):
        if not (isinstance(key, ast.Attribute) and isinstance(item, ast.List)):
            return {}
        names = [e.value for e in item.elts if isinstance(e, ast.Constant)]
        if not all(isinstance(n, str) for n in names) or len(names) != len(item.elts):
            return {}
        table[key.attr.lower()] = names
    return table


def choose_policy(
    facts: RunnerFacts, registrations: list[Registration]
) -> tuple[Policy, list[str]]:
    """The compatible policy for a tree whose own runner reads the registrations (with the
    facts that show it), else :data:`STRICT`; and why, one reason per line."""
    if not facts.registry_based:
        return STRICT, []
    reasons = [f"{facts.relative} collects registrations with ci_register / collect_tests"]
    if facts.filters_per_registration:
        reasons.append(
            "it selects each registration by its own nightly flag (t.nightly == nightly)"
        )
    cadences: dict[tuple[str, str], set[bool]] = defaultdict(set)
    backends: dict[str, set[str]] = defaultdict(set)
    for reg in registrations:
        if reg.suite:
            cadences[reg.backend, reg.suite].add(reg.nightly)
            backends[reg.suite].add(reg.backend)
    mixed = sorted(f"{hw}:{name}" for (hw, name), seen in cadences.items() if len(seen) > 1)
    shared = sorted(name for name, seen in backends.items() if len(seen) > 1)
    if mixed:
        reasons.append(f"{len(mixed)} suite(s) hold both cadences (first: {mixed[0]})")
    if shared:
        reasons.append(
            f"{len(shared)} suite name(s) are registered on several backends (first: {shared[0]})"
        )
    return COMPATIBLE, reasons


def adopt_policy(
    root: Path, draft: Draft, registrations: list[Registration], silent: list[str]
) -> None:
    """Choose the draft's policy; under the compatible one, redraft its suites per backend, add
    the runner's table suites and backends, and exclude the files that register nothing."""
    from ci_runner.adoption.draft import DraftSuite, _guess_gpus

    facts = RunnerFacts(root, draft.registered_dir)
    draft.policy, draft.policy_reasons = choose_policy(facts, registrations)
    if draft.policy == STRICT:
        return
    draft.notes.append(
        "[tool.ci-runner.policy] reproduces the tree's own runner (nightly per registration, "
        "suite names per backend, empty selection a notice, strict checks as warnings): "
        + "; ".join(draft.policy_reasons)
    )
    by_key: dict[tuple[str, str], list[Registration]] = defaultdict(list)
    for reg in registrations:
        if reg.suite:
            by_key[reg.backend, reg.suite].append(reg)
    for table in facts.tables.values():
        for hw, names in table.items():
            for name in names:
                by_key.setdefault((hw, name), [])
    suites = []
    for (hw, name), regs in by_key.items():
        votes = Counter(r.nightly for r in regs)
        suites.append(
            DraftSuite(
                name=name,
                hw=hw,
                nightly=votes[True] > votes[False],
                gpus_per_file=_guess_gpus(name, hw),
                registrations=len(regs),
                files=len({r.path for r in regs}),
            )
        )
    draft.suites = sorted(suites, key=lambda s: (s.hw, s.name))
    draft.conflicts = [c for c in draft.conflicts if not c.startswith("suite ")]
    markers = dict(draft.syntax.markers)
    for hw in {*facts.backends, *(s.hw for s in draft.suites)}:
        if hw not in markers.values():
            markers[f"register_{hw}_ci"] = hw
    draft.syntax = type(draft.syntax)(
        markers, draft.syntax.suite_template, draft.syntax.ignored_arguments
    )
    prefix = f"{draft.registered_dir}/"
    draft.excluded = [path.removeprefix(prefix) for path in silent]
    if silent:
        draft.notes.append(
            f"exclude-files: {len(silent)} file(s) register nothing: {silent[0]} ..."
        )
    if silent:
        draft.conflicts = [c for c in draft.conflicts if "register nothing" not in c]


def exclude_lines(draft: Draft) -> list[str]:
    """The top-level ``exclude-files`` key, when the draft excludes files."""
    if not draft.excluded:
        return []
    return [
        "# exclude-files: they register nothing, so the tree's own runner does not collect them",
        f"exclude-files = {json.dumps(draft.excluded)}",
    ]


def policy_lines(draft: Draft) -> list[str]:
    """The ``[tool.ci-runner.policy]`` table with why it was chosen (nothing for strict)."""
    if draft.policy == STRICT:
        return []
    lines = ["", "# The policy that reproduces this tree's own runner:"]
    lines += [f"#   - {reason}" for reason in draft.policy_reasons]
    lines.append("[tool.ci-runner.policy]")
    lines += [f"{key} = {json.dumps(value)}" for key, value in draft.policy.table().items()]
    return lines
