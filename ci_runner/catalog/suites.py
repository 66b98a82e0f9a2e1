"""The suites of the catalog, read and validated from ``[tool.ci-runner]`` in ``pyproject.toml``
(or from ``ci-runner.toml``: :mod:`ci_runner.catalog.location`).

The catalog is data, so another repository adopts the runner by writing its own table; nothing
about a particular project's suites lives in code.
"""

from __future__ import annotations

import difflib
import functools
import re
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ci_runner.catalog.execution_settings import (
    DEFAULT_EXECUTION_SETTINGS,
    ExecutionSettings,
    ExecutionSettingsError,
    parse_execution_settings,
    parse_launcher,
)
from ci_runner.catalog.extra_dirs import KEY as EXTRA_DIRS_KEY
from ci_runner.catalog.extra_dirs import (
    ExtraDir,
    ExtraDirError,
    parse_extra_dirs,
    valid_name_globs,
)
from ci_runner.catalog.keys import unknown_keys_message
from ci_runner.catalog.limits import (
    MAX_GPUS,
    MAX_MINUTES,
    MAX_SECONDS,
    is_finite_number,
    number_text,
)
from ci_runner.catalog.location import (
    OWN_FILE,
    PYPROJECT,
    CatalogFileError,
    CatalogLocation,
    find_catalog,
)
from ci_runner.catalog.partitions import PartitionRule, PartitionRuleError, parse_partition_rule
from ci_runner.catalog.policy import STRICT, Policy, PolicyError, parse_policy
from ci_runner.catalog.quarantine import KEY as QUARANTINE_KEY
from ci_runner.catalog.quarantine import QuarantineEntry, QuarantineError, parse_quarantine
from ci_runner.catalog.runner_rules import RunnerRules, RunnerRulesError, read_runner_rules
from ci_runner.catalog.syntax import (
    DEFAULT_SYNTAX,
    RegistrationSyntax,
    SyntaxConfigError,
    parse_syntax,
)
from ci_runner.file_safety import read_regular_text, why
from ci_runner.model import MAIN_BLOCK

CATALOG_FILE = PYPROJECT
DEFAULT_TIMEOUT_PER_FILE = 1200.0
BACKENDS: tuple[str, ...] = DEFAULT_SYNTAX.backends  # the built-in ones; a catalog may add more
ALL_GPUS = "all"  # gpus-per-file = "all": each file gets every GPU of the runner
DEFAULT_FILE_PATTERNS: tuple[str, ...] = ("test_*.py", "bench_*.py")
NEVER_COLLECTED: tuple[str, ...] = ("__init__.py", "conftest.py")
PLAN_BEST = "best"  # this runner's planner: the best of LPT, local search, KK and exact
PLAN_UPSTREAM = "upstream"  # SGLang's auto_partition exactly, to compare logs in a migration
PLANS = (PLAN_BEST, PLAN_UPSTREAM)


class CatalogError(Exception):
    """The catalog is missing or malformed; the message names the file and the key."""


@dataclass(frozen=True)
class Suite:
    """One suite from the catalog."""

    name: str
    hw: str
    nightly: bool = False
    renamed_from: tuple[str, ...] = ()
    gpus_per_file: int | str = 1  # a count, or ALL_GPUS
    timeout_per_file: float | None = None
    runner: str | None = None
    job_timeout_minutes: float | None = None
    launcher: str | None = None  # overrides the execution table's launcher for this suite
    runner_key: str | None = None  # the key a computed runs-on looks its label up with


@dataclass(frozen=True)
class Catalog:
    """All suites of a repository, plus where its registered tests live."""

    root: Path
    registered_dir: str
    suites: tuple[Suite, ...] = field(default_factory=tuple)
    syntax: RegistrationSyntax = DEFAULT_SYNTAX
    file_patterns: tuple[str, ...] = DEFAULT_FILE_PATTERNS
    policy: Policy = STRICT
    exclude_files: tuple[str, ...] = ()  # globs over paths relative to registered-dir
    execution: ExecutionSettings = DEFAULT_EXECUTION_SETTINGS  # [tool.ci-runner.execution]
    extra_dirs: tuple[ExtraDir, ...] = ()  # more collected directories (extra-dirs)
    location: CatalogLocation | None = field(default=None, compare=False)  # None: not a file
    rules: RunnerRules | None = None  # policy suites-from: the runner's suite tables and checks
    plan: str = PLAN_BEST  # how shards are packed: PLAN_BEST or PLAN_UPSTREAM
    partitions: PartitionRule | None = None  # how workflows' shard matrices are sized
    table: Mapping[str, object] = field(default_factory=dict, compare=False, repr=False)
    quarantine: tuple[QuarantineEntry, ...] = ()  # [tool.ci-runner.quarantine]

    def where(self, table: str = "") -> str:
        """How messages name the catalog (or one of its tables)."""
        if self.location is None:
            return f"[tool.ci-runner{'.' + table if table else ''}]"
        return self.location.where(table)

    @functools.cached_property
    def _suites_by_name(self) -> dict[str, list[Suite]]:
        """Suites by name, in catalog order (a name may have one suite per backend)."""
        index: dict[str, list[Suite]] = {}
        for suite in self.suites:
            index.setdefault(suite.name, []).append(suite)
        return index

    def get(self, name: str, hw: str | None = None) -> Suite | None:
        """The suite called ``name`` (that of ``hw`` first, when given), or None."""
        named = self._suites_by_name.get(name, [])
        return next((s for s in named if s.hw == hw), named[0] if named else None)

    def suite_for(self, name: str, hw: str) -> Suite | None:
        """The suite ``name`` of ``hw``: its catalog entry, else under ``suites-from`` one with
        the default settings (any name: the runner's rules decide which names are valid)."""
        suite = self.get(name, hw)
        if suite is not None and (suite.hw == hw or self.rules is None):
            return suite
        if self.rules is None:
            return None
        return Suite(name=name, hw=hw, gpus_per_file=guess_gpus_per_file(name, hw))

    def enforced_rules(self) -> frozenset[str]:
        """Lints that stop the run even under ``strict-checks = "warning"``: those the
        repository's own runner enforces (``suites-from``: its ``__main__`` requirement)."""
        if self.rules is not None and self.rules.main_block_required:
            return frozenset({MAIN_BLOCK})
        return frozenset()

    def suite_names(self, hw: str) -> list[str]:
        """The suite names of ``hw``: the runner's tables under ``suites-from``, and the
        catalog's entries."""
        names = list(self.rules.suites(hw)) if self.rules is not None else []
        return list(dict.fromkeys([*names, *(s.name for s in self.for_hw(hw))]))

    def for_hw(self, hw: str) -> list[Suite]:
        """Suites of one backend, in catalog order."""
        return [s for s in self.suites if s.hw == hw]

    def renamed(self, old_name: str, hw: str | None = None) -> Suite | None:
        """The suite that ``old_name`` was renamed to (that of ``hw`` first), or None."""
        named = [suite for suite in self.suites if old_name in suite.renamed_from]
        return next((s for s in named if s.hw == hw), named[0] if named else None)

    @property
    def registered_path(self) -> Path:
        return self.root / self.registered_dir

    def launcher_of(self, suite: Suite) -> str:
        """How the files of ``suite`` are started: its own ``launcher``, else the table's."""
        return suite.launcher or self.execution.launcher

    def extra_dir_of(self, rel_path: str) -> ExtraDir | None:
        """The ``extra-dirs`` entry holding a root-relative path, or None."""
        return next((d for d in self.extra_dirs if d.holds(rel_path)), None)


SHOWN_SUITES = 5  # a message lists at most this many suite names


def unknown_suite_message(name: str, backend: str, catalog: Catalog, origin: str = "") -> str:
    """ "unknown cuda suite 'x'; did you mean 'y'?" (or the first known suites)."""
    return f"unknown {backend} suite {name!r}{origin}; {suite_hint(name, backend, catalog)}"


def suite_hint(name: str, backend: str, catalog: Catalog) -> str:
    """ "did you mean 'y'?", else the first few known suites of ``backend`` (a short line however
    many there are)."""
    known = catalog.suite_names(backend)
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]!r}?"
    if not known:
        return f"the catalog defines no {backend} suite"
    more = len(known) - SHOWN_SUITES
    listed = ", ".join(known[:SHOWN_SUITES]) + (f" and {more} more" if more > 0 else "")
    return f"known {backend} suites: {listed}"


_GPU_COUNT = re.compile(r"(?:^|-)(\d+)-(?:gpu|npu)(?:-|$)")


def guess_gpus_per_file(name: str, hw: str) -> int | str:
    """``gpus-per-file`` from a suite name: 0 for CPU, ``"all"`` for ``<N>-gpu`` (or ``-npu``)
    with N > 1, else 1."""
    if hw == "cpu":
        return 0
    match = _GPU_COUNT.search(name)
    return ALL_GPUS if match and int(match.group(1)) > 1 else 1


def find_root(start: Path) -> Path:
    """Walk up from ``start`` to the first directory that holds a catalog (``ci-runner.toml``,
    or ``pyproject.toml`` with ``[tool.ci-runner]``); a pyproject.toml on the way that cannot be
    read is passed, with a notice naming it (it may have been meant to hold the catalog)."""
    current = start.resolve()
    passed: list[str] = []
    for candidate in (current, *current.parents):
        own = candidate / OWN_FILE
        found = own.exists() or own.is_symlink()
        path = candidate / CATALOG_FILE
        if not found and path.is_file():
            try:
                data = tomllib.loads(read_regular_text(path))
            except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError, RecursionError) as exc:
                passed.append(f"{path} ({why(exc)})")
                continue
            tool = data.get("tool")
            found = isinstance(tool, dict) and "ci-runner" in tool
        if found:
            for skipped in passed:
                print(
                    f"notice: passed {skipped}, which cannot be read; using the catalog of "
                    f"{candidate} (pass --root DIR to choose)",
                    file=sys.stderr,
                )
            return candidate
    unread = f" (not read: {'; '.join(passed)})" if passed else ""
    raise CatalogError(
        f"no {CATALOG_FILE} with a [tool.ci-runner] table (nor a {OWN_FILE}) found in {current} "
        f"or any parent{unread}; run from inside the repository or pass --root DIR"
    )


def _expect(value: object, kind: type | tuple[type, ...], where: str, what: str) -> object:
    if (
        isinstance(value, bool)
        and kind is not bool
        and bool not in (kind if isinstance(kind, tuple) else (kind,))
    ):
        raise CatalogError(f"{where}: {what} must be {_kind_name(kind)}, got {value!r}")
    if not isinstance(value, kind):
        raise CatalogError(f"{where}: {what} must be {_kind_name(kind)}, got {value!r}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        list: "a list",
    }
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


_SUITE_KEYS = {
    "name",
    "hw",
    "nightly",
    "renamed-from",
    "gpus-per-file",
    "timeout-per-file",
    "runner",
    "runner-key",
    "job-timeout-minutes",
    "launcher",
}


_HINT = ', e.g. [tool.ci-runner.extra-markers] register_mlx_ci = "mlx"'
_SUITE_NAME = re.compile(r"[^\s,\x00-\x1f\x7f-\x9f]+\Z")


def _gpus_per_file(raw: dict, where: str) -> int | str:
    gpus = raw.get("gpus-per-file", 1)
    if gpus == ALL_GPUS:
        return ALL_GPUS
    if isinstance(gpus, bool) or not isinstance(gpus, int) or not 0 <= gpus <= MAX_GPUS:
        raise CatalogError(
            f'{where}: gpus-per-file must be an integer from 0 to {MAX_GPUS} or "{ALL_GPUS}" '
            f"(every GPU of the runner), got {number_text(gpus)}"
        )
    return gpus


def _positive(raw: dict, key: str, where: str, maximum: int, unit: str) -> float | None:
    """The optional number ``raw[key]``: finite, > 0 and <= ``maximum`` (TOML has inf, nan)."""
    value = raw.get(key)
    if value is None:
        return None
    _expect(value, (int, float), where, key)
    if not is_finite_number(value) or not 0 < value <= maximum:
        raise CatalogError(
            f"{where}: {key} must be a positive number of {unit}, at most {maximum}, got "
            f"{number_text(value)}"
        )
    return float(value)


def _check_name(value: str, where: str, what: str) -> None:
    """Suite names are selected with ``--suite a,b``: no comma, whitespace or control character."""
    if not _SUITE_NAME.match(value):
        raise CatalogError(
            f"{where}: {what} must be a non-empty name without commas, whitespace or control "
            f"characters (it is selected with --suite a,b), got {value!r}"
        )


def _parse_suite(raw: object, where: str, backends: tuple[str, ...]) -> Suite:
    if not isinstance(raw, dict):
        raise CatalogError(f"{where}: each [[tool.ci-runner.suites]] entry must be a table")
    if message := unknown_keys_message(raw, sorted(_SUITE_KEYS), where):
        raise CatalogError(message)
    for key in ("name", "hw"):
        if key not in raw:
            raise CatalogError(f"{where}: missing required key '{key}'")
    name = str(_expect(raw["name"], str, where, "name"))
    _check_name(name, where, "name")
    where = f"{where} (suite {name!r})"
    hw = str(_expect(raw["hw"], str, where, "hw"))
    if hw not in backends:
        raise CatalogError(
            f"{where}: hw must be one of {', '.join(backends)}, got {hw!r}"
            + ("" if hw in BACKENDS else f" (a new backend needs an extra-markers entry{_HINT})")
        )
    renamed = _expect(raw.get("renamed-from", []), list, where, "renamed-from")
    for old in renamed:  # type: ignore[union-attr]
        _check_name(str(_expect(old, str, where, "each renamed-from entry")), where, "renamed-from")
    timeout = _positive(raw, "timeout-per-file", where, MAX_SECONDS, "seconds")
    gpus = _gpus_per_file(raw, where)
    job_minutes = _positive(raw, "job-timeout-minutes", where, MAX_MINUTES, "minutes")
    runner = raw.get("runner")
    if runner is not None:
        _expect(runner, str, where, "runner")
    try:
        launcher = parse_launcher(raw, where) if "launcher" in raw else None
    except ExecutionSettingsError as exc:
        raise CatalogError(str(exc)) from None
    runner_key = raw.get("runner-key")
    if runner_key is not None:
        _expect(runner_key, str, where, "runner-key")
    return Suite(
        name=name,
        hw=hw,
        nightly=bool(_expect(raw.get("nightly", False), bool, where, "nightly")),
        renamed_from=tuple(renamed),  # type: ignore[arg-type]
        gpus_per_file=gpus,
        timeout_per_file=timeout,
        runner=runner,
        job_timeout_minutes=job_minutes,
        launcher=launcher,
        runner_key=runner_key,
    )


def load_catalog(root: Path) -> Catalog:
    """Read and validate the catalog of the repository at ``root``."""
    table, location = read_catalog_table(root)
    return parse_catalog(table, root, location.where(), location)


def load_syntax(root: Path) -> RegistrationSyntax:
    """Only the registration syntax of the catalog at ``root`` (its suites may be incomplete)."""
    table, location = read_catalog_table(root)
    where = location.where()
    try:
        rules = _runner_rules(root, parse_policy(table, where), where)
        return parse_syntax(table, where, rules.markers if rules is not None else None)
    except (SyntaxConfigError, PolicyError) as exc:
        raise CatalogError(str(exc)) from None


def read_catalog_table(root: Path) -> tuple[dict, CatalogLocation]:
    """The catalog table of ``root`` and where it lives; :class:`CatalogError` when there is none
    or it cannot be read."""
    try:
        found = find_catalog(root)
    except CatalogFileError as exc:
        raise CatalogError(str(exc)) from None
    if found is None:
        path = root / CATALOG_FILE
        if path.exists():
            raise CatalogError(f"{path}: no [tool.ci-runner] table (nor a {root / OWN_FILE})")
        raise CatalogError(
            f"{path}: not found; the suite catalog lives in [tool.ci-runner] (or in {OWN_FILE})"
        )
    location, table = found
    return table, location


_TOP_KEYS = {
    "registered-dir",
    "suites",
    "suite-template",
    "extra-markers",
    "ignored-arguments",
    "file-patterns",
    "exclude-files",
    EXTRA_DIRS_KEY,
    "policy",
    "change-impact",  # read by ci_runner.impact.config (--changed-since, --changed-files)
    "execution",
    "plan",
    "partitions",
    QUARANTINE_KEY,
}


def _exclude_files(table: dict, where: str) -> tuple[str, ...]:
    """``exclude-files``: paths (globs) under registered-dir that are never collected."""
    globs = table.get("exclude-files", [])
    if not isinstance(globs, list) or not all(
        isinstance(g, str) and g.strip() and not g.startswith("/") and ".." not in g.split("/")
        for g in globs
    ):
        raise CatalogError(
            f"{where}: exclude-files must be a list of paths relative to registered-dir (globs "
            f'allowed, no leading / or ..), e.g. ["cpu/utils.py"], got {globs!r}'
        )
    return tuple(globs)


def _file_patterns(table: dict, where: str) -> tuple[str, ...]:
    patterns = table.get("file-patterns", list(DEFAULT_FILE_PATTERNS))
    if not valid_name_globs(patterns):
        raise CatalogError(
            f"{where}: file-patterns must be a non-empty list of file-name globs ending in .py "
            f'(e.g. ["test_*.py", "bench_*.py"] or ["*.py"]), got {patterns!r}'
        )
    return tuple(patterns)


def _registered_dir(table: dict, where: str) -> str:
    """A relative path inside the repository (discovery also checks where it really leads)."""
    value = str(_expect(table.get("registered-dir", "registered"), str, where, "registered-dir"))
    path = PurePosixPath(value)
    if not value.strip() or path.is_absolute() or ".." in path.parts or "\0" in value:
        raise CatalogError(
            f"{where}: registered-dir must be a relative path inside the repository (not "
            f"absolute, no '..'), got {value!r}"
        )
    return path.as_posix()


def parse_catalog(
    table: dict, root: Path, where: str, location: CatalogLocation | None = None
) -> Catalog:
    """Validate a ``[tool.ci-runner]`` table already read from TOML (``where`` names it)."""
    if message := unknown_keys_message(table, sorted(_TOP_KEYS), where):
        raise CatalogError(message)
    registered_dir = _registered_dir(table, where)
    try:
        policy = parse_policy(table, where)
    except PolicyError as exc:
        raise CatalogError(str(exc)) from None
    rules = _runner_rules(root, policy, where)
    try:
        syntax = parse_syntax(table, where, rules.markers if rules is not None else None)
    except SyntaxConfigError as exc:
        raise CatalogError(str(exc)) from None
    raw_suites = table.get("suites", [])
    if not isinstance(raw_suites, list) or (not raw_suites and rules is None):
        raise CatalogError(f"{where}: define at least one [[tool.ci-runner.suites]] entry")
    suites = tuple(
        _parse_suite(raw, f"{where} suites[{i}]", syntax.backends)
        for i, raw in enumerate(raw_suites)
    )
    seen: dict[tuple[str, str], str] = {}
    for suite in suites:
        scope = suite.hw if policy.names_per_backend else ""
        for name in (suite.name, *suite.renamed_from):
            if (scope, name) in seen:
                also = f" of hw {scope!r}" if scope else ""
                raise CatalogError(
                    f"{where}: suite name {name!r} is used twice{also} ({seen[scope, name]} "
                    f"and {suite.name})"
                    + (
                        ""
                        if scope
                        else "; with [tool.ci-runner.policy] suite-names = "
                        '"per-backend" each backend may have a suite of that name'
                    )
                )
            seen[scope, name] = suite.name
    try:
        extra_dirs = parse_extra_dirs(table, where, registered_dir)
    except ExtraDirError as exc:
        raise CatalogError(str(exc)) from None
    try:
        quarantine = parse_quarantine(table, where)
    except QuarantineError as exc:
        raise CatalogError(str(exc)) from None
    return Catalog(
        root=root,
        registered_dir=registered_dir,
        suites=suites,
        syntax=syntax,
        file_patterns=_file_patterns(table, where),
        policy=policy,
        exclude_files=_exclude_files(table, where),
        execution=_execution(table, where),
        extra_dirs=extra_dirs,
        location=location,
        table=table,
        rules=rules,
        plan=_plan(table, where),
        partitions=_partitions(table, where),
        quarantine=quarantine,
    )


def _partitions(table: dict, where: str) -> PartitionRule | None:
    try:
        return parse_partition_rule(table, where)
    except PartitionRuleError as exc:
        raise CatalogError(str(exc)) from None


def _plan(table: dict, where: str) -> str:
    value = table.get("plan", PLAN_BEST)
    if value not in PLANS:
        raise CatalogError(
            f"{where}: plan must be {' or '.join(map(repr, PLANS))} (default {PLAN_BEST!r}: this "
            f"runner's planner; {PLAN_UPSTREAM!r}: SGLang's auto_partition exactly), got "
            f"{number_text(value)}"
        )
    return str(value)


def _runner_rules(root: Path, policy: Policy, where: str) -> RunnerRules | None:
    """The rules of the runner named by ``suites-from`` (None without the key)."""
    if policy.suites_from is None:
        return None
    try:
        return read_runner_rules(root, policy.suites_from)
    except RunnerRulesError as exc:
        raise CatalogError(f"{where} policy: suites-from: {exc}") from None


def _execution(table: dict, where: str) -> ExecutionSettings:
    try:
        return parse_execution_settings(table.get("execution"), where)
    except ExecutionSettingsError as exc:
        raise CatalogError(str(exc)) from None
