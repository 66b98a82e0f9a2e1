"""Deterministic shard planning: pack files onto N shards, minimising the slowest shard.

This is P||Cmax (multiway number partitioning). :func:`plan` builds several candidates and keeps
the best, so it is never worse than LPT by construction:

1. **LPT**: sort by ``(-est_time, path)``, give each file to the least-loaded shard (lowest index
   on ties); then a local search that moves one file, or swaps two, between the most loaded shard
   and another whenever that lowers the larger of the two loads.
2. **Karmarkar-Karp** (k-way largest differencing) followed by the same local search, for inputs
   of up to ``KK_MAX_FILES`` files.
3. **Complete greedy** branch-and-bound for up to ``EXACT_MAX_FILES`` files, with a fixed node
   budget (never a clock), seeded with the best makespan so far; exact when it finishes.

The winner has the smallest makespan (ties: the smaller sorted load vector, then the order
above). Arithmetic is on integer microseconds, so the result is the same on every machine, and
the plan is a pure function of the set of ``(path, est_time)`` pairs and the shard count.
"""

from __future__ import annotations

import bisect
import hashlib
import heapq
import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

TICKS_PER_SECOND = 1_000_000
KK_MAX_FILES = 3000
EXACT_MAX_FILES = 40
EXACT_NODE_BUDGET = 20_000
LOCAL_SEARCH_MAX_STEPS = 2_000


@dataclass(frozen=True)
class Plan:
    """A shard assignment and its quality figures (seconds)."""

    shards: list[list[str]]  # paths per shard, longest first (ties by path)
    shard_totals: list[float]
    makespan: float  # the largest shard total
    lower_bound: float  # max(longest file, total / shard count): no plan can beat it
    ratio: float  # makespan / lower_bound (1.0 = provably optimal)
    plan_hash: str  # hex digest over the inputs and the assignment
    algorithm: str  # which candidate won: "lpt", "lpt+search", "kk+search", "exact"
    lpt_makespan: float  # plain LPT's makespan on the same input, for comparison

    @property
    def shard_count(self) -> int:
        return len(self.shards)

    def shard_of(self, path: str) -> int:
        """The shard index holding ``path``."""
        for index, shard in enumerate(self.shards):
            if path in shard:
                return index
        raise KeyError(path)


def _to_ticks(path: str, est: float) -> int:
    if isinstance(est, bool) or not isinstance(est, int | float) or not math.isfinite(est):
        raise ValueError(f"est_time of {path!r} must be a finite number, got {est!r}")
    if est < 0:
        raise ValueError(f"est_time of {path!r} must be 0 or more, got {est!r}")
    return max(1, round(est * TICKS_PER_SECOND))  # est_time=0 packs as one tick


def plan(items: Sequence[tuple[str, float]], shard_count: int) -> Plan:
    """Assign every ``(path, est_time)`` to one of ``shard_count`` shards; see the module doc."""
    if isinstance(shard_count, bool) or not isinstance(shard_count, int) or shard_count < 1:
        raise ValueError(f"shard_count must be a positive integer, got {shard_count!r}")
    ordered = sorted(((str(p), e) for p, e in items), key=lambda it: it[0])
    paths = [p for p, _ in ordered]
    for previous, current in itertools.pairwise(paths):
        if previous == current:
            raise ValueError(f"path {current!r} appears twice in the plan input")
    ests = {p: float(e) for p, e in ordered}
    ticks = {p: _to_ticks(p, e) for p, e in ordered}
    # Items in LPT order: index 0 is the longest file.
    order = sorted(paths, key=lambda p: (-ticks[p], p))
    sizes = [ticks[p] for p in order]

    lpt = _lpt(sizes, shard_count)
    candidates: list[tuple[str, list[list[int]]]] = [("lpt", lpt)]
    searched = _local_search(lpt, sizes)
    candidates.append(("lpt+search", searched))
    if 2 < len(sizes) <= KK_MAX_FILES and shard_count > 1:
        candidates.append(("kk+search", _local_search(_karmarkar_karp(sizes, shard_count), sizes)))
    if len(sizes) <= EXACT_MAX_FILES and shard_count > 1:
        best_so_far = min(_makespan(groups, sizes) for _, groups in candidates)
        exact = _branch_and_bound(sizes, shard_count, best_so_far)
        if exact is not None:
            candidates.append(("exact", exact))
    name, groups = min(enumerate(candidates), key=lambda c: (_quality(c[1][1], sizes), c[0]))[1]
    groups = _canonical(groups)
    shards = [[order[i] for i in sorted(group)] for group in groups]
    totals = [math.fsum(ests[p] for p in shard) for shard in shards]
    lpt_totals = [math.fsum(ests[order[i]] for i in group) for group in lpt]
    makespan = max(totals, default=0.0)
    lower_bound = max(max(ests.values(), default=0.0), math.fsum(ests.values()) / shard_count)
    ratio = makespan / lower_bound if lower_bound > 0 else 1.0
    return Plan(
        shards=shards,
        shard_totals=totals,
        makespan=makespan,
        lower_bound=lower_bound,
        ratio=ratio,
        plan_hash=_hash(ordered, shard_count, shards),
        algorithm=name,
        lpt_makespan=max(lpt_totals, default=0.0),
    )


def upstream_plan(items: Sequence[tuple[str, float]], shard_count: int) -> Plan:
    """SGLang's ``auto_partition``, exactly (``plan = "upstream"`` in the catalog): sort by
    ``(-est, path)``, give each file to the shard with the smallest running float sum (lowest
    index on ties), keep the shards in that numbering and each shard in that order. For
    comparing logs with that runner's during a migration; :func:`plan` is never worse."""
    if isinstance(shard_count, bool) or not isinstance(shard_count, int) or shard_count < 1:
        raise ValueError(f"shard_count must be a positive integer, got {shard_count!r}")
    ordered = sorted(((str(p), float(e)) for p, e in items), key=lambda it: it[0])
    for (previous, _), (current, _) in itertools.pairwise(ordered):
        if previous == current:
            raise ValueError(f"path {current!r} appears twice in the plan input")
    for path, est in ordered:
        _to_ticks(path, est)  # the same checks of each value as plan()
    shards: list[list[str]] = [[] for _ in range(shard_count)]
    sums = [0.0] * shard_count
    for path, est in sorted(ordered, key=lambda it: (-it[1], it[0])):
        index = min(range(shard_count), key=sums.__getitem__)
        shards[index].append(path)
        sums[index] += est
    ests = dict(ordered)
    totals = [math.fsum(ests[p] for p in shard) for shard in shards]
    makespan = max(totals, default=0.0)
    lower_bound = max(max(ests.values(), default=0.0), math.fsum(ests.values()) / shard_count)
    return Plan(
        shards=shards,
        shard_totals=totals,
        makespan=makespan,
        lower_bound=lower_bound,
        ratio=makespan / lower_bound if lower_bound > 0 else 1.0,
        plan_hash=_hash(ordered, shard_count, shards),
        algorithm="upstream",
        lpt_makespan=makespan,
    )


def lpt_plan(items: Sequence[tuple[str, float]], shard_count: int) -> list[list[str]]:
    """Plain LPT shards (paths, longest first), the baseline :func:`plan` never loses to."""
    ordered = sorted(items, key=lambda it: (-_to_ticks(it[0], it[1]), it[0]))
    groups = _lpt([_to_ticks(p, e) for p, e in ordered], shard_count)
    return [[ordered[i][0] for i in sorted(group)] for group in groups]


def _makespan(groups: list[list[int]], sizes: list[int]) -> int:
    return max((sum(sizes[i] for i in g) for g in groups), default=0)


def _quality(groups: list[list[int]], sizes: list[int]) -> tuple[int, list[int]]:
    loads = sorted((sum(sizes[i] for i in g) for g in groups), reverse=True)
    return (loads[0] if loads else 0, loads)


def _canonical(groups: list[list[int]]) -> list[list[int]]:
    """Number shards by their longest file: shard 0 holds the longest file; empty shards last."""
    return sorted(groups, key=lambda g: min(g) if g else math.inf)


def _lpt(sizes: list[int], shard_count: int) -> list[list[int]]:
    """Greedy in the given (descending) order onto the least-loaded shard, lowest index on ties."""
    groups: list[list[int]] = [[] for _ in range(shard_count)]
    heap = [(0, index) for index in range(shard_count)]
    for item, size in enumerate(sizes):
        load, index = heapq.heappop(heap)
        groups[index].append(item)
        heapq.heappush(heap, (load + size, index))
    return groups


def _local_search(groups: list[list[int]], sizes: list[int]) -> list[list[int]]:
    """Move/swap files out of the most loaded shard while that lowers the pair's larger load.

    Each accepted step strictly lowers max(load_a, load_b) and leaves other shards alone, so the
    sorted load vector decreases and the makespan never rises; steps are capped for speed.
    """
    shard_count = len(groups)
    if shard_count < 2:
        return [list(g) for g in groups]
    # Per shard: sorted list of (size, item).
    members = [sorted((sizes[i], i) for i in g) for g in groups]
    loads = [sum(s for s, _ in m) for m in members]
    for _ in range(LOCAL_SEARCH_MAX_STEPS):
        a = max(range(shard_count), key=lambda k: (loads[k], -k))
        step = _best_step(a, members, loads)
        if step is None:
            break
        b, give, take = step
        members[a].remove(give)
        loads[a] -= give[0]
        bisect.insort(members[b], give)
        loads[b] += give[0]
        if take is not None:
            members[b].remove(take)
            loads[b] -= take[0]
            bisect.insort(members[a], take)
            loads[a] += take[0]
    return [[i for _, i in m] for m in members]


def _best_step(
    a: int, members: list[list[tuple[int, int]]], loads: list[int]
) -> tuple[int, tuple[int, int], tuple[int, int] | None] | None:
    """The first shard (least loaded first) that can take a move or swap from shard ``a``,
    with the move/swap that best balances the pair."""
    for b in sorted(range(len(loads)), key=lambda k: (loads[k], k)):
        gap = loads[a] - loads[b]
        if b == a or gap <= 1:
            continue
        best: tuple[int, tuple[int, int], tuple[int, int] | None] | None = None
        # A move of size d or a swap exchanging net d improves the pair iff 0 < d < gap;
        # the closer d is to gap / 2, the better.
        for give in members[a]:
            for take in _swap_partners(give, members[b], gap):
                delta = give[0] - (take[0] if take else 0)
                if 0 < delta < gap:
                    score = abs(2 * delta - gap)
                    if best is None or score < best[0]:
                        best = (score, give, take)
        if best is not None:
            return b, best[1], best[2]
    return None


def _swap_partners(
    give: tuple[int, int], partners: list[tuple[int, int]], gap: int
) -> list[tuple[int, int] | None]:
    """Candidates from the other shard: nothing (a plain move) or the two files whose size is
    nearest to ``give - gap / 2``."""
    target = give[0] - gap / 2
    position = bisect.bisect_left(partners, (target, -1))
    out: list[tuple[int, int] | None] = [None]
    out.extend(partners[j] for j in (position - 1, position) if 0 <= j < len(partners))
    return out


def _karmarkar_karp(sizes: list[int], shard_count: int) -> list[list[int]]:
    """k-way largest differencing: repeatedly merge the two partial partitions whose spread
    (max - min subset sum) is largest, joining the heaviest subset of one with the lightest of
    the other."""
    heap: list[tuple[int, int, list[tuple[int, object]]]] = []
    for item, size in enumerate(sizes):
        parts: list[tuple[int, object]] = [(size, item)] + [(0, None)] * (shard_count - 1)
        heap.append((-size, item, parts))
    heapq.heapify(heap)
    sequence = len(sizes)
    while len(heap) > 1:
        _, _, first = heapq.heappop(heap)
        _, _, second = heapq.heappop(heap)
        merged = [(x[0] + y[0], (x[1], y[1])) for x, y in zip(first, reversed(second), strict=True)]
        merged.sort(key=lambda part: -part[0])
        heapq.heappush(heap, (merged[-1][0] - merged[0][0], sequence, merged))
        sequence += 1
    return [_flatten(tree) for _, tree in heap[0][2]] if heap else []


def _flatten(tree: object) -> list[int]:
    out: list[int] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if node is None:
            continue
        if isinstance(node, int):
            out.append(node)
        else:
            stack.extend(node)  # type: ignore[arg-type]
    return out


def _branch_and_bound(sizes: list[int], shard_count: int, upper: int) -> list[list[int]] | None:
    """Complete greedy search for a makespan below ``upper`` (None if none found in budget)."""
    total = sum(sizes)
    lower = max(max(sizes, default=0), -(-total // shard_count))
    if upper <= lower:
        return None
    loads = [0] * shard_count
    assignment = [0] * len(sizes)
    best: list[int] | None = None
    best_makespan = upper
    nodes = 0

    def descend(item: int, current_max: int) -> bool:
        nonlocal best, best_makespan, nodes
        if item == len(sizes):
            best, best_makespan = list(assignment), current_max
            return best_makespan <= lower
        nodes += 1
        if nodes > EXACT_NODE_BUDGET:
            return True
        size = sizes[item]
        tried: set[int] = set()
        for shard in sorted(range(shard_count), key=lambda k: (loads[k], k)):
            load = loads[shard]
            if load in tried:
                continue
            tried.add(load)
            if load + size >= best_makespan:
                break
            loads[shard] += size
            assignment[item] = shard
            if descend(item + 1, max(current_max, load + size)):
                loads[shard] -= size
                return True
            loads[shard] -= size
        return False

    descend(0, 0)
    if best is None:
        return None
    groups: list[list[int]] = [[] for _ in range(shard_count)]
    for item, shard in enumerate(best):
        groups[shard].append(item)
    return groups


def _hash(ordered: list[tuple[str, float]], shard_count: int, shards: list[list[str]]) -> str:
    payload = json.dumps(
        {"items": [[p, float(e)] for p, e in ordered], "n": shard_count, "shards": shards},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]
