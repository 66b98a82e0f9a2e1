"""CPU tests of what Benchmark.run() prints and writes: table, N/A and ERROR notes, JSON, PNG."""

import importlib.util
import json
import re
import sys

import pytest

from ci_runner import register_cpu_ci
from jit_kernel.benchmark import marker
from jit_kernel.benchmark.table import format_latency

register_cpu_ci(est_time=8, suite="base-a-test-cpu")

HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in (
        "SGLANG_IS_IN_CI",
        "SGLANG_JIT_KERNEL_RUN_FULL_TESTS",
        "SGLANG_KERNEL_DISABLE_LOG_BANDWIDTH",
        "JIT_KERNEL_BENCH_JSON",
        "JIT_KERNEL_BENCH_PLOT",
    ):
        monkeypatch.delenv(name, raising=False)


def fake_result(seconds, footprint=None):
    return marker.BenchResult(
        metrics=(0.5, "avg"),
        times=(seconds, seconds * 1.1),
        memory_footprint=footprint,
        min_time=seconds * 0.9,
        max_time=seconds * 1.2,
        num_samples=20,
        mode="graph",
        input_sets=4,
        calls_per_sample=100,
    )


@marker.parametrize("size", [1000, 2000], ci_vals=[1000])
@marker.benchmark("impl", ["jit", "torch"])
def sample_bench(size, impl):
    """jit takes size ns and moves 4*size bytes; torch is N/A above 1000 and unmetered."""
    if impl == "torch":
        if size > 1000:
            marker.skip("torch path needs size <= 1000")
        return fake_result(size * 2e-9)
    return fake_result(size * 1e-9, footprint=4 * size)


@marker.parametrize("size", [1, 2])
@marker.benchmark("impl", ["good", "bad", "weird"])
def failing_bench(size, impl):
    if impl == "bad" and size == 2:
        raise RuntimeError("kernel exploded")
    if impl == "weird":
        return 42
    return fake_result(1e-6, footprint=1000)


def test_table_layout(capsys):
    report = sample_bench.run(argv=[])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "test_bench_marker_output.py::sample_bench [full sweep]; "
        "latency = p50 per call in us; GB/s = 1e9 bytes/s"
    )
    width = len(lines[2])
    assert lines[1] == "=" * width
    assert lines[2].replace(" ", "") == "size|jit(us)torch(us)|jit(GB/s)torch(GB/s)"
    assert lines[3] == "-" * width
    # 1000 ns = 1.0000 us; 4000 bytes / 1 us = 4 GB/s; torch counted no bytes: "-".
    assert lines[4].split() == ["1000", "|", "1.0000", "2.0000", "|", "4.00", "-"]
    assert lines[5].split() == ["2000", "|", "2.0000", "N/A", "|", "4.00", "N/A"]
    assert lines[6] == "=" * width
    assert lines[7] == "N/A [size=2000, impl=torch]: torch path needs size <= 1000"
    assert len(lines) == 8
    assert all(len(line) == width for line in lines[1:7])
    assert report.failed == 0
    assert [cell.status for row in report.cells for cell in row] == ["ok", "ok", "ok", "skipped"]


def test_ci_sweep_is_named_in_the_header(capsys, monkeypatch):
    monkeypatch.setenv("SGLANG_IS_IN_CI", "1")
    sample_bench.run(argv=[])
    lines = capsys.readouterr().out.splitlines()
    assert "[CI sweep (ci_vals)]" in lines[0]
    assert len(lines) == 6  # header line, 3 rules, column header, one row; no notes


def test_bandwidth_columns_disabled_by_env_at_run_time(capsys, monkeypatch):
    monkeypatch.setenv("SGLANG_KERNEL_DISABLE_LOG_BANDWIDTH", "1")
    sample_bench.run(argv=[])
    out = capsys.readouterr().out
    assert "GB/s" not in out
    assert out.splitlines()[2].replace(" ", "") == "size|jit(us)torch(us)"


def test_bad_bandwidth_env_value_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("SGLANG_KERNEL_DISABLE_LOG_BANDWIDTH", "sure")
    with pytest.raises(ValueError, match="SGLANG_KERNEL_DISABLE_LOG_BANDWIDTH='sure'"):
        sample_bench.run(argv=[])


def test_failed_cells_print_error_and_exit_1(capsys):
    with pytest.raises(SystemExit) as exit_info:
        failing_bench.run(argv=[])
    assert exit_info.value.code == 1
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[4].split()[:4] == ["1", "|", "1.0000", "1.0000"]
    assert lines[5].split()[:4] == ["2", "|", "1.0000", "ERROR"]
    assert "ERROR [size=2, impl=bad]: RuntimeError: kernel exploded" in lines
    assert (
        "ERROR [size=1, impl=weird]: the benchmark function returned int, expected the "
        "BenchResult of marker.do_bench(...)"
    ) in lines
    assert "3 benchmark cell(s) failed" in captured.err
    assert "Traceback" in captured.err  # the benchmark's own traceback, for debugging


def test_all_skipped_exits_0(capsys):
    @marker.benchmark("impl", ["a"])
    def bench(impl):
        marker.skip("needs sm_100")

    report = bench.run(argv=[])
    out = capsys.readouterr().out
    assert "N/A [impl=a]: needs sm_100" in out
    assert report.failed == 0


def test_benchskip_without_reason():
    @marker.benchmark("impl", ["a"])
    def bench(impl):
        raise marker.BenchSkip()

    assert bench.run(argv=[]).cells[0][0].skip_reason == "skipped"


def test_unit_conversion_and_formatting(capsys):
    @marker.benchmark("impl", ["a"], unit="ms")
    def bench(impl):
        return fake_result(0.25)

    bench.run(argv=[])
    assert capsys.readouterr().out.splitlines()[4].split() == ["250.0000"]
    assert format_latency(3.14159265) == "3.1416"
    assert format_latency(123456.78) == "123456.8"


def test_json_output(tmp_path, capsys):
    target = tmp_path / "out" / "result.json"
    sample_bench.run(argv=["--json", str(target)])
    assert f"results written to {target}" in capsys.readouterr().out
    data = json.loads(target.read_text())
    assert data["schema_version"] == 2
    assert data["benchmark"] == "test_bench_marker_output.py::sample_bench"
    # Locations are relative to the repository root, so a result names the same file anywhere.
    assert data["source"] == "registered/jit/test_bench_marker_output.py"
    assert data["where"].startswith("registered/jit/test_bench_marker_output.py:")
    assert data["where"].endswith(": sample_bench")
    env = data["environment"]
    assert set(env) == {
        "gpu",
        "driver",
        "cuda_runtime",
        "torch",
        "apache_tvm_ffi",
        "jit_kernel_commit",
        "jit_kernel_dirty",
        "python",
        "timestamp",
        "copy_gbps",
        "notes",
    }
    assert env["gpu"] is None and env["copy_gbps"] is None  # no GPU here: null, and why
    assert "gpu: torch.cuda.is_available() is False" in env["notes"]
    assert env["torch"] and env["python"].count(".") == 2
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", env["timestamp"])
    assert env["jit_kernel_commit"] is None or re.fullmatch(
        r"[0-9a-f]{40}", env["jit_kernel_commit"]
    )
    assert data["unit"] == "us" and data["line_arg"] == "impl"
    assert data["line_vals"] == ["jit", "torch"] and data["axes"] == ["size"]
    assert data["ci_sweep"] is False and data["bytes_per_gb"] == 1e9
    assert len(data["cells"]) == 4
    first = data["cells"][0]
    assert first["params"] == {"size": 1000} and first["impl"] == "jit"
    assert first["status"] == "ok"
    assert first["latency_s"] == pytest.approx(1e-6)
    assert first["latency"] == pytest.approx(1.0)
    assert first["metrics_s"] == {"p50": pytest.approx(1e-6), "avg": pytest.approx(1.1e-6)}
    assert first["min_s"] == pytest.approx(0.9e-6) and first["max_s"] == pytest.approx(1.2e-6)
    assert first["p25_s"] is None and first["p75_s"] is None  # a hand-made result has none
    assert first["num_samples"] == 20 and first["mode"] == "graph"
    assert first["input_sets"] == 4 and first["calls_per_sample"] == 100
    assert first["memory_bytes"] == 4000
    assert first["bandwidth_gbps"] == pytest.approx(4.0)
    skipped = data["cells"][3]
    assert skipped["status"] == "skipped"
    assert skipped["reason"] == "torch path needs size <= 1000"
    assert "latency" not in skipped


def test_json_env_var_and_directory_target(tmp_path, monkeypatch):
    monkeypatch.setenv("JIT_KERNEL_BENCH_JSON", f"{tmp_path}/")
    sample_bench.run(argv=[])
    data = json.loads((tmp_path / "test_bench_marker_output.json").read_text())
    assert data["benchmark"].endswith("sample_bench")


def test_json_records_errors_and_non_json_values(tmp_path):
    import torch

    @marker.parametrize("dtype", [torch.bfloat16])
    @marker.benchmark("impl", ["a"])
    def bench(dtype, impl):
        raise ValueError("bad shape")

    with pytest.raises(SystemExit):
        bench.run(argv=["--json", str(tmp_path / "e.json")])
    cell = json.loads((tmp_path / "e.json").read_text())["cells"][0]
    assert cell == {
        "params": {"dtype": "bfloat16"},
        "impl": "a",
        "status": "error",
        "error": "ValueError: bad shape",
    }


def test_unknown_option_exits_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        sample_bench.run(argv=["--jsn", "x"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: --jsn x" in capsys.readouterr().err


def test_plot_without_matplotlib_is_a_note_not_a_crash(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    target = tmp_path / "plot.png"
    sample_bench.run(argv=["--plot", str(target)])
    err = capsys.readouterr().err
    assert f"note: cannot write the plot {target}: matplotlib is not installed" in err
    assert not target.exists()


@pytest.mark.skipif(not HAS_MATPLOTLIB, reason="matplotlib is not installed")
def test_plot_is_a_png(tmp_path, monkeypatch):
    monkeypatch.setenv("JIT_KERNEL_BENCH_PLOT", f"{tmp_path}/")
    sample_bench.run(argv=[])
    assert (tmp_path / "test_bench_marker_output.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    @marker.parametrize("dtype", ["bf16", "fp32"])
    @marker.parametrize("size", [1, 2, 3])
    @marker.benchmark("impl", ["a", "b"])
    def two_axes(dtype, size, impl):
        if impl == "b" and size == 2:
            marker.skip("no b")
        return fake_result(size * 1e-6, footprint=size)

    two_axes.run(argv=["--plot", str(tmp_path / "two.png")])
    assert (tmp_path / "two.png").stat().st_size > 1000


def test_bench_result_checks_its_shape():
    with pytest.raises(ValueError, match="needs one time per metric"):
        marker.BenchResult(metrics=(0.5, "avg"), times=(1.0,))
    result = marker.BenchResult(metrics=(0.5,), times=(2e-6,), memory_footprint=0)
    assert result.bandwidth_gbps is None and result.latency == 2e-6
    assert marker.BenchResult(
        metrics=(0.5,), times=(2e-6,), memory_footprint=4000
    ).bandwidth_gbps == (pytest.approx(2.0))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
