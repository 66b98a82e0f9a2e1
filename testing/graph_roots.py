"""The selection with the static graph of the undecided tests against the graph of every test
(not a test file): verification/reduced_graph_check.py runs it on real trees,
registered/ci_runner/test_reduced_graph.py on generated ones."""

from __future__ import annotations

from unittest import mock

from ci_runner.catalog import Catalog
from ci_runner.impact import Change, ChangeSet, Reason, select_changed
from ci_runner.impact import selection as selection_module
from ci_runner.select import Selection


class Decided:
    """A recorded layer that decides ``tests`` and keeps none of them."""

    def __init__(self, tests: set[str]) -> None:
        self.tests = tests

    def read_paths(self) -> set[str]:
        return set()

    def decides(self, test: str) -> bool:
        return test in self.tests

    def reason(self, test: str, changes: tuple[Change, ...]) -> Reason | None:
        return None


def kept_undecided(
    selection: Selection, catalog: Catalog, change_set: ChangeSet, decided: set[str], full: bool
) -> dict[str, str]:
    """The undecided tests the selection keeps, each with its reason's text; ``full``: with the
    graph built from every test (as before), else as shipped."""
    real = selection_module.DependencyGraph
    everyone = {f.path for f in selection.files}

    def graph(config, index, cache, tests, *rest, **named):
        return real(config, index, cache, everyone if full else tests, *rest, **named)

    with mock.patch.object(selection_module, "DependencyGraph", graph):
        impact = select_changed(selection, catalog, change_set, Decided(decided))
    if impact.run_everything:
        return {t: "runs everything" for t in everyone - decided}
    return {t: r.text() for t, r in impact.reasons.items() if t not in decided}
