"""``init --update``: merge a freshly drafted catalog into the existing one, in place.

The file is edited with ``tomlkit``, which keeps everything it does not touch byte for byte:
hand-added keys, tables (``change-impact`` included) and comments survive. The rule, one for
every key:

* what the draft writes and the catalog lacks is added (a key, a list entry, a table, a suite);
* a value the catalog already has is kept, and a differing drafted value is reported, except
  the values ``init`` reads from the workflows (a suite's ``runner``, ``runner-key`` and
  ``job-timeout-minutes``), which follow the workflows and are reported as changed;
* nothing is removed: a suite entry ``init`` no longer drafts is kept and counted.

:func:`update_catalog` returns the new text and one line per change.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import tomlkit
from tomlkit.items import AoT, Comment, Table

from ci_runner.adoption.catalog_text import catalog_text
from ci_runner.adoption.draft import Draft
from ci_runner.catalog.location import CatalogLocation

FROM_WORKFLOWS = ("runner", "runner-key", "job-timeout-minutes")
SUITES = "suites"


class UpdateError(Exception):
    """The existing catalog cannot be merged (the message says why)."""


def update_catalog(old_text: str, draft: Draft, location: CatalogLocation) -> tuple[str, list[str]]:
    """``old_text`` with the draft merged in, and what changed (``+`` added, ``~`` changed, ``=``
    kept although the draft differs)."""
    try:
        document = tomlkit.parse(old_text)
    except tomlkit.exceptions.ParseError as exc:
        raise UpdateError(f"{location.path}: cannot read it as TOML ({exc})") from None
    drafted = tomlkit.parse(catalog_text(draft, location))
    old = _catalog(document, location)
    if old is None:
        raise UpdateError(
            f"{location.path} has no catalog to update; run init without --update to write one"
        )
    new = _catalog(drafted, location)
    assert new is not None
    changes: list[str] = []
    for key, value in new.items():
        if key == SUITES:
            continue
        if isinstance(value, Table):
            _merge_table(old, key, value, changes)
        else:
            _merge_value(old, key, value, key, changes)
    _merge_suites(old, new.get(SUITES), draft, changes)
    return tomlkit.dumps(document), changes


def _catalog(document: Any, location: CatalogLocation) -> MutableMapping | None:
    table: Any = document
    for key in location.keys:
        table = table.get(key) if isinstance(table, MutableMapping) else None
    return table if isinstance(table, MutableMapping) else None


def _plain(value: Any) -> Any:
    return value.unwrap() if hasattr(value, "unwrap") else value


def _merge_value(
    table: MutableMapping, key: str, value: Any, shown: str, changes: list[str]
) -> None:
    """Add a missing key; extend a list with the drafted entries it lacks; keep anything else."""
    if key not in table:
        _add(table, key, value)
        changes.append(f"+ {shown} = {_text(value)}")
        return
    current, drafted = _plain(table[key]), _plain(value)
    if current == drafted:
        return
    if isinstance(current, list) and isinstance(drafted, list):
        added = [item for item in value if _plain(item) not in current]
        for item in added:
            table[key].append(item)
        if added:
            changes.append(f"+ {shown}: {', '.join(_text(item) for item in added)}")
        return
    changes.append(f"= kept {shown} = {_text(current)} (init drafts {_text(drafted)})")


def _merge_table(old: MutableMapping, name: str, drafted: Table, changes: list[str]) -> None:
    if name not in old:
        drafted.add(tomlkit.nl())
        old[name] = drafted
        changes.append(f"+ table {name} ({len(drafted)} key(s))")
        return
    existing = old[name]
    if not isinstance(existing, MutableMapping):
        changes.append(f"= kept {name} = {_text(existing)} (init drafts a table)")
        return
    for key, value in drafted.items():
        _merge_value(existing, key, value, f"{name}.{key}", changes)


def _suite_key(suite: Any) -> tuple[str, str]:
    return str(suite.get("name")), str(suite.get("hw"))


def _merge_suites(
    old: MutableMapping, drafted: AoT | None, draft: Draft, changes: list[str]
) -> None:
    existing = old.get(SUITES)
    drafted_suites = list(drafted) if drafted is not None else []
    if existing is None:
        if drafted is not None:
            old[SUITES] = drafted
            changes.append(f"+ {len(drafted_suites)} suite entr(y/ies)")
        return
    by_key = {_suite_key(suite): suite for suite in existing}
    drafted_keys = set()
    for suite in drafted_suites:
        key = _suite_key(suite)
        drafted_keys.add(key)
        shown = f"suite {key[1]}:{key[0]!r}"
        if key not in by_key:
            last = existing[-1] if len(existing) else None
            suite.add(tomlkit.nl())
            existing.append(suite)
            if last is not None:
                _move_trailing_comments(last, suite)
            changes.append(f"+ {shown}")
            continue
        current = by_key[key]
        for name, value in suite.items():
            if (
                name in FROM_WORKFLOWS
                and name in current
                and _plain(current[name]) != _plain(value)
            ):
                before = _text(current[name])
                current[name] = value
                changes.append(f"~ {shown} {name}: {before} -> {_text(value)} (the workflows)")
            elif name not in current:
                _add(current, name, value)
                changes.append(f"+ {shown} {name} = {_text(value)}")
    kept = [key for key in by_key if key not in drafted_keys]
    if kept:
        why = (
            f"the names come from {draft.policy.suites_from}; an entry only carries settings"
            if draft.policy.suites_from
            else "no registration, workflow or runner table names them now; delete them if gone"
        )
        shown = ", ".join(f"{hw}:{name!r}" for name, hw in kept[:5])
        more = f" and {len(kept) - 5} more" if len(kept) > 5 else ""
        changes.append(
            f"= kept {len(kept)} suite entr(y/ies) init does not draft ({why}): {shown}{more}"
        )


def _add(table: MutableMapping, key: str, value: Any) -> None:
    """``table[key] = value``, placed before the comments that end the table's text: they
    belong to what follows (tomlkit keeps them in this table)."""
    body = table.value.body if isinstance(table, Table) else getattr(table, "body", None)
    if body is None:
        table[key] = value
        return
    trailing = []
    while body and body[-1][0] is None:
        trailing.insert(0, body.pop())
    table[key] = value
    body.extend(trailing)


def _move_trailing_comments(source: Table, target: Table) -> None:
    """Comments after the last key of ``source`` belong to the table that follows it in the file
    (tomlkit keeps them in ``source``): keep them there when ``target`` is inserted after it."""
    body = source.value.body
    trailing = []
    while body and body[-1][0] is None:
        trailing.insert(0, body.pop())
    if not any(isinstance(item, Comment) for _, item in trailing):
        body.extend(trailing)
        return
    target.value.body.extend(trailing)


def _text(value: Any) -> str:
    plain = _plain(value)
    return repr(plain) if not isinstance(plain, list | dict) else str(plain)
