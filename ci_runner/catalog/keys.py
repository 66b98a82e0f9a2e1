"""The unknown-key check every table of the catalog makes (one message for all of them)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def unknown_keys_message(
    table: Mapping[str, object], known: Iterable[str], where: str
) -> str | None:
    """``"<where>: unknown key(s) a, b; known keys: ..."`` when ``table`` has keys outside
    ``known`` (listed in the order given), else None."""
    known = list(known)
    unknown = sorted(set(table) - set(known))
    if not unknown:
        return None
    return f"{where}: unknown key(s) {', '.join(unknown)}; known keys: {', '.join(known)}"
