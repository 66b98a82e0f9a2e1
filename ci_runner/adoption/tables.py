"""The sub-tables ``init`` drafts (``extra-markers``, ``policy``, ``execution``, ``partitions``, ...),
as data: each is rendered by :func:`render_table` and merged by ``init --update`` the same way,
so drafting one more table is one more :class:`DraftedTable` in ``Draft.tables``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ci_runner.catalog.location import CatalogLocation


@dataclass(frozen=True)
class DraftedTable:
    """One ``[tool.ci-runner.<name>]`` table: its keys in order, the comment lines written above
    its header, and a trailing comment per key."""

    name: str
    values: dict[str, object]
    comments: tuple[str, ...] = ()
    notes: dict[str, str] = field(default_factory=dict)


def toml_value(value: object) -> str:
    """A TOML literal for a string, number, boolean, list or (inline) table."""
    if isinstance(value, dict):
        inner = ", ".join(f"{_key(k)} = {toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value)  # JSON's spelling is valid TOML for strings, numbers, booleans


def _key(key: str) -> str:
    bare = key.replace("-", "").replace("_", "").isalnum() and key.isascii()
    return key if bare else json.dumps(key)


def key_lines(values: dict[str, object], notes: dict[str, str]) -> list[str]:
    """``key = value  # note`` lines."""
    lines = []
    for key, value in values.items():
        note = notes.get(key)
        lines.append(f"{_key(key)} = {toml_value(value)}" + (f"  # {note}" if note else ""))
    return lines


def render_table(table: DraftedTable, location: CatalogLocation) -> list[str]:
    """The table's lines, a blank line and its comments first."""
    return [
        "",
        *(f"# {line}" if line else "#" for line in table.comments),
        location.header(table.name),
        *key_lines(table.values, table.notes),
    ]
