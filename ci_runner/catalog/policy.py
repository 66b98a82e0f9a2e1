"""Selection semantics of one repository: ``[tool.ci-runner.policy]`` in its catalog.

The defaults are this project's strict model; a repository adopting the runner writes the values
that reproduce its current runner (``run_suite.py init`` does, e.g. for SGLang's
``test/run_suite.py``):

* ``nightly``: ``"suite"`` (a suite is nightly or per-commit, every registration must agree) or
  ``"registration"`` (a registration is selected when its ``nightly`` flag equals ``--nightly``;
  one suite may hold both cadences);
* ``suite-names``: ``"global"`` (a name is one suite of one backend) or ``"per-backend"`` (each
  backend has its own suites; the same name may be listed under several ``hw``);
* ``empty-selection``: ``"error"`` (exit 2) or ``"notice"`` (exit 0 with a notice naming the
  backend, suites and cadence, in the console and the step summary);
* ``strict-checks``: ``"error"`` or ``"warning"``: the checks of registrations and ``__main__``
  blocks that go beyond selection (see :data:`STRICT_CHECKS`) stop the run, or are printed;
* ``suites-from``: the repository's own runner file (``"test/run_suite.py"``); its suite tables
  are the suite names, read on every run, and its rules decide which names a backend accepts and
  whether a ``__main__`` block is required (:mod:`ci_runner.catalog.runner_rules`).

Unknown suite names are errors under every policy without ``suites-from``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from ci_runner.catalog.keys import unknown_keys_message

NIGHTLY_SUITE, NIGHTLY_REGISTRATION = "suite", "registration"
NAMES_GLOBAL, NAMES_PER_BACKEND = "global", "per-backend"
EMPTY_ERROR, EMPTY_NOTICE = "error", "notice"
CHECKS_ERROR, CHECKS_WARNING = "error", "warning"

# The checks ``strict-checks`` governs: none changes which files a job selects.
STRICT_CHECKS = (
    'an enabled file without an `if __name__ == "__main__":` block that calls something',
    "a dropped exit code of pytest.main / unittest.main(exit=False)",
    "a marker call or reference that is not a module-level registration",
    "a module-level call of a register_<x>_ci the catalog does not declare",
    "a file registered twice for one suite (the first registration is kept)",
)

_CHOICES: dict[str, tuple[str, ...]] = {
    "nightly": (NIGHTLY_SUITE, NIGHTLY_REGISTRATION),
    "suite-names": (NAMES_GLOBAL, NAMES_PER_BACKEND),
    "empty-selection": (EMPTY_ERROR, EMPTY_NOTICE),
    "strict-checks": (CHECKS_ERROR, CHECKS_WARNING),
}


SUITES_FROM = "suites-from"


class PolicyError(ValueError):
    """A key or value of ``[tool.ci-runner.policy]`` is wrong; the message names both."""


@dataclass(frozen=True)
class Policy:
    """How registrations are selected and how strictly they are checked."""

    nightly: str = NIGHTLY_SUITE
    suite_names: str = NAMES_GLOBAL
    empty_selection: str = EMPTY_ERROR
    strict_checks: str = CHECKS_ERROR
    suites_from: str | None = None  # the runner file whose suite tables name the suites

    @property
    def nightly_per_registration(self) -> bool:
        return self.nightly == NIGHTLY_REGISTRATION

    @property
    def names_per_backend(self) -> bool:
        return self.suite_names == NAMES_PER_BACKEND

    @property
    def empty_is_notice(self) -> bool:
        return self.empty_selection == EMPTY_NOTICE

    @property
    def strict_checks_warn(self) -> bool:
        return self.strict_checks == CHECKS_WARNING

    def table(self) -> dict[str, str]:
        """The ``[tool.ci-runner.policy]`` keys and values of this policy."""
        table = {
            "nightly": self.nightly,
            "suite-names": self.suite_names,
            "empty-selection": self.empty_selection,
            "strict-checks": self.strict_checks,
        }
        if self.suites_from is not None:
            table[SUITES_FROM] = self.suites_from
        return table


STRICT = Policy()  # this project's own model, and the default of every key
COMPATIBLE = Policy(NIGHTLY_REGISTRATION, NAMES_PER_BACKEND, EMPTY_NOTICE, CHECKS_WARNING)


def parse_policy(table: Mapping[str, object], where: str) -> Policy:
    """The ``policy`` sub-table of a ``[tool.ci-runner]`` table (absent: :data:`STRICT`)."""
    raw = table.get("policy", {})
    where = f"{where} policy"
    if not isinstance(raw, dict):
        raise PolicyError(
            f'{where}: must be a table, e.g. [tool.ci-runner.policy] nightly = "suite", got {raw!r}'
        )
    if message := unknown_keys_message(raw, [*_CHOICES, SUITES_FROM], where):
        raise PolicyError(message)
    values: dict[str, str | None] = {"suites_from": _suites_from(raw.get(SUITES_FROM), where)}
    for key, choices in _CHOICES.items():
        value = raw.get(key, choices[0])
        if value not in choices:
            raise PolicyError(
                f"{where}: {key} must be {' or '.join(repr(c) for c in choices)} (default "
                f"{choices[0]!r}), got {value!r}"
            )
        values[key.replace("-", "_")] = str(value)
    return Policy(**values)


def _suites_from(value: object, where: str) -> str | None:
    """A relative POSIX path inside the repository (the runner file), or None."""
    if value is None:
        return None
    path = PurePosixPath(value) if isinstance(value, str) else None
    if path is None or not value.strip() or path.is_absolute() or ".." in path.parts:
        raise PolicyError(
            f"{where}: {SUITES_FROM} must be the path of the repository's runner file relative "
            f'to the root (e.g. "test/run_suite.py"), got {value!r}'
        )
    return path.as_posix()
