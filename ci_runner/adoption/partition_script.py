"""``init``'s draft of ``[tool.ci-runner.partitions]`` from the repository's partition script.

The script is the ``python3 <path>.py`` with ``partition`` in its path that a workflow under
``.github/workflows`` runs (SGLang: ``scripts/ci/utils/compute_partitions.py``). It is parsed,
never run, and its literal values become the rule's keys:

* ``backends``: the module-level set of backend members (``{HWBackend.CUDA, HWBackend.CPU}``);
* ``pinned``: the module-level dict of suite name to an integer shard count;
* ``stage-workflows``: the module-level set of ``./.github/workflows/*.yml`` strings;
* ``budget-input``: the string that subscripts the stage job's ``with:`` mapping
  (``with_["run_timeout_minutes"]``); ``suite-input``: the key read with ``.get(key, job_id)``;
* ``budget-fraction``: the float literal in (0, 1) it multiplies the budget with;
  ``max-parallel-divisor``: the integer of its ``size // N``;
* ``unthrottled-backends``: the backends it compares registrations with (``t.backend ==
  HWBackend.CPU``).

A key it cannot find is not written, and the report says which; ``run_suite.py partitions``
then names the missing key.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ci_runner.adoption.tables import DraftedTable
from ci_runner.catalog.partitions import KEYS
from ci_runner.file_safety import read_regular_text

_SCRIPT = re.compile(r"python3?\s+(?:\./)?([\w./-]*partition[\w./-]*\.py)")
_WORKFLOW_PREFIX = "./.github/workflows/"


def find_partition_script(root: Path) -> str | None:
    """The root-relative path of the partition script a workflow runs, if any."""
    directory = root / ".github" / "workflows"
    if not directory.is_dir():
        return None
    for path in sorted(directory.glob("*.y*ml")):
        try:
            text = read_regular_text(path)
        except (OSError, UnicodeDecodeError):
            continue
        for match in _SCRIPT.finditer(text):
            if (root / match.group(1)).is_file():
                return match.group(1)
    return None


def partitions_table(root: Path, backend_names: dict[str, str]) -> tuple[DraftedTable | None, str]:
    """The drafted table (None without a script) and a note for init's report."""
    script = find_partition_script(root)
    if script is None:
        return None, ""
    try:
        tree = ast.parse(read_regular_text(root / script))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return None, f"partitions: {script} does not parse; no [partitions] table drafted"
    values: dict[str, object] = {}
    for _, value in _assignments(tree):
        backends = _members(value, backend_names)
        if backends and "backends" not in values:
            values["backends"] = backends
        strings = _string_set(value)
        if strings and all(s.startswith(_WORKFLOW_PREFIX) for s in strings):
            values.setdefault("stage-workflows", sorted(strings))
        pinned = _pinned(value)
        if pinned:
            values.setdefault("pinned", pinned)
    values.update(_expressions(tree, backend_names))
    missing = [k for k in ("backends", "stage-workflows", "budget-input") if k not in values]
    note = f"[partitions]: the rule of {script} (run_suite.py partitions prints its output)"
    if missing:
        note += f"; not found in it, add by hand: {', '.join(missing)}"
    table = DraftedTable(
        "partitions",
        {key: values[key] for key in KEYS if key in values},
        comments=(
            f"How {script} sizes the shard matrices of a workflow; `run_suite.py partitions",
            "--workflow .github/workflows/<file>.yml` prints what it prints (docs/ci-wiring.md).",
        ),
    )
    return table, note


def _assignments(tree: ast.Module) -> list[tuple[str, ast.expr]]:
    return [
        (stmt.targets[0].id, stmt.value)
        for stmt in tree.body
        if isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
    ]


def _member(node: ast.expr, names: dict[str, str]) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return names.get(node.attr, node.attr.lower())
    return None


def _members(value: ast.expr, names: dict[str, str]) -> list[str]:
    if not isinstance(value, ast.Set | ast.List | ast.Tuple) or not value.elts:
        return []
    found = [_member(e, names) for e in value.elts]
    return sorted(f for f in found if f) if all(found) else []


def _string_set(value: ast.expr) -> list[str]:
    if not isinstance(value, ast.Set | ast.List | ast.Tuple) or not value.elts:
        return []
    strings = [e.value for e in value.elts if isinstance(e, ast.Constant)]
    return (
        strings
        if len(strings) == len(value.elts) and all(isinstance(s, str) for s in strings)
        else []
    )


def _pinned(value: ast.expr) -> dict[str, int]:
    if not isinstance(value, ast.Dict) or not value.keys:
        return {}
    pinned: dict[str, int] = {}
    for key, item in zip(value.keys, value.values, strict=True):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return {}
        if not (isinstance(item, ast.Constant) and type(item.value) is int):
            return {}
        pinned[key.value] = item.value
    return pinned


def _expressions(tree: ast.Module, names: dict[str, str]) -> dict[str, object]:
    """budget-input, suite-input, budget-fraction, max-parallel-divisor, unthrottled-backends."""
    found: dict[str, object] = {}
    unthrottled: list[str] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
            and isinstance(node.value, ast.Name)
            and node.value.id.startswith("with")
        ):
            found.setdefault("budget-input", node.slice.value)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id.startswith("with")
            and len(node.args) == 2
            and isinstance(node.args[0], ast.Constant)
        ):
            found.setdefault("suite-input", node.args[0].value)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            for side in (node.left, node.right):
                fraction = isinstance(side, ast.Constant) and type(side.value) is float
                if fraction and 0 < side.value < 1:  # type: ignore[union-attr]
                    found.setdefault("budget-fraction", side.value)  # type: ignore[union-attr]
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv):
            if isinstance(node.right, ast.Constant) and type(node.right.value) is int:
                found.setdefault("max-parallel-divisor", node.right.value)
        elif isinstance(node, ast.Compare) and len(node.comparators) == 1:
            member = _member(node.comparators[0], names)
            is_backend = isinstance(node.left, ast.Attribute) and node.left.attr == "backend"
            if member and is_backend and isinstance(node.ops[0], ast.Eq):
                unthrottled.append(member)
    if unthrottled:
        found["unthrottled-backends"] = sorted(set(unthrottled))
    return found
