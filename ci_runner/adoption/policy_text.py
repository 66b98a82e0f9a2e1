"""``init``'s choice of ``[tool.ci-runner.policy]``: the policy that reproduces the tree's runner.

A tree whose own runner reads the registrations (a ``run_suite.py`` beside the registered
directory that uses ``ci_register`` / ``collect_tests``, as SGLang's ``test/run_suite.py`` does,
selecting ``t.backend == hw and t.effective_suite == suite and t.nightly == nightly``) gets the
compatible policy; init's report names the facts that need it (one suite with both cadences,
one suite name on two backends). Then:

* the suite names are read from the runner on every run (``suites-from``, see
  :mod:`ci_runner.catalog.runner_rules`), never copied: the catalog keeps a suite entry only
  for its settings (runner, job budget from the workflows);
* every suite is drafted per backend (``suite-names = "per-backend"``);
* the runner's backends (its ``--hw`` mapping) get markers;
* files that match the patterns but register nothing are ones the runner does not collect (its
  own sanity check would fail otherwise), so they go into ``exclude-files``.

Any other tree keeps this project's strict policy (no table is written).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from ci_runner.adoption.runner_globs import collected_dirs
from ci_runner.adoption.tables import DraftedTable
from ci_runner.catalog.extra_dirs import ExtraDir
from ci_runner.catalog.policy import COMPATIBLE, STRICT, Policy
from ci_runner.catalog.runner_rules import RunnerRules, RunnerRulesError, read_runner_rules
from ci_runner.catalog.suites import guess_gpus_per_file
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
        self.rules: RunnerRules | None = None
        if self.registry_based:
            try:
                self.rules = read_runner_rules(root, self.relative)
            except RunnerRulesError:
                self.rules = None

    @property
    def registry_based(self) -> bool:
        return bool(self.text and _REGISTRY.search(self.text))

    @property
    def backends(self) -> tuple[str, ...]:
        return self.rules.backends if self.rules is not None else ()

    def extra_dirs(self, root: Path, registered_dir: str) -> tuple[list[ExtraDir], list[str]]:
        """The directories besides ``registered_dir`` that a registry-based runner globs (for
        ``extra-dirs``), and a note for each such glob whose directory is not in the tree."""
        if not self.registry_based:
            return [], []
        by_dir: dict[str, list[str]] = {}
        for directory, pattern in collected_dirs(self.text, self.relative):
            if directory != registered_dir:
                by_dir.setdefault(directory, []).append(pattern)
        found = [ExtraDir(d, tuple(p)) for d, p in by_dir.items() if (root / d).is_dir()]
        missing = [
            f"{self.relative} globs {d}/**/{'|'.join(p)}, not a directory here: not collected"
            for d, p in by_dir.items()
            if not (root / d).is_dir()
        ]
        return found, missing

    @property
    def filters_per_registration(self) -> bool:
        return bool(self.text and _PER_REGISTRATION_FILTER.search(self.text))


def _read(path: Path) -> str:
    try:
        return read_regular_text(path)
    except (OSError, UnicodeDecodeError):
        return ""


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
    if facts.rules is None:
        return COMPATIBLE, reasons
    reasons.append(
        f"its suite tables name the suites (suites-from: read on every run, never copied); "
        f"it validates the names of {', '.join(sorted(facts.rules.checked)) or 'no backend'}"
        + ("; its registry requires a __main__ block" if facts.rules.main_block_required else "")
    )
    return replace(COMPATIBLE, suites_from=facts.relative), reasons


def adopt_policy(
    root: Path,
    draft: Draft,
    registrations: list[Registration],
    silent: list[str],
    facts: RunnerFacts | None = None,
) -> None:
    """Choose the draft's policy; under the compatible one, redraft its suites per backend, add
    the runner's table suites and backends, and exclude the files that register nothing."""
    from ci_runner.adoption.draft import DraftSuite

    facts = facts or RunnerFacts(root, draft.registered_dir)
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
    suites = []
    for (hw, name), regs in by_key.items():
        votes = Counter(r.nightly for r in regs)
        suites.append(
            DraftSuite(
                name=name,
                hw=hw,
                nightly=votes[True] > votes[False],
                gpus_per_file=guess_gpus_per_file(name, hw),
                registrations=len(regs),
                files=len({r.path for r in regs}),
            )
        )
    draft.suites = sorted(suites, key=lambda s: (s.hw, s.name))
    draft.conflicts = [c for c in draft.conflicts if not c.startswith("suite ")]
    if facts.rules is not None:
        draft.conflicts += _refused(facts.rules, registrations)
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


def _refused(rules: RunnerRules, registrations: list[Registration]) -> list[str]:
    """Registrations the runner refuses: a suite its tables lack on a backend it validates."""
    bad = [
        f"{r.path}:{r.line} ({r.backend} {r.suite!r})"
        for r in registrations
        if r.suite and not rules.accepts(r.backend, r.suite)
    ]
    if not bad:
        return []
    shown = ", ".join(bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
    return [
        f"{len(bad)} registration(s) name a suite that {rules.path}'s tables lack on a backend "
        f"it validates; it refuses the tree for them, and so does the runner: {shown}"
    ]


def policy_table(draft: Draft) -> DraftedTable | None:
    """The ``[tool.ci-runner.policy]`` table with why it was chosen (None for strict)."""
    if draft.policy == STRICT:
        return None
    return DraftedTable(
        "policy",
        dict(draft.policy.table()),
        comments=(
            "The policy that reproduces this tree's own runner:",
            *(f"  - {reason}" for reason in draft.policy_reasons),
        ),
    )
