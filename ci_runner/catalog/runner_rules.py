"""The rules of a repository's own registry-based runner, read from its source (parsed, never
imported), for ``[tool.ci-runner.policy] suites-from = "test/run_suite.py"``.

The runner file (SGLang's ``test/run_suite.py``) and the registry module it imports
``collect_tests`` from (SGLang's ``python/sglang/test/ci/ci_register.py``) are read on every run,
so the catalog never holds a copy that can drift:

* **suite tables**: the module-level dicts of backend to a list of literal suite names
  (``PER_COMMIT_SUITES = {HWBackend.CUDA: ["base-a-test-1-gpu-small", ...], ...}``); a backend's
  suites are the union of its lists in all of them;
* **validated backends**: the module-level set of backends (``{HWBackend.CUDA, ...}``) that a
  function the runner calls consults (SGLang's ``validate_all_suites`` reads
  ``_SUITE_CHECKED_BACKENDS``); a registration on one of them must name a suite of the tables,
  any other backend accepts any name. A runner with no such set validates no backend;
* **backends**: the keys of the ``--hw`` mapping (``HW_MAPPING = {"cpu": HWBackend.CPU, ...}``),
  and the markers of the registry module's ``REGISTER_MAPPING`` (``{"register_cpu_ci":
  HWBackend.CPU, ...}``);
* **the __main__ requirement**: the registry module refuses an enabled file without an
  executable ``if __name__ == "__main__":`` block when one of its functions compares
  ``__name__`` with ``"__main__"`` (SGLang's ``has_main_entry`` check, from April 2026 on).

Backend members are named by their ``--hw`` key (``HWBackend.CUDA`` -> ``cuda``), else in lower
case.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ci_runner.file_safety import read_regular_text, why

_PACKAGE_BASES = (".", "python", "src")  # where a runner's absolute imports may resolve


class RunnerRulesError(ValueError):
    """The runner file cannot be read or parsed; the message names it."""


@dataclass(frozen=True)
class RunnerRules:
    """What one runner file (and its registry module) says about suites and checks."""

    path: str  # the runner, relative to the root
    tables: Mapping[str, Mapping[str, tuple[str, ...]]]  # table -> hw -> suite names
    backends: tuple[str, ...] = ()  # its --hw names, in order
    checked: frozenset[str] = frozenset()  # backends whose suite names it validates
    markers: Mapping[str, str] = field(default_factory=dict)  # marker name -> hw
    main_block_required: bool = False
    registry: str | None = None  # the registry module read, relative to the root

    def suites(self, hw: str) -> tuple[str, ...]:
        """The suite names of ``hw`` in all tables, first occurrence first."""
        names = [name for table in self.tables.values() for name in table.get(hw, ())]
        return tuple(dict.fromkeys(names))

    @functools.cached_property
    def _known(self) -> dict[str, frozenset[str]]:
        return {hw: frozenset(self.suites(hw)) for t in self.tables.values() for hw in t}

    def knows(self, hw: str, name: str) -> bool:
        """True when a table lists ``name`` for ``hw``."""
        return name in self._known.get(hw, ())

    def knows_anywhere(self, name: str) -> bool:
        """True when a table lists ``name`` for some backend."""
        return any(name in names for names in self._known.values())

    def accepts(self, hw: str, name: str) -> bool:
        """True when a registration for ``hw`` may name ``name``: any name on a backend the runner
        does not validate."""
        return hw not in self.checked or self.knows(hw, name)


def read_runner_rules(root: Path, runner: str) -> RunnerRules:
    """The rules of the runner at ``root/runner``; :class:`RunnerRulesError` when it cannot be
    read or parsed."""
    tree = _parse(root / runner, runner)
    names = _member_names(tree)
    tables: dict[str, dict[str, tuple[str, ...]]] = {}
    for target, value in _module_assignments(tree):
        if isinstance(value, ast.Dict):
            table = _suite_table(value, names)
            if table:
                tables[target] = table
    registry = _registry_module(root, runner, tree)
    markers: dict[str, str] = {}
    required = False
    if registry is not None:
        registry_tree = _parse(root / registry, registry)
        markers = _marker_mapping(registry_tree, names)
        required = _requires_main_block(registry_tree)
    return RunnerRules(
        path=runner,
        tables=tables,
        backends=tuple(names.values()),
        checked=_checked_backends(tree, names),
        markers=markers,
        main_block_required=required,
        registry=registry,
    )


def _parse(path: Path, shown: str) -> ast.Module:
    try:
        return ast.parse(read_regular_text(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise RunnerRulesError(f"{shown}: cannot read: {why(exc)}") from None
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise RunnerRulesError(f"{shown}: does not parse: {exc}") from None


def _module_assignments(tree: ast.Module) -> list[tuple[str, ast.expr]]:
    """``NAME = value`` statements at module level (annotated ones too)."""
    found = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                found.append((target.id, stmt.value))
        elif (
            isinstance(stmt, ast.AnnAssign)
            and stmt.value is not None
            and isinstance(stmt.target, ast.Name)
        ):
            found.append((stmt.target.id, stmt.value))
    return found


def _member_names(tree: ast.Module) -> dict[str, str]:
    """Backend member -> --hw name, from ``{"cpu": HWBackend.CPU, ...}`` (first such dict)."""
    for _, value in _module_assignments(tree):
        if not isinstance(value, ast.Dict) or not value.keys:
            continue
        names: dict[str, str] = {}
        for key, item in zip(value.keys, value.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                break
            if not isinstance(item, ast.Attribute):
                break
            names[item.attr] = key.value
        else:
            return names
    return {}


def _backend(node: ast.expr, names: Mapping[str, str]) -> str | None:
    """``HWBackend.CUDA`` -> ``"cuda"``; None for anything else."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name | ast.Attribute):
        return names.get(node.attr, node.attr.lower())
    return None


def _suite_table(value: ast.Dict, names: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """``{HWBackend.CUDA: ["a", "b"], ...}`` -> ``{"cuda": ("a", "b")}``; else empty."""
    table: dict[str, tuple[str, ...]] = {}
    for key, item in zip(value.keys, value.values, strict=True):
        hw = _backend(key, names) if key is not None else None
        if hw is None or not isinstance(item, ast.List | ast.Tuple):
            return {}
        suites = [e.value for e in item.elts if isinstance(e, ast.Constant)]
        if len(suites) != len(item.elts) or not all(isinstance(s, str) for s in suites):
            return {}
        table[hw] = tuple(suites)
    return table


def _backend_set(value: ast.expr, names: Mapping[str, str]) -> frozenset[str] | None:
    """``{HWBackend.A, ...}`` (also ``frozenset({...})``, a list or tuple) -> backends."""
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in ("set", "frozenset")
        and len(value.args) == 1
    ):
        value = value.args[0]
    if not isinstance(value, ast.Set | ast.List | ast.Tuple) or not value.elts:
        return None
    backends = [_backend(e, names) for e in value.elts]
    if any(b is None for b in backends):
        return None
    return frozenset(b for b in backends if b is not None)


def _checked_backends(tree: ast.Module, names: Mapping[str, str]) -> frozenset[str]:
    """The backends of a module-level backend set that a function the runner calls reads."""
    sets = {
        target: found
        for target, value in _module_assignments(tree)
        if (found := _backend_set(value, names)) is not None
    }
    if not sets:
        return frozenset()
    called = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    checked: set[str] = set()
    for function in tree.body:
        if not isinstance(function, ast.FunctionDef) or function.name not in called:
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Name) and node.id in sets:
                checked |= sets[node.id]
    return frozenset(checked)


def _registry_module(root: Path, runner: str, tree: ast.Module) -> str | None:
    """The root-relative file of the module the runner imports ``collect_tests`` from."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ImportFrom) and node.module and node.level == 0):
            continue
        if not any(alias.name == "collect_tests" for alias in node.names):
            continue
        relative = PurePosixPath(*node.module.split(".")).with_suffix(".py")
        bases = [PurePosixPath(runner).parent, *map(PurePosixPath, _PACKAGE_BASES)]
        for base in bases:
            candidate = (base / relative).as_posix()
            if (root / candidate).is_file():
                return candidate
    return None


def _marker_mapping(tree: ast.Module, names: Mapping[str, str]) -> dict[str, str]:
    """``REGISTER_MAPPING = {"register_cpu_ci": HWBackend.CPU, ...}`` -> marker -> hw."""
    for _, value in _module_assignments(tree):
        if not isinstance(value, ast.Dict) or not value.keys:
            continue
        markers: dict[str, str] = {}
        for key, item in zip(value.keys, value.values, strict=True):
            hw = _backend(item, names)
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)) or hw is None:
                break
            if not (key.value.startswith("register_") and key.value.endswith("_ci")):
                break
            markers[key.value] = hw
        else:
            return markers
    return {}


def _requires_main_block(tree: ast.Module) -> bool:
    """True when a function of the registry module compares ``__name__`` with ``"__main__"``."""
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Constant) and node.value == "__main__":
                return True
    return False
