"""Validate registrations against the suite catalog: known, current, right backend and cadence."""

from __future__ import annotations

from ci_runner.catalog import CATALOG_FILE, Catalog, unknown_suite_message
from ci_runner.catalog.quarantine import KEY as QUARANTINE_KEY
from ci_runner.catalog.suites import suite_hint
from ci_runner.file_safety import read_regular_text
from ci_runner.model import Problem, Registration


def check_registration(reg: Registration, catalog: Catalog) -> Problem | None:
    """The catalog problem of one registration, or None when it is valid."""
    message = _message(reg, catalog)
    return Problem(reg.path, reg.line, reg.col, message) if message else None


def _message(reg: Registration, catalog: Catalog) -> str | None:
    if not reg.suite:
        return None  # a disabled placeholder (suite=""): it belongs to no suite
    marker_for = catalog.syntax.marker_for
    marker = marker_for(reg.backend)
    name = f"{reg.suite!r}{reg.suite_origin}"
    policy = catalog.policy
    if catalog.rules is not None:
        return _runner_rule_message(reg, catalog, name)
    suite = catalog.get(reg.suite, reg.backend)
    if suite is not None and suite.hw != reg.backend and policy.names_per_backend:
        return (
            f"{unknown_suite_message(reg.suite, reg.backend, catalog, reg.suite_origin)} "
            f"({reg.suite!r} is a {suite.hw} suite; suite names are per backend)"
        )
    if suite is None:
        renamed = catalog.renamed(reg.suite, reg.backend)
        if renamed is not None and (renamed.hw == reg.backend or not policy.names_per_backend):
            return f"suite {name} was renamed to {renamed.name!r}; update the registration"
        return unknown_suite_message(reg.suite, reg.backend, catalog, reg.suite_origin)
    if suite.hw != reg.backend:
        return (
            f"suite {name} is a {suite.hw} suite, but {marker}() registers for "
            f"{reg.backend}; use {marker_for(suite.hw)}()"
        )
    # nightly = "registration": the registration's own flag decides whether --nightly selects it
    cadence_checked = not policy.nightly_per_registration
    if cadence_checked and suite.nightly and not reg.nightly:
        return f"suite {name} is a nightly suite: add nightly=True to {marker}()"
    if cadence_checked and reg.nightly and not suite.nightly:
        return (
            f"suite {name} is a per-commit suite: remove nightly=True "
            "(or register for a nightly suite)"
        )
    if reg.min_gpus is not None and suite.gpus_per_file == 0:
        return (
            f"min_gpus={reg.min_gpus} cannot be honoured: suite {name} runs its files without "
            "GPUs (gpus-per-file = 0 in the catalog)"
        )
    return None


def _runner_rule_message(reg: Registration, catalog: Catalog, name: str) -> str | None:
    """Under ``suites-from``: a backend the runner validates accepts the names of its tables; any
    other accepts any name (as that runner does)."""
    rules = catalog.rules
    assert rules is not None
    if not rules.accepts(reg.backend, reg.suite):
        return (
            f"unknown {reg.backend} suite {name}: {rules.path} validates {reg.backend} suite "
            f"names and its tables list no such suite; {suite_hint(reg.suite, reg.backend, catalog)}"
        )
    suite = catalog.suite_for(reg.suite, reg.backend)
    if suite is not None and reg.min_gpus is not None and suite.gpus_per_file == 0:
        return (
            f"min_gpus={reg.min_gpus} cannot be honoured: suite {name} runs its files without "
            "GPUs (gpus-per-file = 0 in the catalog)"
        )
    return None


def quarantine_problems(catalog: Catalog, files: list[str]) -> list[Problem]:
    """A quarantine key whose file is not collected: a stale entry would quarantine nothing,
    silently. The problem names the catalog file and the key's line in it."""
    collected = set(files)
    stale = [e for e in catalog.quarantine if e.target.path not in collected]
    if not stale:
        return []
    path = catalog.location.path if catalog.location else catalog.root / CATALOG_FILE
    try:
        lines = read_regular_text(path).splitlines()
        shown = path.resolve().relative_to(catalog.root.resolve()).as_posix()
    except (OSError, UnicodeDecodeError, ValueError):
        lines, shown = [], path.name
    table = (
        catalog.location.header(QUARANTINE_KEY)
        if catalog.location
        else "[tool.ci-runner.quarantine]"
    )
    problems = []
    for entry in stale:
        key = str(entry.target)
        line = next((n for n, text in enumerate(lines, 1) if key in text), 1)
        problems.append(
            Problem(
                shown,
                line,
                1,
                f"{table} {key!r}: {entry.target.path} is not a collected registered file; fix "
                "the path or remove the entry",
            )
        )
    return problems
