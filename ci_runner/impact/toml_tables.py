"""Which tables of a changed ``pyproject.toml`` or ``ci-runner.toml`` differ, and whether a test
run can read them through the test tooling.

A table is a top-level key of the parsed file; under ``tool`` each ``[tool.<name>]`` is one
table, and the catalog's ``[tool.ci-runner.change-impact]``, ``[tool.ci-runner.execution]`` and
its suites' run settings are tables of their own (``ci-runner.toml`` is the catalog at its top
level). A key added,
removed or changed anywhere below a table changes it. Both sides are parsed with ``tomllib``.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field

CATALOG = "tool.ci-runner"
OWN_FILE = "ci-runner.toml"
# The catalog's tables that decide how a change is judged or how a test's process runs: a
# change to them keeps running everything.
CATALOG_RUNS_EVERYTHING = ("change-impact", "execution")
# A suite's keys that decide how and where its files run; they form the table
# ``tool.ci-runner.suites``, by suite name (a suite added or removed changes it too).
SUITE_RUN_KEYS = ("hw", "gpus-per-file", "timeout-per-file", "runner", "runner-key", "launcher")
SUITES = f"{CATALOG}.suites"
# Tables no test process reads through the test tooling, and why. The others (``[project]``,
# ``[build-system]``, ``[tool.pytest]``, ``[tool.coverage]``, ``[tool.setuptools]``,
# ``[tool.uv]`` and ``[tool.hatch]``, which shape the installed environment or the test command,
# any tool not named here) may change how every test runs.
NOT_READ_BY_TESTS: dict[str, str] = {
    CATALOG: "the catalog: the runner applies it itself when it selects and plans",
    "tool.ruff": "a linter",
    "tool.black": "a formatter",
    "tool.isort": "a formatter",
    "tool.mypy": "a type checker",
    "tool.pyright": "a type checker",
    "tool.pylint": "a linter",
    "tool.codespell": "a spell checker",
    "tool.typos": "a spell checker",
    "tool.bandit": "a linter",
    "tool.cibuildwheel": "wheel builds for release",
}


@dataclass(frozen=True)
class TableChange:
    """What changed in one TOML file: its changed tables (``tool.ruff``, ``project``; a key
    outside every table is named by itself), or why the file cannot be compared."""

    tables: tuple[str, ...] = ()
    unreadable: str = ""  # why a side does not parse
    keys: dict[str, str] = field(default_factory=dict)  # table -> its first changed key

    def run_everything(self) -> tuple[str, ...]:
        """The changed tables a test run may read (empty: every change is in a table no test
        run reads; an unreadable side is handled by the caller)."""
        return tuple(t for t in self.tables if t not in NOT_READ_BY_TESTS)


def _tables(data: dict, own_file: bool) -> dict[str, object]:
    """The file's tables, by name (pyproject form: ``tool.ci-runner.execution``)."""
    if own_file:
        data = {"tool": {"ci-runner": data}}
    tables: dict[str, object] = {}
    for key, value in data.items():
        if key != "tool" or not isinstance(value, dict):
            tables[key] = value
            continue
        for name, table in value.items():
            if name == "ci-runner" and isinstance(table, dict):
                catalog = dict(table)
                for own in CATALOG_RUNS_EVERYTHING:
                    if own in catalog:
                        tables[f"{CATALOG}.{own}"] = catalog.pop(own)
                catalog["suites"], tables[SUITES] = _split_suites(catalog.get("suites"))
                tables[CATALOG] = catalog
            else:
                tables[f"tool.{name}"] = table
    return tables


def _split_suites(suites: object) -> tuple[object, object]:
    """The suites without their run settings, and the run settings by suite name (a malformed
    list stays whole in the second)."""
    if not isinstance(suites, list) or not all(
        isinstance(s, dict) and isinstance(s.get("name"), str) for s in suites
    ):
        return None, suites
    rest = [{k: v for k, v in s.items() if k not in SUITE_RUN_KEYS} for s in suites]
    run = [(s["name"], {k: s[k] for k in SUITE_RUN_KEYS if k in s}) for s in suites]
    return rest, sorted(run, key=lambda item: item[0])


def table_name(table: str, own_file: bool) -> str:
    """How the output names a table: ``[tool.ruff]``; in ``ci-runner.toml`` ``[execution]``."""
    if table == SUITES:
        return "[[suites]] run settings" if own_file else f"[[{SUITES}]] run settings"
    if own_file and table.startswith(CATALOG):
        return f"[{table[len(CATALOG) + 1 :]}]" if table != CATALOG else "the catalog"
    return f"[{table}]"


def _parse(text: bytes, side: str) -> dict | str:
    try:
        return tomllib.loads(text.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return f"the {side} side is not UTF-8 ({exc.reason} at byte {exc.start})"
    except tomllib.TOMLDecodeError as exc:
        return f"the {side} side does not parse as TOML ({exc})"


def changed_tables(old: bytes, new: bytes, path: str) -> TableChange:
    """The tables that differ between the ``old`` and ``new`` text of the TOML file ``path``."""
    own_file = path.rsplit("/", 1)[-1] == OWN_FILE
    parsed = []
    for text, side in ((old, "old"), (new, "new")):
        data = _parse(text, side)
        if isinstance(data, str):
            return TableChange(unreadable=data)
        parsed.append(_tables(data, own_file))
    before, after = parsed
    names = sorted(name for name in set(before) | set(after) if before.get(name) != after.get(name))
    keys = {
        name: key
        for name in names
        if (key := _first_changed_key(before.get(name), after.get(name))) is not None
    }
    return TableChange(tables=tuple(names), keys=keys)


def _first_changed_key(before: object, after: object) -> str | None:
    """The first key (sorted) whose value differs between two tables; None unless both are."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return None
    return min((k for k in set(before) | set(after) if before.get(k) != after.get(k)), default=None)


def describe(change: TableChange, tables: tuple[str, ...], own_file: bool) -> str:
    """``[project] dependencies, [tool.ruff]``: the tables, each with its first changed key."""
    return ", ".join(
        table_name(t, own_file) + (f" {change.keys[t]}" if t in change.keys else "") for t in tables
    )
