"""A workflow file read with bounds: its size, and what its YAML aliases expand to.

YAML aliases (``*a`` of an ``&a`` anchor) share one node, so seven matrix axes that alias one
20-value list load in microseconds and stand for 20**7 rows; a chain of aliased lists (the
"billion laughs") stands for 10**9 strings. PyYAML builds such data without copying, so the
danger is in what reads it afterwards. A file is therefore composed first and its size counted
as if every alias were written out; over :data:`MAX_NODES` it is not read, and the message says
so. A file over :data:`MAX_BYTES`, not UTF-8, or not YAML is not read either; libyaml refuses
nesting deeper than 1,000 levels itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ci_runner.file_safety import read_regular, why

MAX_BYTES = 1024 * 1024  # a workflow larger than this is not read
MAX_NODES = 200_000  # scalars, lists and maps once every alias is written out


class WorkflowFileError(ValueError):
    """The workflow file is not read; the message names it and says why."""


def load_workflow_file(path: Path, shown: str) -> Any:
    """The YAML data of the workflow at ``path`` (``shown``: its name in messages)."""
    import yaml  # PyYAML: only the commands that read workflows need it

    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise WorkflowFileError(
                f"{shown}: {size:,} bytes, more than the {MAX_BYTES:,} a workflow is read up to"
            )
        text = read_regular(path).decode("utf-8")
    except OSError as exc:
        raise WorkflowFileError(f"{shown}: cannot read ({why(exc)})") from None
    except UnicodeDecodeError as exc:
        reason = f"{exc.reason} at byte {exc.start}"
        raise WorkflowFileError(f"{shown}: not UTF-8 text ({reason})") from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        nodes = expanded_size(node, MAX_NODES)
        if nodes is None:
            raise WorkflowFileError(f"{shown}: a YAML alias refers to a node that contains it")
        if nodes > MAX_NODES:
            raise WorkflowFileError(
                f"{shown}: its YAML aliases expand to more than {MAX_NODES:,} values; not read"
            )
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(exc):  # libyaml's limit
            raise WorkflowFileError(f"{shown}: invalid YAML (nested too deeply to read)") from None
        raise WorkflowFileError(f"{shown}: invalid YAML ({exc})") from None
    except RecursionError:
        raise WorkflowFileError(f"{shown}: invalid YAML (nested too deeply to read)") from None
    finally:
        loader.dispose()


def expanded_size(root: Any, limit: int) -> int | None:
    """How many nodes ``root`` (a composed YAML node) stands for with every alias written out,
    counted without expanding: up to just past ``limit``; None when an alias refers to a node
    that contains it (the data would be infinite)."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _children(node)
        if done:
            on_path.discard(key)
            sizes[key] = min(1 + sum(sizes[id(child)] for child in children), limit + 1)
            continue
        if key in sizes:
            continue
        if key in on_path:
            return None
        on_path.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in on_path:
                return None
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def _children(node: Any) -> list[Any]:
    value = node.value
    if isinstance(value, list):  # a sequence's items, or a mapping's (key, value) pairs
        return [part for item in value for part in (item if isinstance(item, tuple) else (item,))]
    return []
