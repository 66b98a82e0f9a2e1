"""Second pass of ``init``: the catalog a surveyed tree needs, and what the user must decide.

* syntax: every ``register_<x>_ci`` the tree calls (new ones become ``extra-markers``); SGLang's
  ``suite-template`` when registrations use ``stage=``/``runner_config=`` (or the template the
  user passes); other unknown keywords become ``ignored-arguments``; ``file-patterns = ["*.py"]``
  when registered files do not all match ``test_*.py``/``bench_*.py``;
* suites: every suite name seen, with the backend of its registrations and ``nightly`` from
  their majority; ``gpus-per-file`` guessed from an ``<N>-gpu`` part of the name;
* conflicts: a suite registered for several backends, split nightly votes, accepted-but-ignored
  arguments, files that register nothing; and the registrations no catalog can fix.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path

from ci_runner.adoption.execution_table import execution_table, pytest_launcher_table
from ci_runner.adoption.impact_draft import ImpactDraft, draft_change_impact
from ci_runner.adoption.partition_script import partitions_table
from ci_runner.adoption.policy_text import RunnerFacts, adopt_policy, policy_table
from ci_runner.adoption.survey import Survey, survey_tree
from ci_runner.adoption.tables import DraftedTable
from ci_runner.adoption.workflow_suites import (
    SuiteValues,
    WorkflowFacts,
    read_workflows,
    suite_values,
)
from ci_runner.catalog import DEFAULT_FILE_PATTERNS
from ci_runner.catalog.extra_dirs import ExtraDir
from ci_runner.catalog.policy import STRICT, Policy
from ci_runner.catalog.suites import guess_gpus_per_file
from ci_runner.catalog.syntax import (
    BUILTIN_KEYWORDS,
    RegistrationSyntax,
    SuiteTemplate,
    parse_template,
)
from ci_runner.collect import is_registered_file
from ci_runner.collect.calls import backend_of_marker_name
from ci_runner.collect.entry_point import runs_no_test
from ci_runner.collect.file_scan import FileScan, scan_parsed
from ci_runner.collect.parse_cache import ParseCache, cache_directory
from ci_runner.markers import MARKER_BACKENDS
from ci_runner.model import Problem, Registration

SGLANG_TEMPLATE = "{stage}-test-{runner_config}"
SHOWN_PER_CONFLICT = 5


@dataclass(frozen=True)
class DraftSuite:
    """One suite of the drafted catalog."""

    name: str
    hw: str
    nightly: bool
    gpus_per_file: int | str
    registrations: int
    files: int
    workflow: SuiteValues | None = None  # runner, budget, ... from the workflows that run it


@dataclass
class Draft:
    """The drafted catalog plus everything the user should look at."""

    registered_dir: str
    syntax: RegistrationSyntax
    file_patterns: tuple[str, ...]
    suites: list[DraftSuite] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # no catalog fixes these
    files: int = 0
    registration_count: int = 0
    policy: Policy = STRICT  # chosen by ci_runner.adoption.policy_text
    policy_reasons: list[str] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)  # exclude-files, relative to the dir
    tables: list[DraftedTable] = field(default_factory=list)  # [tool.ci-runner.<name>] tables
    extra_dirs: list[ExtraDir] = field(default_factory=list)  # extra-dirs the runner globs
    change_impact: ImpactDraft | None = None  # [tool.ci-runner.change-impact]

    @property
    def written_suites(self) -> list[DraftSuite]:
        """The suite entries to write: every suite, or under ``suites-from`` (the names come from
        the runner) only those with settings from the workflows."""
        if self.policy.suites_from is None:
            return self.suites
        return [s for s in self.suites if s.workflow is not None and s.workflow.has_settings]

    @property
    def scope(self) -> str:
        """Where the files were read: ``test/registered/`` (and the extra-dirs)."""
        extra = [f"{d.path}/" for d in self.extra_dirs]
        return ", ".join([f"{self.registered_dir}/", *extra])


def draft_catalog(root: Path, registered_dir: str, template_text: str | None = None) -> Draft:
    """Survey the tree under ``root/registered_dir`` and draft its catalog."""
    facts = RunnerFacts(root, registered_dir)
    extra_dirs, notes = facts.extra_dirs(root, registered_dir)
    survey = survey_tree(root, registered_dir, extra_dirs=extra_dirs)
    syntax = _syntax(survey, template_text, notes)
    patterns = ("*.py",) if survey.outside_default_patterns else DEFAULT_FILE_PATTERNS
    if survey.outside_default_patterns:
        notes.append(
            f'file-patterns = ["*.py"]: {len(survey.outside_default_patterns)} file(s) register '
            f"without a test_/bench_ name (first: {survey.outside_default_patterns[0]})"
        )
    files = [
        f
        for f in survey.files
        if any(d.holds(f) for d in extra_dirs) or is_registered_file(f.rsplit("/", 1)[-1], patterns)
    ]
    scans, problems, silent = _scan(survey, files, syntax)
    registrations = [reg for scan in scans.values() for reg in scan.registrations]
    problems += [problem for scan in scans.values() for problem in scan.problems]
    problems.sort(key=lambda p: (p.path, p.line, p.col))
    draft = Draft(registered_dir, syntax, patterns, files=len(files), notes=notes)
    draft.extra_dirs = extra_dirs
    for extra in extra_dirs:
        count = sum(extra.holds(f) for f in files)
        notes.append(
            f"extra-dirs: {facts.relative} also collects {extra.path}/**/"
            f"{'|'.join(extra.files)} ({count} file(s))"
        )
    silent_extra = [f for f in silent if any(d.holds(f) for d in extra_dirs)]
    silent = [f for f in silent if f not in silent_extra]
    draft.registration_count = len(registrations)
    draft.problems = [*survey.problems, *problems]
    draft.suites, draft.conflicts = _suites(registrations)
    adopt_policy(root, draft, registrations, silent, facts)
    execution = execution_table(root, registered_dir)
    if execution is not None:
        notes.append("[tool.ci-runner.execution]: reproduces the run_suite.py beside the tree")
    launcher = _propose_launcher(draft, survey, scans, sglang_runner=execution is not None)
    execution = execution or launcher
    extra = {n: hw for n, hw in draft.syntax.markers.items() if n not in MARKER_BACKENDS}
    markers = DraftedTable("extra-markers", dict(sorted(extra.items()))) if extra else None
    partitions, note = partitions_table(root, {})
    if note:
        notes.append(note)
    draft.change_impact = draft_change_impact(root, registered_dir)
    tables = (markers, policy_table(draft), execution, partitions, draft.change_impact.table())
    draft.tables = [t for t in tables if t is not None]
    _add_workflow_values(draft, read_workflows(root))
    _fill_cache(root, survey, draft.syntax, scans)
    if syntax.ignored_arguments:
        draft.conflicts.append(
            f"ignored-arguments = {list(syntax.ignored_arguments)}: registrations pass these "
            "keywords; the runner accepts them as literals and ignores them (it runs every file "
            "in its own process). Drop an entry to make that keyword an error instead"
        )
    if silent_extra:
        draft.conflicts.append(
            f"{len(silent_extra)} file(s) in extra-dirs register nothing; the runner reports "
            f"each until it registers or is renamed: {_shown(silent_extra)}"
        )
    if silent and not draft.excluded:
        draft.conflicts.append(
            f"{len(silent)} file(s) match the file patterns but register nothing; the runner "
            f"reports each until it registers or is renamed: {_shown(silent)}"
        )
    return draft


def _propose_launcher(
    draft: Draft, survey: Survey, scans: dict[str, FileScan], sglang_runner: bool
) -> DraftedTable | None:
    """``launcher = "pytest"`` when no enabled file runs its tests under ``python <file>`` (and
    the tree's own runner is not SGLang's, whose ``python3 <file> -f`` the table reproduces);
    when only some files lack the block, the user decides."""
    enabled = sorted(
        path
        for path, scan in scans.items()
        if any(reg.disabled is None for reg in scan.registrations)
    )
    silent = [
        path
        for path in enabled
        if survey.read[path].module is not None and runs_no_test(survey.read[path].module)
    ]
    if not silent:
        return None
    if len(silent) == len(enabled) and not sglang_runner:
        draft.notes.append(
            f'[tool.ci-runner.execution] launcher = "pytest": none of the {len(enabled)} '
            'registered file(s) has an `if __name__ == "__main__":` block that runs its tests, '
            "so each runs as python -m pytest <file>"
        )
        return pytest_launcher_table(len(enabled))
    draft.conflicts.append(
        f'{len(silent)} of {len(enabled)} registered file(s) have no `if __name__ == "__main__":` '
        "block that runs their tests, so `python <file>` runs no test (the runner reports each as "
        'no_tests): add the block, or give their suites launcher = "pytest": '
        f"{_shown(silent)}"
    )
    return None


def _add_workflow_values(draft: Draft, facts: WorkflowFacts) -> None:
    """Runner, job budget and partition sizes from the workflows; suites only they run."""
    index_of = {(suite.hw, suite.name): i for i, suite in enumerate(draft.suites)}
    hw_of = {suite.name: suite.hw for suite in draft.suites}
    for (hw, name), calls in sorted(facts.runs.items()):
        values = suite_values(hw, name, calls)
        draft.conflicts.extend(values.conflicts)
        index = index_of.get((hw, name))
        if index is None and name in hw_of and not draft.policy.names_per_backend:
            draft.conflicts.append(
                f"suite {name!r} is registered for {hw_of[name]} but "
                f"{_shown(list(values.where))} run it with --hw {hw}; no workflow values written"
            )
            continue
        if index is None:
            draft.notes.append(
                f"suite {name!r} ({hw}) is run by {_shown(list(values.where))} but no file "
                "registers it yet: added with no files"
            )
            index = index_of[hw, name] = len(draft.suites)
            draft.suites.append(
                DraftSuite(name, hw, values.nightly, guess_gpus_per_file(name, hw), 0, 0)
            )
        draft.suites[index] = replace(draft.suites[index], workflow=values)
    draft.suites.sort(key=lambda s: (s.hw, s.name))
    draft.notes.extend(facts.notes)


def _syntax(survey: Survey, template_text: str | None, notes: list[str]) -> RegistrationSyntax:
    markers = dict(MARKER_BACKENDS)
    for name in sorted(survey.markers):
        if name not in markers:
            markers[name] = backend_of_marker_name(name).lower()
            notes.append(f"extra marker {name} for backend {markers[name]!r}")
    template: SuiteTemplate | None = None
    if template_text is None and {"stage", "runner_config"} & set(survey.keywords):
        template_text = SGLANG_TEMPLATE
        notes.append(
            f"suite-template = {SGLANG_TEMPLATE!r}: registrations use stage=/runner_config="
        )
    if template_text:
        template = parse_template(template_text, ("est_time", "suite", "nightly", "disabled"))
    fields = set(template.fields) if template else set()
    ignored = tuple(
        sorted(k for k in survey.keywords if k not in fields and k not in BUILTIN_KEYWORDS)
    )
    return RegistrationSyntax(markers, template, ignored)


def _scan(
    survey: Survey, files: list[str], syntax: RegistrationSyntax
) -> tuple[dict[str, FileScan], list[Problem], list[str]]:
    """Each file's scan under the drafted syntax, from the survey's parse (no second parse);
    the problems of files that do not parse; the files that register nothing."""
    scans: dict[str, FileScan] = {}
    problems: list[Problem] = []
    silent: list[str] = []
    for rel_path in files:
        read = survey.read[rel_path]
        if read.problem is not None:
            problems.append(read.problem)
            continue
        scan = FileScan((), ())
        if read.module is not None:
            scan = scan_parsed(read.module, rel_path, None, syntax)
        scans[rel_path] = scan
        if not scan.registrations and not scan.problems:
            silent.append(rel_path)
    return scans, problems, silent


def _fill_cache(root: Path, survey: Survey, syntax: RegistrationSyntax, scans) -> None:
    """Store the scans under the catalog's final syntax, so the first run after ``init`` is
    warm. The policy may add markers for backends the tree never calls: the scans stay valid."""
    cache = ParseCache(cache_directory(), root, syntax)
    for rel_path, scan in scans.items():
        cache.put(rel_path, survey.read[rel_path].content_digest, scan)
    cache.save()


def _suites(registrations: list[Registration]) -> tuple[list[DraftSuite], list[str]]:
    by_name: dict[str, list[Registration]] = defaultdict(list)
    for reg in registrations:
        if reg.suite:  # suite="" placeholders belong to no suite
            by_name[reg.suite].append(reg)
    suites: list[DraftSuite] = []
    conflicts: list[str] = []
    for name, regs in by_name.items():
        backends = Counter(r.backend for r in regs)
        hw = min(backends, key=lambda b: (-backends[b], b))
        if len(backends) > 1:
            others = [r for r in regs if r.backend != hw]
            conflicts.append(
                f"suite {name!r} is registered for {_votes(backends)}; wrote hw = {hw!r}, a suite "
                f"has one backend: rename the suite in these registrations: {_where(others)}"
            )
        mine = [r for r in regs if r.backend == hw]
        votes = Counter(r.nightly for r in mine)
        nightly = votes[True] > votes[False]
        if len(votes) > 1:
            minority = [r for r in mine if r.nightly != nightly]
            conflicts.append(
                f"suite {name!r}: {votes[True]} registration(s) say nightly=True, "
                f"{votes[False]} say False; wrote nightly = {str(nightly).lower()} "
                f"({'a tie' if votes[True] == votes[False] else 'the majority'}); until they "
                f"agree the runner reports: {_where(minority)}"
            )
        suites.append(
            DraftSuite(
                name=name,
                hw=hw,
                nightly=nightly,
                gpus_per_file=guess_gpus_per_file(name, hw),
                registrations=len(mine),
                files=len({r.path for r in mine}),
            )
        )
    suites.sort(key=lambda s: (s.hw, s.name))
    return suites, conflicts


def _votes(counter: Counter[str]) -> str:
    return ", ".join(f"{key} ({count})" for key, count in counter.most_common())


def _where(regs: list[Registration]) -> str:
    return _shown([f"{r.path}:{r.line}" for r in regs])


def _shown(items: list[str]) -> str:
    head = ", ".join(items[:SHOWN_PER_CONFLICT])
    more = len(items) - SHOWN_PER_CONFLICT
    return head + (f" and {more} more" if more > 0 else "")
