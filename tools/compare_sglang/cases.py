"""The cases upstream knows: every (hw, suite) of its suite tables, its registrations and its
workflows, each with and without ``--nightly``, plus each sharded workflow invocation at its
shard count."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ci_runner.workflows.invocations import Invocation
from tools.compare_sglang.upstream import Registration


@dataclass(frozen=True, order=True)
class Case:
    """One invocation of both runners: ``size`` None is the whole suite, else every shard."""

    hw: str
    suite: str
    nightly: bool
    size: int | None = None

    @property
    def label(self) -> str:
        nightly = " --nightly" if self.nightly else ""
        shards = f" [{self.size} shard(s)]" if self.size is not None else ""
        return f"{self.hw}:{self.suite!r}{nightly}{shards}"

    @property
    def shard_ids(self) -> list[int | None]:
        return [None] if self.size is None else list(range(self.size))


def enumerate_cases(
    tables: dict[str, dict[str, list[str]]],
    registrations: Iterable[Registration],
    invocations: Iterable[Invocation],
) -> dict[Case, list[str]]:
    """Every case, sorted, with where it comes from (table names, "registered", workflow lines)."""
    sources: dict[Case, list[str]] = {}
    pairs: dict[tuple[str, str], list[str]] = {}
    for table, by_hw in tables.items():
        for hw, suites in by_hw.items():
            for suite in suites:
                pairs.setdefault((hw, suite), []).append(table)
    for registration in registrations:
        if registration.hw is not None and registration.suite is not None:
            pairs.setdefault((registration.hw, registration.suite), []).append("registered")
    for invocation in invocations:
        pairs.setdefault((invocation.hw, invocation.suite), [])
        if invocation.size is not None:
            key = Case(invocation.hw, invocation.suite, invocation.nightly, invocation.size)
            sources.setdefault(key, []).append(invocation.where)
        else:
            key = Case(invocation.hw, invocation.suite, invocation.nightly)
            sources.setdefault(key, []).append(invocation.where)
    for (hw, suite), where in pairs.items():
        for nightly in (False, True):
            found = sources.setdefault(Case(hw, suite, nightly), [])
            found.extend(w for w in dict.fromkeys(where) if w not in found)
    return {
        case: sorted(set(sources[case]), key=sources[case].index)
        for case in sorted(sources, key=_order)
    }


def _order(case: Case) -> tuple:
    return (case.hw, case.suite, case.nightly, case.size or 0)
