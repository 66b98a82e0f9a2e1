"""CPU tests of do_bench's pure parts: metrics, input-set sizing, clone selection, byte counting,
argument validation, and its clear error without CUDA."""

import sys
from collections import namedtuple

import pytest
import torch

from ci_runner import register_cpu_ci
from jit_kernel.benchmark import marker
from jit_kernel.benchmark.metrics import compute_metrics, metric_label, normalize_metrics
from jit_kernel.benchmark.timing import (
    DoBenchError,
    calls_per_replay,
    check_input_sets,
    choose_input_sets,
    clone_tensor,
    count_bytes,
    deep_clone,
    select_clone_indices,
    select_clone_keys,
)

register_cpu_ci(est_time=8, suite="base-a-test-cpu")

MB = 1 << 20
H100_L2 = 50 * MB


def test_metrics_quantiles_interpolate_and_avg_is_the_mean():
    samples = [4.0, 1.0, 3.0, 2.0]  # unsorted on purpose
    assert compute_metrics(samples, (0.5, "avg", 0.0, 1.0, 0.25)) == (2.5, 2.5, 1.0, 4.0, 1.75)
    assert compute_metrics([7.0], (0.5, 0.9, "avg")) == (7.0, 7.0, 7.0)
    assert compute_metrics([1.0, 2.0, 10.0], ("avg",)) == (pytest.approx(13 / 3),)


def test_metrics_of_no_samples_is_an_error():
    with pytest.raises(ValueError, match="no samples"):
        compute_metrics([], (0.5,))


def test_normalize_metrics():
    assert normalize_metrics((0.5, "mean", 1)) == (0.5, "avg", 1.0)
    assert [metric_label(m) for m in (0.5, 0.999, 0.0, "avg")] == ["p50", "p99.9", "p0", "avg"]
    for bad, message in [
        ((1.5,), r"1.5 is neither a quantile in \[0, 1\]"),
        ((-0.1,), "-0.1 is neither"),
        (("median",), "'median' is neither"),
        ((True,), "True is neither"),
        ((), "at least one metric"),
        ("avg", "must be a sequence"),
    ]:
        with pytest.raises(ValueError, match=message):
            normalize_metrics(bad)


def test_input_sets_follow_the_l2_size():
    # 4 x L2 / set + 1, at least 2, at most 64
    assert choose_input_sets(10 * MB, H100_L2) == 21
    assert choose_input_sets(50 * MB, H100_L2) == 5
    assert choose_input_sets(300 * MB, H100_L2) == 2
    assert choose_input_sets(8 * 1024, H100_L2) == 64
    assert choose_input_sets(10 * MB, 40 * MB) == 17  # A100-sized L2
    assert choose_input_sets(10 * MB, H100_L2, factor=3, cap=100) == 16
    assert choose_input_sets(0, H100_L2) == 1  # nothing cloned: nothing to rotate


def test_calls_per_replay_is_a_multiple_of_the_sets_near_100():
    assert calls_per_replay(1) == 100
    assert calls_per_replay(4) == 100
    assert calls_per_replay(21) == 105
    assert calls_per_replay(64) == 128
    assert calls_per_replay(101) == 101


def test_clone_selection():
    args = (1, 2, 3)
    assert select_clone_indices("all", args) == (0, 1, 2)
    assert select_clone_indices(None, args) == ()
    assert select_clone_indices((), args) == ()
    assert select_clone_indices([2, 0, -1], args) == (0, 2)
    kwargs = {"a": 1, "b": 2}
    assert select_clone_keys("all", kwargs) == ("a", "b")
    assert select_clone_keys(["b"], kwargs) == ("b",)
    assert select_clone_keys(None, kwargs) == ()


@pytest.mark.parametrize(
    ("selection", "message"),
    [
        ((3,), "graph_clone_args index 3 is out of range for 3 input_args"),
        ((-4,), "index -4 is out of range"),
        (("0",), "graph_clone_args entry '0' is not an int index"),
        ((True,), "entry True is not an int index"),
        ("first", "graph_clone_args must be 'all', None or indices"),
        (5, "must be 'all', None or indices into input_args, got 5"),
    ],
)
def test_bad_clone_indices(selection, message):
    with pytest.raises(DoBenchError, match=message):
        select_clone_indices(selection, (1, 2, 3))


def test_bad_clone_keys():
    with pytest.raises(DoBenchError, match=r"key 'c' is not in input_kwargs \(keys: 'a', 'b'\)"):
        select_clone_keys(["c"], {"a": 1, "b": 2})
    with pytest.raises(DoBenchError, match="graph_clone_kwargs must be 'all', None or keys"):
        select_clone_keys("a", {"a": 1})


def test_count_bytes_recurses_and_ignores_non_tensors():
    a = torch.zeros(10, dtype=torch.float32)
    b = torch.zeros(3, 4, dtype=torch.bfloat16)
    assert count_bytes(a) == 40
    assert count_bytes((a, [b, 2.0], {"x": a, "y": None})) == 40 + 24 + 40
    assert count_bytes(None) == 0
    assert count_bytes(a[::2]) == 20  # logical bytes of the view


def test_clone_tensor_keeps_layout_and_alignment_phase():
    base = torch.arange(200.0)
    for view in (
        base,
        base[1:],
        base[3:100:2],
        base[:100].view(10, 10).t(),
        base[:4].expand(5, 4),
        base[:0],
    ):
        copy = clone_tensor(view)
        assert torch.equal(copy, view)
        assert copy.stride() == view.stride()
        assert copy.storage_offset() % 64 == view.storage_offset() % 64
        if view.numel():
            assert copy.data_ptr() != view.data_ptr()


def test_deep_clone():
    Pair = namedtuple("Pair", "x y")
    t = torch.ones(3)
    cloned = deep_clone({"a": [t, 2, None], "p": Pair(t, torch.float16)}, "input_kwargs")
    assert cloned["a"][0] is not t and torch.equal(cloned["a"][0], t)
    assert cloned["a"][1:] == [2, None]
    assert isinstance(cloned["p"], Pair) and cloned["p"].y is torch.float16
    with pytest.raises(DoBenchError, match=r"cannot clone input_args\[0\]\['k'\] of type object"):
        deep_clone({"k": object()}, "input_args[0]")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"metrics": (2,)}, r"do_bench: metrics: 2 is neither a quantile"),
        ({"input_args": "abc"}, "input_args must be a tuple or list"),
        ({"input_kwargs": [1]}, "input_kwargs must be a dict"),
        ({"warmup_iters": -1}, "warmup_iters must be an int >= 0, got -1"),
        ({"replay_iters": 0}, "replay_iters must be an int >= 1"),
        ({"eager_iters": 1.5}, "eager_iters must be an int >= 1, got 1.5"),
        ({"max_input_sets": 1}, "max_input_sets must be an int >= 2"),
        ({"rotation_factor": 0}, "rotation_factor must be > 0"),
        ({"memory_args": "inputs"}, "memory_args must be 'all', None or tensors"),
        ({"memory_output": "return"}, "memory_output must be 'out', None or tensors"),
        ({"graph_clone_args": (1,)}, "graph_clone_args index 1 is out of range for 1"),
        ({"graph_clone_kwargs": ("z",)}, "graph_clone_kwargs key 'z' is not in input_kwargs"),
        ({"graph_input_sets": []}, r"graph_input_sets must be a non-empty tuple or list"),
        ({"graph_input_sets": [((1,), {})], "use_cuda_graph": False}, "needs use_cuda_graph=True"),
        (
            {"graph_input_sets": [((1,), {})], "graph_clone_args": (0,)},
            "graph_input_sets already holds the rotation; leave graph_clone_args",
        ),
    ],
)
def test_do_bench_rejects_bad_arguments_before_touching_the_gpu(kwargs, message):
    call = {"input_args": (torch.zeros(1),), **kwargs}
    with pytest.raises(DoBenchError, match=message):
        marker.do_bench(lambda *a, **k: None, **call)


def test_do_bench_rejects_a_non_callable():
    with pytest.raises(DoBenchError, match="fn must be callable, got 3"):
        marker.do_bench(3)


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        ("ab", r"graph_input_sets must be a non-empty tuple or list of \(args, kwargs\) pairs"),
        ((), "make_input_sets makes one"),
        ([((1,), {}), (1,)], r"graph_input_sets\[1\] must be an \(args, kwargs\) pair, got \(1,\)"),
        ([("x", {})], r"graph_input_sets\[0\]: input_args must be a tuple or list, got 'x'"),
        ([((1,), [2])], r"graph_input_sets\[0\]: input_kwargs must be a dict, got \[2\]"),
    ],
)
def test_bad_graph_input_sets_name_the_set_and_what_was_expected(sets, message):
    with pytest.raises(DoBenchError, match=message):
        check_input_sets(sets)


def test_good_graph_input_sets_become_lists_and_dicts():
    t = torch.zeros(2)
    assert check_input_sets([((t, 1), None), [[t], {"k": 2}]]) == (([t, 1], {}), ([t], {"k": 2}))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"input_args": 3}, "make_input_sets: input_args must be a tuple or list, got 3"),
        ({"max_input_sets": 1}, "make_input_sets: max_input_sets must be an int >= 2, got 1"),
        ({"rotation_factor": -1}, "make_input_sets: rotation_factor must be > 0, got -1"),
        ({"graph_clone_args": (4,)}, "graph_clone_args index 4 is out of range for 1"),
    ],
)
def test_make_input_sets_rejects_bad_arguments_before_touching_the_gpu(kwargs, message):
    call = {"input_args": (torch.zeros(1),), **kwargs}
    with pytest.raises(DoBenchError, match=message):
        marker.make_input_sets(**call)


def test_make_input_sets_without_cuda_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="make_input_sets needs a CUDA device"):
        marker.make_input_sets((torch.zeros(4),))


def test_do_bench_reads_the_bandwidth_switch_at_call_time(monkeypatch):
    monkeypatch.setenv("SGLANG_KERNEL_DISABLE_LOG_BANDWIDTH", "perhaps")
    with pytest.raises(ValueError, match="SGLANG_KERNEL_DISABLE_LOG_BANDWIDTH='perhaps'"):
        marker.do_bench(lambda: None)
    # An explicit argument does not consult the environment.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="needs a CUDA device"):
        marker.do_bench(lambda: None, disable_log_bandwidth=True)


def test_do_bench_without_cuda_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(
        RuntimeError, match=r"do_bench needs a CUDA device, but torch.cuda.is_available\(\)"
    ):
        marker.do_bench(lambda x: x, input_args=(torch.zeros(4),))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
