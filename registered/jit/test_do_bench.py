"""GPU tests of marker.do_bench: sane metrics, byte accounting, graph vs eager, input rotation."""

import sys

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)
import torch

from ci_runner import register_cuda_ci
from jit_kernel.benchmark import marker, timing
from jit_kernel.benchmark.timing import calls_per_replay, choose_input_sets, l2_cache_bytes
from testing.skip import skip_module_unless

register_cuda_ci(est_time=8, suite="base-b-kernel-unit-1-gpu-large")

skip_module_unless(torch.cuda.is_available(), "do_bench needs a CUDA device")

MB = 1 << 20
L2 = l2_cache_bytes(torch.device("cuda")) if torch.cuda.is_available() else 0


def double(x):
    return x * 2


def test_metrics_are_sane():
    x = torch.randn(1 << 20, device="cuda")
    result = marker.do_bench(double, input_args=(x,), metrics=(0.5, "avg", 0.2, 0.8))
    assert result.metric_labels == ("p50", "avg", "p20", "p80")
    p50, avg, p20, p80 = result.times
    assert 0 < result.min_time <= p20 <= p50 <= p80 <= result.max_time
    assert result.min_time <= avg <= result.max_time
    assert 1e-7 < p50 < 1e-3  # a 4 MB elementwise op: between 0.1 us and 1 ms
    assert result.mode == "graph"
    assert result.num_samples >= 10
    assert result.calls_per_sample % result.input_sets == 0


def test_default_bytes_are_inputs_plus_returned_output():
    x = torch.randn(1 << 20, device="cuda", dtype=torch.bfloat16)
    result = marker.do_bench(double, input_args=(x,))
    assert result.memory_footprint == 2 * x.nbytes
    assert result.bandwidth_gbps == pytest.approx(2 * x.nbytes / result.latency / 1e9)


def test_explicit_memory_args_and_in_place_output_skip_the_rerun():
    src = torch.randn(1 << 20, device="cuda")
    dst = torch.empty_like(src)
    calls = {"n": 0}

    def copy(d, s):
        calls["n"] += 1
        d.copy_(s)

    def count_calls(**kwargs):
        calls["n"] = 0
        marker.do_bench(copy, input_args=(dst, src), warmup_iters=3, **kwargs)
        return calls["n"]

    explicit = marker.do_bench(
        copy, input_args=(dst, src), memory_args=(src,), memory_output=(dst,)
    )
    assert explicit.memory_footprint == 2 * src.nbytes
    in_place = count_calls(memory_args=(src,), memory_output=(dst,))
    rerun = count_calls(memory_args=(src,))  # "out": one extra call to see the return value
    assert rerun == in_place + 1
    assert count_calls(memory_output=None, extra_memory_footprint=7) == in_place
    extra = marker.do_bench(
        copy,
        input_args=(dst, src),
        memory_args=None,
        memory_output=None,
        extra_memory_args=[src],
        extra_memory_footprint=10,
    )
    assert extra.memory_footprint == src.nbytes + 10


def test_disabled_bandwidth_counts_nothing(monkeypatch):
    x = torch.randn(1024, device="cuda")
    assert (
        marker.do_bench(double, input_args=(x,), disable_log_bandwidth=True).memory_footprint
        is None
    )
    monkeypatch.setenv("SGLANG_KERNEL_DISABLE_LOG_BANDWIDTH", "1")
    result = marker.do_bench(double, input_args=(x,))
    assert result.memory_footprint is None and result.bandwidth_gbps is None


def test_rotation_uses_l2_sized_clone_sets_of_the_selected_args_only():
    src = torch.randn(2 * MB // 4, device="cuda")  # 2 MB
    scale = torch.randn(4, device="cuda")
    seen_src, seen_scale = set(), set()

    def record(s, k):
        seen_src.add(s.data_ptr())
        seen_scale.add(k.data_ptr())
        return s * k[0]

    result = marker.do_bench(record, input_args=(src, scale), graph_clone_args=(0,), warmup_iters=1)
    expected_sets = choose_input_sets(src.nbytes, L2)
    assert result.input_sets == expected_sets
    assert result.calls_per_sample == calls_per_replay(expected_sets)
    assert len(seen_src) == expected_sets  # the original plus the clones
    assert seen_scale == {scale.data_ptr()}  # not selected: shared by every set


def test_clone_kwargs_and_no_clones():
    x = torch.randn(1 << 16, device="cuda")
    seen = set()

    def record(*, x):
        seen.add(x.data_ptr())
        return x + 1

    assert marker.do_bench(record, input_kwargs={"x": x}).input_sets == choose_input_sets(
        x.nbytes, L2
    )
    assert len(seen) == choose_input_sets(x.nbytes, L2)
    seen.clear()
    result = marker.do_bench(record, input_kwargs={"x": x}, graph_clone_kwargs=None)
    assert result.input_sets == 1 and seen == {x.data_ptr()}


def test_functions_timed_over_made_sets_run_on_the_same_memory():
    src = torch.randn(2 * MB // 4, device="cuda")  # 2 MB
    scale = torch.randn(4, device="cuda")
    sets = marker.make_input_sets((src, scale), graph_clone_args=(0,))
    assert len(sets) == choose_input_sets(src.nbytes, L2)
    assert sets[0][0][0] is src and sets[0][1] == {}  # set 0 is the caller's inputs
    assert all(s[0][1] is scale and torch.equal(s[0][0], src) for s in sets)
    seen = {"mul": set(), "add": set()}

    def recorder(name, op):
        def record(s, k):
            seen[name].add(s.data_ptr())
            return op(s, k[0])

        return record

    for name, op in (("mul", torch.mul), ("add", torch.add)):
        result = marker.do_bench(
            recorder(name, op), input_args=(src, scale), graph_input_sets=sets, warmup_iters=1
        )
        assert result.input_sets == len(sets)
        assert result.calls_per_sample == calls_per_replay(len(sets))
    assert seen["mul"] == seen["add"] == {s[0][0].data_ptr() for s in sets}


def test_the_warm_up_comes_after_the_clones_right_before_the_capture(monkeypatch):
    """A graph captured right after its clones were made times differently; the warm-up calls
    therefore run after the sets exist (bench_jit_kernels.md, tenth session)."""
    x = torch.randn(1 << 16, device="cuda")
    log = []
    clone_sets = timing._clone_sets

    def logged_clone_sets(*args, **kwargs):
        log.append("sets")
        return clone_sets(*args, **kwargs)

    def record(t):
        log.append("call")
        return t + 1

    monkeypatch.setattr(timing, "_clone_sets", logged_clone_sets)
    marker.do_bench(record, input_args=(x,), warmup_iters=3, disable_log_bandwidth=True)
    assert log[:4] == ["sets", "call", "call", "call"]


def test_graph_and_eager_agree_on_a_large_copy():
    src = torch.randn(64 * MB, device="cuda")  # 256 MB: far beyond L2 either way
    dst = torch.empty_like(src)
    kwargs = dict(
        input_args=(dst, src), memory_args=(src,), memory_output=(dst,), graph_clone_args=(1,)
    )
    graph = marker.do_bench(torch.Tensor.copy_, **kwargs)
    eager = marker.do_bench(torch.Tensor.copy_, use_cuda_graph=False, **kwargs)
    assert eager.mode == "eager" and eager.input_sets == 1 and eager.num_samples == 200
    assert graph.input_sets == 2
    assert eager.latency == pytest.approx(graph.latency, rel=0.1)


def test_uncapturable_function_names_the_fix():
    x = torch.randn(16, device="cuda")

    def syncs(t):
        return t.sum().item()

    with pytest.raises(RuntimeError, match="pass use_cuda_graph=False"):
        marker.do_bench(syncs, input_args=(x,), warmup_iters=1)
    assert (
        marker.do_bench(syncs, input_args=(x,), use_cuda_graph=False, eager_iters=5).num_samples
        == 5
    )


def test_caller_stream_sees_the_results():
    x = torch.zeros(1 << 20, device="cuda")
    marker.do_bench(torch.Tensor.add_, input_args=(x, 1.0), graph_clone_args=None, warmup_iters=2)
    assert float(x[0]) > 0  # work done on the side stream is visible to the current stream


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
