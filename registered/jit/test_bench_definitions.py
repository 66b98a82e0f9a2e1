"""The registered benchmarks measure what they measured before one definition per kernel.

``benchmark_case_list.json`` was recorded from the ``bench_*.py`` files as they were before
their sweeps moved to ``testing/bench/<family>.py``: each file's sweep name, columns, unit and
row axes (full sweep and CI values), and, for every cell of the CI sweep, the inputs it builds
(shape, dtype), the inputs it rotates and the bytes it counts (``memory_args`` /
``memory_output``: positions in the inputs), or that it is skipped. (rope's ``is_neox`` is now
bound into the callables instead of passed as a fifth, non-tensor input.)

The cells run on the CPU: tensors are built on the ``meta`` device (shapes, no data) and
``marker.do_bench`` records its arguments instead of timing.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=20, suite="base-a-test-cpu")

torch = pytest.importorskip("torch")  # the definitions import torch
from jit_kernel.benchmark import marker  # noqa: E402
from jit_kernel.benchmark.results import BenchSkip  # noqa: E402
from testing import references  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BENCH_DIR = ROOT / "registered" / "jit" / "benchmark"
EXPECTED = json.loads(Path(__file__).with_name("benchmark_case_list.json").read_text())
TENSOR_FACTORIES = ("randn", "zeros", "randint", "randperm", "empty", "ones")


def load(file: str) -> Any:
    """The registered file's ``benchmark`` sweep (imported under a private module name)."""
    path = BENCH_DIR / file
    spec = importlib.util.spec_from_file_location(f"_bench_definitions_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.benchmark


def listing(bench: Any) -> dict[str, Any]:
    def flat(values: Any) -> list[str] | None:
        if values is None:
            return None
        return [repr(v[0]) if len(v) == 1 else f"({', '.join(map(repr, v))})" for v in values]

    return {
        "name": f"{Path(bench.fn.__code__.co_filename).name}::{bench.fn.__qualname__}",
        "line_arg": bench.line_arg,
        "unit": bench.unit,
        "line_vals": [repr(v) for v in bench.line_vals],
        "axes": [
            {"names": ",".join(a.names), "vals": flat(a.values), "ci_vals": flat(a.ci_values)}
            for a in bench.axes
        ],
    }


def describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"{tuple(value.shape)} {value.dtype}"
    return repr(value)


def record(fn, input_args=(), graph_clone_args="all", memory_args="all", memory_output="out", **_):
    """What ``do_bench`` was asked to time, positions instead of tensors."""
    inputs = list(input_args)

    def positions(chosen: Any) -> Any:
        if chosen is None or isinstance(chosen, str):
            return chosen
        return [next(i for i, t in enumerate(inputs) if t is c) for c in chosen]

    assert callable(fn)
    rotate = graph_clone_args
    return {
        "inputs": [describe(a) for a in inputs],
        "memory_args": positions(memory_args),
        "memory_output": positions(memory_output),
        "rotate": rotate if isinstance(rotate, str) else list(rotate),
    }


@pytest.fixture
def on_meta(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tensors asked for on a device are built on ``meta``; do_bench records instead of timing."""

    def to_meta(factory):
        @functools.wraps(factory)
        def build(*args, **kwargs):
            if "device" in kwargs:
                kwargs["device"] = "meta"
            return factory(*args, **kwargs)

        return build

    for name in TENSOR_FACTORIES:
        monkeypatch.setattr(torch, name, to_meta(getattr(torch, name)))
    defaults = references.make_cos_sin_cache.__defaults__
    monkeypatch.setattr(references.make_cos_sin_cache, "__defaults__", (*defaults[:-1], "meta"))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *args, **kwargs: None)
    monkeypatch.setattr(marker, "do_bench", record)
    monkeypatch.setenv("SGLANG_IS_IN_CI", "1")
    monkeypatch.delenv("SGLANG_JIT_KERNEL_RUN_FULL_TESTS", raising=False)


def test_every_marker_benchmark_is_recorded():
    files = {p.name for p in BENCH_DIR.glob("bench_*.py") if "SWEEP.declare" in p.read_text()}
    assert files == set(EXPECTED)


@pytest.mark.parametrize("file", sorted(EXPECTED))
def test_sweep_lists_the_same_cases(file):
    expected = {key: value for key, value in EXPECTED[file].items() if key != "ci_cells"}
    observed = listing(load(file))
    assert observed == expected, f"{file} now lists (JSON for the record):\n{json.dumps(observed)}"


@pytest.mark.parametrize("file", sorted(EXPECTED))
def test_ci_cells_build_rotate_and_count_the_same_inputs(file, on_meta):
    bench = load(file)
    cells: dict[str, Any] = {}
    for row in bench.rows():
        for impl in bench.line_vals:
            key = " ".join(f"{k}={v!r}" for k, v in row.items()) + f" {bench.line_arg}={impl!r}"
            try:
                cells[key] = bench.fn(**row, **{bench.line_arg: impl})
            except BenchSkip:
                cells[key] = "skipped"
    assert cells == EXPECTED[file]["ci_cells"], (
        f"{file}'s CI cells now are (JSON for the record):\n{json.dumps(cells, indent=1)}"
    )


def test_a_changed_definition_is_caught(on_meta, monkeypatch):
    """A definition whose CI sizes or inputs change no longer matches the record."""
    from testing.bench import scale as definition

    sweep = definition.SWEEPS["scale"]
    dtypes, sizes = sweep.axes
    fewer = dataclasses.replace(sizes, ci_vals=list(sizes.ci_vals)[:-1])
    doubled = dataclasses.replace(
        sweep, cell=lambda impl, dtype, size: sweep.cell(impl, dtype=dtype, size=2 * size)
    )
    monkeypatch.setitem(
        definition.SWEEPS, "scale", dataclasses.replace(sweep, axes=(dtypes, fewer))
    )
    expected = {k: v for k, v in EXPECTED["bench_scale.py"].items() if k != "ci_cells"}
    assert listing(load("bench_scale.py")) != expected
    monkeypatch.setitem(definition.SWEEPS, "scale", doubled)
    bench = load("bench_scale.py")
    assert listing(bench) == expected
    row = bench.rows()[0]
    key = " ".join(f"{k}={v!r}" for k, v in row.items()) + " impl='jit'"
    assert bench.fn(**row, impl="jit") != EXPECTED["bench_scale.py"]["ci_cells"][key]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
