"""The shard planner: coverage, determinism, the LPT guarantee, bounds and input validation."""

import heapq
import itertools
import random
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_runner import register_cpu_ci
from ci_runner.plan.packing import lpt_plan, plan, upstream_plan

register_cpu_ci(est_time=8, suite="base-a-test-cpu")


def reference_lpt_makespan(items, shard_count):
    """Textbook LPT, written independently of the planner: sort (-est, path), least loaded."""
    loads = [(0.0, k) for k in range(shard_count)]
    for _, est in sorted(items, key=lambda it: (-it[1], it[0])):
        load, k = heapq.heappop(loads)
        heapq.heappush(loads, (load + est, k))
    return max(load for load, _ in loads)


def brute_force_optimum(ests, shard_count):
    best = float("inf")
    for assignment in itertools.product(range(shard_count), repeat=len(ests)):
        loads = [0.0] * shard_count
        for est, k in zip(ests, assignment, strict=True):
            loads[k] += est
        best = min(best, max(loads))
    return best


def instance(rng, n, kind):
    if kind == "lognormal":
        ests = [rng.lognormvariate(3.0, 1.0) for _ in range(n)]
    elif kind == "pareto":
        ests = [10 * rng.paretovariate(1.5) for _ in range(n)]
    else:
        ests = [
            rng.uniform(300, 900) if rng.random() < 0.2 else rng.uniform(5, 30) for _ in range(n)
        ]
    return [(f"registered/t/test_{i:04d}.py", round(e, 3)) for i, e in enumerate(ests)]


def test_every_file_in_exactly_one_shard_and_totals_match():
    items = instance(random.Random(7), 60, "lognormal")
    result = plan(items, 7)
    assert len(result.shards) == 7
    flat = [p for shard in result.shards for p in shard]
    assert sorted(flat) == sorted(p for p, _ in items)
    est = dict(items)
    for shard, total in zip(result.shards, result.shard_totals, strict=True):
        assert total == pytest.approx(sum(est[p] for p in shard))
    assert result.makespan == max(result.shard_totals)


def test_files_within_a_shard_run_longest_first_ties_by_path():
    items = [("b.py", 5), ("a.py", 5), ("c.py", 9), ("d.py", 1)]
    (shard,) = plan(items, 1).shards
    assert shard == ["c.py", "a.py", "b.py", "d.py"]


def test_more_shards_than_files_leaves_trailing_shards_empty():
    result = plan([("a.py", 3), ("b.py", 10)], 5)
    assert result.shards == [["b.py"], ["a.py"], [], [], []]
    assert result.shard_totals == [10, 3, 0, 0, 0]
    assert result.makespan == 10 and result.lower_bound == 10 and result.ratio == 1.0


def test_no_files_gives_empty_shards():
    result = plan([], 3)
    assert result.shards == [[], [], []]
    assert (result.makespan, result.lower_bound, result.ratio) == (0.0, 0.0, 1.0)


def test_plan_is_a_pure_function_of_the_set_of_items():
    items = instance(random.Random(3), 80, "bimodal")
    first = plan(items, 6)
    shuffled = list(items)
    random.Random(99).shuffle(shuffled)
    second = plan(shuffled, 6)
    assert first == second
    assert len(first.plan_hash) == 16 and int(first.plan_hash, 16) >= 0


def test_plan_hash_changes_with_inputs_and_shard_count():
    items = [("a.py", 3), ("b.py", 2), ("c.py", 2)]
    hashes = {
        plan(items, 2).plan_hash,
        plan(items, 3).plan_hash,
        plan([*items[:2], ("c.py", 2.5)], 2).plan_hash,
        plan([*items[:2], ("d.py", 2)], 2).plan_hash,
    }
    assert len(hashes) == 4
    assert plan(items, 2).plan_hash == plan(list(reversed(items)), 2).plan_hash


def test_lower_bound_is_max_of_longest_file_and_average():
    assert plan([("a", 10), ("b", 1), ("c", 1)], 2).lower_bound == 10
    assert plan([("a", 4), ("b", 4), ("c", 4)], 2).lower_bound == 6
    result = plan([("a", 4), ("b", 4), ("c", 4)], 2)
    assert result.makespan == 8 and result.ratio == pytest.approx(8 / 6)


def test_improves_on_lpt_where_lpt_is_known_to_be_suboptimal():
    # LPT puts 3,2,2 | 3,2 -> 7; the optimum is 3,3 | 2,2,2 -> 6.
    items = [("a", 3), ("b", 3), ("c", 2), ("d", 2), ("e", 2)]
    assert reference_lpt_makespan(items, 2) == 7
    result = plan(items, 2)
    assert result.makespan == 6 and result.lpt_makespan == 7
    assert sorted(map(sorted, result.shards)) == [["a", "b"], ["c", "d", "e"]]


def test_graham_worst_case_instance_is_solved_optimally():
    # 2m+1 jobs: 2m-1, 2m-1, 2m-2, 2m-2, ..., m, m, m: LPT = 4m-1, OPT = 3m.
    m = 4
    ests = [2 * m - 1 - i // 2 for i in range(2 * m)] + [m]
    items = [(f"f{i}", e) for i, e in enumerate(ests)]
    assert reference_lpt_makespan(items, m) == 4 * m - 1
    assert plan(items, m).makespan == 3 * m


@pytest.mark.parametrize("seed", range(6))
def test_small_instances_reach_the_brute_force_optimum(seed):
    rng = random.Random(seed)
    ests = [rng.randint(1, 30) for _ in range(8)]
    items = [(f"f{i}", e) for i, e in enumerate(ests)]
    for shard_count in (2, 3):
        assert plan(items, shard_count).makespan == brute_force_optimum(ests, shard_count)


def test_never_worse_than_lpt_on_heavy_tailed_instances():
    rng = random.Random(2024)
    improved = 0
    for kind in ("lognormal", "pareto", "bimodal"):
        for n in (10, 25, 60, 150):
            for shard_count in (2, 3, 5, 8, 16):
                items = instance(rng, n, kind)
                result = plan(items, shard_count)
                lpt = reference_lpt_makespan(items, shard_count)
                assert result.lpt_makespan == pytest.approx(lpt)
                assert result.makespan <= lpt + 1e-9
                assert result.makespan >= result.lower_bound - 1e-9
                assert result.ratio == pytest.approx(result.makespan / result.lower_bound)
                improved += result.makespan < lpt - 1e-9
    assert improved > 0


def test_lpt_plan_is_the_textbook_algorithm():
    items = [("a", 5), ("b", 4), ("c", 3), ("d", 3), ("e", 1)]
    assert lpt_plan(items, 2) == [["a", "d"], ["b", "c", "e"]]


def test_ten_thousand_files_plan_in_under_a_second():
    items = instance(random.Random(1), 10_000, "lognormal")
    start = time.perf_counter()
    result = plan(items, 32)
    assert time.perf_counter() - start < 1.0
    assert sum(len(s) for s in result.shards) == 10_000
    assert result.ratio < 1.001


@pytest.mark.parametrize(
    "items,shards,message",
    [
        ([("a", 1)], 0, "shard_count must be a positive integer, got 0"),
        ([("a", 1)], True, "shard_count must be a positive integer, got True"),
        ([("a", 1), ("a", 2)], 2, "path 'a' appears twice in the plan input"),
        ([("a", -1)], 2, "est_time of 'a' must be 0 or more, got -1"),
        ([("a", float("nan"))], 2, "est_time of 'a' must be a finite number, got nan"),
        ([("a", "3")], 2, "est_time of 'a' must be a finite number, got '3'"),
    ],
)
def test_invalid_input_raises_value_error(items, shards, message):
    with pytest.raises(ValueError) as info:
        plan(items, shards)
    assert str(info.value) == message


# --- plan = "upstream": SGLang's auto_partition, exactly ----------------------------------------


def reference_auto_partition(items, shard_count):
    """SGLang's documented auto_partition, written out here: sort by (-est, path), each file to
    the first shard with the smallest running float sum; shards keep that order."""
    shards = [[] for _ in range(shard_count)]
    sums = [0.0] * shard_count
    for path, est in sorted(items, key=lambda it: (-it[1], it[0])):
        index = sums.index(min(sums))
        shards[index].append(path)
        sums[index] += est
    return shards


def test_upstream_plan_by_hand():
    items = [("d", 1.0), ("a", 5.0), ("c", 3.0), ("b", 3.0), ("e", 0.0)]
    # a -> 0 (5); b -> 1 (3, b before c on the tie); c -> 1 (6); d -> 0 (6); e -> 0 (tie, lowest)
    assert upstream_plan(items, 2).shards == [["a", "d", "e"], ["b", "c"]]
    assert upstream_plan(items, 7).shards == [["a"], ["b"], ["c"], ["d"], ["e"], [], []]
    assert upstream_plan(items, 2).algorithm == "upstream"


def test_upstream_plan_sums_floats_as_upstream_does():
    # 0.1 + 0.2 > 0.3 in floating point: the third file goes to shard 1, as upstream's sums say
    items = [("a", 0.3), ("b", 0.2), ("c", 0.1), ("d", 0.05)]
    assert upstream_plan(items, 2).shards == reference_auto_partition(items, 2)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text("abcdef/_.", min_size=1, max_size=6),
            st.one_of(st.integers(0, 4000).map(float), st.floats(0, 4000, allow_nan=False)),
        ),
        max_size=40,
        unique_by=lambda it: it[0],
    ),
    st.integers(1, 12),
)
def test_upstream_plan_equals_the_reference_and_plan_is_never_worse(items, shard_count):
    upstream = upstream_plan(items, shard_count)
    assert upstream.shards == reference_auto_partition(items, shard_count)
    assert plan(items, shard_count).makespan <= upstream.makespan + 1e-6


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
