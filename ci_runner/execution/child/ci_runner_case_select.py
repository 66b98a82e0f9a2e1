"""Which cases a test file's process runs: the runner's case selection, read in the child.

The runner names the cases of an attempt in a JSON file (``$CI_RUNNER_CASE_SELECTION``)::

    {"only": ["registered/test_x.py::TestA::test_b", ...] or null, "skip": [id, ...]}

``only`` (``--tests``, ``--from-junit``): a case runs when one entry names it, its class, or its
test without the parameter id (``test_b`` names ``test_b[1]``), as pytest's own node ids do;
``null`` means every case. ``skip`` (a retry, or the rest of a file after a crash): the exact ids
of cases that already have a result. The pytest plugin deselects the other cases after
collection; the unittest hook leaves them out of ``TestLoader.getTestCaseNames``, so neither
their fixtures nor their tests run. Ids are those of the case record
(:mod:`ci_runner_case_record`). The first process that selects cases takes the selection out of
its environment, so a test that runs tests of its own in a subprocess runs them all. Standard
library only.
"""

from __future__ import annotations

import os

SELECTION_VARIABLE = "CI_RUNNER_CASE_SELECTION"

_loaded = False
_only: tuple[str, ...] | None = None
_skip: frozenset[str] = frozenset()


def _load() -> None:
    global _loaded, _only, _skip
    if _loaded:
        return
    _loaded = True
    path = os.environ.pop(SELECTION_VARIABLE, None)  # this process selects; its children do not
    if not path:
        return
    import json  # here: a process that selects nothing never imports it

    with open(path, encoding="utf-8") as handle:  # the runner wrote it: an error is a bug
        data = json.load(handle)
    only = data.get("only")
    _only = None if only is None else tuple(str(i) for i in only)
    _skip = frozenset(str(i) for i in data.get("skip") or ())


def active() -> bool:
    """A selection applies to this process (call it only where cases are being selected)."""
    _load()
    return _only is not None or bool(_skip)


def _named(entry: str, case_id: str) -> bool:
    return case_id == entry or case_id.startswith((entry + "::", entry + "["))


def wanted(case_id: str) -> bool:
    """Whether the case ``case_id`` runs under the selection."""
    _load()
    if case_id in _skip:
        return False
    return _only is None or any(_named(entry, case_id) for entry in _only)
