"""Which suites an invocation asks for: ``--suite a,b`` checked against the catalog, ``--hw`` and
``--nightly``. Every unknown, renamed or mismatched name is an error, all reported at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from ci_runner.catalog import Catalog, Suite, unknown_suite_message
from ci_runner.catalog.suites import suite_hint


class SelectionError(Exception):
    """The requested selection is invalid or empty; one message per line."""

    def __init__(self, messages: list[str]) -> None:
        super().__init__("\n".join(messages))
        self.messages = messages


@dataclass(frozen=True)
class SuiteRequest:
    """What one invocation asks for, checked against the catalog: backend, suites, cadence."""

    hw: str
    suites: tuple[Suite, ...]  # in the order asked for
    nightly: bool
    placeholders: bool = False  # --suite '': the disabled suite="" placeholders, listed skipped
    warnings: tuple[str, ...] = ()  # suites-from: names the runner's tables do not list


PLACEHOLDER_SUITE = ""  # what ``suite=""`` placeholders register for


def request_from_text(catalog: Catalog, hw: str, text: str, nightly: bool) -> SuiteRequest:
    """The request for ``--suite TEXT``; with ``empty-selection = "notice"``, ``--suite ''``
    asks for the ``suite=""`` placeholders (as SGLang's runner lists them: skipped, exit 0)."""
    if text == PLACEHOLDER_SUITE and catalog.policy.empty_is_notice:
        return SuiteRequest(hw, (), nightly, placeholders=True)
    return request_suites(catalog, hw, parse_suite_list(text), nightly)


def request_suites(catalog: Catalog, hw: str, names: list[str], nightly: bool) -> SuiteRequest:
    """The request for ``names`` (see :func:`parse_suite_list`); raises :class:`SelectionError`."""
    if catalog.rules is not None:
        return _request_by_runner_rules(catalog, hw, names, nightly)
    return SuiteRequest(hw, tuple(resolve_suites(catalog, names, hw, nightly)), nightly)


def _request_by_runner_rules(
    catalog: Catalog, hw: str, names: list[str], nightly: bool
) -> SuiteRequest:
    """Under ``suites-from`` every name selects its registrations, as the runner does; a name
    its tables do not list is a warning (exit 0 when it selects nothing), never an error."""
    rules = catalog.rules
    assert rules is not None
    suites: list[Suite] = []
    warnings: list[str] = []
    for name in names:
        renamed = catalog.renamed(name, hw)
        if catalog.get(name, hw) is None and renamed is not None and renamed.hw == hw:
            raise SelectionError([f"--suite: suite {name!r} was renamed to {renamed.name!r}"])
        suite = catalog.suite_for(name, hw)
        assert suite is not None  # suites-from: any name has a suite
        suites.append(suite)
        if not rules.knows(hw, name):
            warnings.append(
                f"warning: --suite {name!r}: {rules.path} lists no such {hw} suite "
                f"({suite_hint(name, hw, catalog)}); selecting its registrations, as that "
                "runner does"
            )
    return SuiteRequest(hw, tuple(suites), nightly, warnings=tuple(warnings))


def parse_suite_list(text: str) -> list[str]:
    """``"a, b,a"`` -> ``["a", "b"]``: comma separated, stripped, de-duplicated in order."""
    names: list[str] = []
    for part in text.split(","):
        name = part.strip()
        if name and name not in names:
            names.append(name)
    if not names:
        raise SelectionError([f"--suite {text!r} names no suite; pass one or more names, a,b"])
    return names


def resolve_suites(catalog: Catalog, names: list[str], hw: str, nightly: bool) -> list[Suite]:
    """The catalog suites for ``names``; every unknown, renamed or mismatched one is an error.

    Under the catalog's policy, ``suite-names = "per-backend"`` looks a name up among ``hw``'s
    suites only, and ``nightly = "registration"`` accepts any suite with or without ``--nightly``
    (the flag then selects registrations, not suites).
    """
    policy = catalog.policy
    errors: list[str] = []
    suites: list[Suite] = []
    for name in names:
        suite = catalog.get(name, hw)
        if suite is not None and suite.hw != hw and policy.names_per_backend:
            errors.append(
                f"--suite: {unknown_suite_message(name, hw, catalog)} ({name!r} is a "
                f"{suite.hw} suite; suite names are per backend)"
            )
        elif suite is None:
            renamed = catalog.renamed(name, hw)
            if renamed is not None and (renamed.hw == hw or not policy.names_per_backend):
                errors.append(f"--suite: suite {name!r} was renamed to {renamed.name!r}")
            else:
                errors.append(f"--suite: {unknown_suite_message(name, hw, catalog)}")
        elif suite.hw != hw:
            errors.append(
                f"--suite: suite {name!r} is a {suite.hw} suite; run it with --hw {suite.hw}"
            )
        elif policy.nightly_per_registration:
            suites.append(suite)
        elif suite.nightly and not nightly:
            errors.append(f"--suite: suite {name!r} is a nightly suite; add --nightly")
        elif nightly and not suite.nightly:
            errors.append(f"--suite: suite {name!r} is a per-commit suite; drop --nightly")
        else:
            suites.append(suite)
    if errors:
        raise SelectionError(errors)
    return suites
