"""CPU tests of the benchmark decorators: declaration errors, sweep order, CI value selection."""

import sys

import pytest
import torch

from ci_runner import register_cpu_ci
from jit_kernel.benchmark import marker
from jit_kernel.benchmark.sweep import BenchmarkDefinitionError
from jit_kernel.benchmark.utils import (
    DEFAULT_DEVICE,
    DEFAULT_DTYPE,
    create_empty,
    create_random,
    get_benchmark_range,
)

register_cpu_ci(est_time=8, suite="base-a-test-cpu")


@pytest.fixture(autouse=True)
def local_environment(monkeypatch):
    """Every test starts outside CI; tests opt into CI with monkeypatch."""
    monkeypatch.delenv("SGLANG_IS_IN_CI", raising=False)
    monkeypatch.delenv("SGLANG_JIT_KERNEL_RUN_FULL_TESTS", raising=False)


def make(fn, *decorators):
    for decorate in reversed(decorators):
        fn = decorate(fn)
    return fn


def test_benchmark_returns_a_benchmark_with_the_column_axis():
    @marker.benchmark("impl", ["jit", "torch"], unit="ms")
    def bench(impl):
        return impl

    assert isinstance(bench, marker.Benchmark)
    assert bench.line_arg == "impl"
    assert bench.line_vals == ("jit", "torch")
    assert bench.unit == "ms"
    assert bench.__name__ == "bench"
    assert bench(impl="x") == "x"
    assert bench.rows() == [{}]


def test_line_arg_must_be_a_parameter():
    def bench(size, impl):
        pass

    with pytest.raises(BenchmarkDefinitionError, match=r"line_arg 'provider' is not a keyword"):
        marker.benchmark("provider", ["a"])(bench)
    with pytest.raises(BenchmarkDefinitionError, match=r"test_bench_marker.py:\d+: .*bench"):
        marker.benchmark("provider", ["a"])(bench)


def test_positional_only_parameter_is_rejected():
    def bench(impl, /):
        pass

    with pytest.raises(BenchmarkDefinitionError, match="'impl' is not a keyword parameter"):
        marker.benchmark("impl", ["a"])(bench)


def test_var_keyword_function_accepts_any_name():
    @marker.parametrize("anything", [1])
    @marker.benchmark("impl", ["a"])
    def bench(**kwargs):
        return kwargs

    assert bench.rows() == [{"anything": 1}]


@pytest.mark.parametrize(
    ("line_vals", "message"),
    [
        (["jit", "jit"], "line_vals has the value 'jit' twice"),
        ([], "line_vals is empty"),
        ("jit", "line_vals must be a list"),
    ],
)
def test_bad_line_vals(line_vals, message):
    with pytest.raises(BenchmarkDefinitionError, match=message):
        marker.benchmark("impl", line_vals)(lambda impl: None)


def test_unknown_unit():
    with pytest.raises(BenchmarkDefinitionError, match=r"unit='ns' is not one of 'us', 'ms', 's'"):
        marker.benchmark("impl", ["a"], unit="ns")(lambda impl: None)


def test_benchmark_cannot_wrap_a_benchmark():
    inner = marker.benchmark("impl", ["a"])(lambda impl: None)
    with pytest.raises(BenchmarkDefinitionError, match="must decorate a plain function"):
        marker.benchmark("impl", ["a"])(inner)


def test_parametrize_below_benchmark_is_rejected():
    def bench(size, impl):
        pass

    with pytest.raises(BenchmarkDefinitionError, match="must be stacked above @benchmark"):
        marker.parametrize("size", [1])(bench)


def test_parametrize_name_must_be_a_parameter():
    def bench(size, impl):
        pass

    with pytest.raises(
        BenchmarkDefinitionError, match=r"name 'sizes' is not a keyword.*size, impl"
    ):
        make(bench, marker.parametrize("sizes", [1]), marker.benchmark("impl", ["a"]))


def test_parametrize_name_cannot_repeat_an_axis_or_the_line_arg():
    def bench(size, impl):
        pass

    with pytest.raises(BenchmarkDefinitionError, match="'size' is already used by another"):
        make(
            bench,
            marker.parametrize("size", [1]),
            marker.parametrize("size", [2]),
            marker.benchmark("impl", ["a"]),
        )
    with pytest.raises(BenchmarkDefinitionError, match="'impl' is already used by the @benchmark"):
        make(bench, marker.parametrize("impl", [1]), marker.benchmark("impl", ["a"]))


@pytest.mark.parametrize(
    ("names", "vals", "ci_vals", "message"),
    [
        ("size", [1, 1], None, r"vals has the value 1 twice"),
        ("size", [1, 2], [2, 2], r"ci_vals has the value 2 twice"),
        ("size", [], None, r"vals is empty"),
        ("size", 5, None, r"vals must be a list, got 5"),
        ("h,d", [(1, 2), (3,)], None, r"vals\[1\] = \(3,\) must be a tuple of 2 values"),
        ("h,d", [(1, 2), 3], None, r"vals\[1\] = 3 must be a tuple of 2 values"),
        ("h,d", [(1, 2)], [(1, 2, 3)], r"ci_vals\[0\] = \(1, 2, 3\) must be a tuple of 2"),
        ("h,d", [(1, 2), [1, 2]], None, r"vals has the value \(1, 2\) twice"),
        ("h,,d", [(1, 2)], None, r"must be identifiers separated by commas"),
        ("h,h", [(1, 2)], None, r"repeat a name"),
        (["h"], [1], None, r"names must be a string"),
    ],
)
def test_bad_parametrize(names, vals, ci_vals, message):
    def bench(h, d, size, impl):
        pass

    with pytest.raises(BenchmarkDefinitionError, match=message):
        make(bench, marker.parametrize(names, vals, ci_vals), marker.benchmark("impl", ["a"]))


def test_uncovered_parameter_is_reported_before_anything_runs(capsys):
    calls = []

    @marker.parametrize("size", [1])
    @marker.benchmark("impl", ["a"])
    def bench(size, dtype, impl, scale=1.0):
        calls.append(1)

    with pytest.raises(BenchmarkDefinitionError, match=r"parameter\(s\) dtype have no default"):
        bench.rows()
    with pytest.raises(SystemExit) as exit_info:
        bench.run(argv=[])
    assert exit_info.value.code == 2
    assert "dtype have no default" in capsys.readouterr().err
    assert calls == []


def test_sweep_is_the_product_in_top_down_decorator_order():
    @marker.parametrize("dtype", ["bf16", "fp32"])
    @marker.parametrize("h,d", [(1, 64), (2, 128)])
    @marker.parametrize("size", [10, 20, 30])
    @marker.benchmark("impl", ["jit", "torch"])
    def bench(dtype, h, d, size, impl):
        pass

    assert bench.axis_names == ("dtype", "h", "d", "size")
    rows = bench.rows()
    assert len(rows) == 2 * 2 * 3
    assert rows[0] == {"dtype": "bf16", "h": 1, "d": 64, "size": 10}
    assert rows[1] == {"dtype": "bf16", "h": 1, "d": 64, "size": 20}
    assert rows[3] == {"dtype": "bf16", "h": 2, "d": 128, "size": 10}
    assert rows[6] == {"dtype": "fp32", "h": 1, "d": 64, "size": 10}
    assert list(rows[0]) == ["dtype", "h", "d", "size"]


def test_run_calls_rows_outer_and_line_values_inner():
    calls = []

    @marker.parametrize("size", [1, 2])
    @marker.benchmark("impl", ["jit", "torch"])
    def bench(size, impl):
        calls.append((size, impl))
        marker.skip("no GPU here")

    bench.run(argv=[])
    assert calls == [(1, "jit"), (1, "torch"), (2, "jit"), (2, "torch")]


def bench_with_ci_values():
    @marker.parametrize("dtype", ["bf16", "fp32"])
    @marker.parametrize("size", [1, 2, 3, 4], ci_vals=[2])
    @marker.benchmark("impl", ["a"])
    def bench(dtype, size, impl):
        pass

    return bench


def test_full_values_locally():
    bench = bench_with_ci_values()
    assert [r["size"] for r in bench.rows()] == [1, 2, 3, 4, 1, 2, 3, 4]
    assert not bench.uses_ci_values()


def test_ci_values_in_ci_chosen_at_run_time(monkeypatch):
    bench = bench_with_ci_values()  # declared outside CI: the choice happens later
    monkeypatch.setenv("SGLANG_IS_IN_CI", "1")
    assert bench.rows() == [{"dtype": "bf16", "size": 2}, {"dtype": "fp32", "size": 2}]
    assert bench.uses_ci_values()


def test_full_tests_switch_wins_over_ci(monkeypatch):
    bench = bench_with_ci_values()
    monkeypatch.setenv("SGLANG_IS_IN_CI", "true")
    monkeypatch.setenv("SGLANG_JIT_KERNEL_RUN_FULL_TESTS", "1")
    assert len(bench.rows()) == 8
    assert not bench.uses_ci_values()


def test_bad_ci_env_value_is_a_clear_error(monkeypatch):
    bench = bench_with_ci_values()
    monkeypatch.setenv("SGLANG_IS_IN_CI", "maybe")
    with pytest.raises(ValueError, match=r"SGLANG_IS_IN_CI='maybe' is not a boolean"):
        bench.rows()


def test_get_benchmark_range(monkeypatch):
    assert get_benchmark_range([1, 2, 3], [1]) == [1, 2, 3]
    monkeypatch.setenv("SGLANG_IS_IN_CI", "1")
    assert get_benchmark_range([1, 2, 3], [1]) == [1]
    monkeypatch.setenv("SGLANG_JIT_KERNEL_RUN_FULL_TESTS", "1")
    assert get_benchmark_range([1, 2, 3], [1]) == [1, 2, 3]


def test_tensor_helpers_defaults_and_overrides():
    assert DEFAULT_DTYPE is torch.bfloat16
    assert DEFAULT_DEVICE == "cuda"
    x = create_random(4, 8, device="cpu")
    assert x.shape == (4, 8) and x.dtype == torch.bfloat16 and x.device.type == "cpu"
    y = create_empty(3, dtype=torch.float16, device="cpu")
    assert y.shape == (3,) and y.dtype == torch.float16
    ints = create_random(1000, dtype=torch.int32, device="cpu")
    assert ints.dtype == torch.int32 and int(ints.min()) >= -100 and int(ints.max()) < 100
    assert create_random(10, dtype=torch.uint8, device="cpu").min() >= 0
    assert create_random(10, dtype=torch.bool, device="cpu").dtype == torch.bool


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
