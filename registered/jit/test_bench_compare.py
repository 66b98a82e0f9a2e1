"""``python -m jit_kernel.benchmark compare`` on stored results generated here (no GPU).

Exit 0 for equal runs, 1 for a slowdown beyond the noise (confirmed by re-running the benchmark
file when --confirm is given), 2 with a message naming the file for anything that is not a
benchmark result.
"""

import json
import runpy
import sys
import textwrap
from pathlib import Path

import pytest
from helpers_bench_results import CASES, H100, document, slower, write
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_runner import register_cpu_ci
from jit_kernel.benchmark import marker
from jit_kernel.benchmark.cli import main
from jit_kernel.benchmark.compare import Measured, compare_runs, judge
from jit_kernel.benchmark.comparison_table import render_markdown, render_text
from jit_kernel.benchmark.document import DocumentError, parse_document

register_cpu_ci(est_time=14, suite="base-a-test-cpu")

ROOT = Path(__file__).resolve().parents[2]


def test_equal_runs_pass(tmp_path, capsys):
    base = write(tmp_path / "base.json", document())
    assert main(["compare", base, write(tmp_path / "new.json", document())]) == 0
    out = capsys.readouterr().out
    assert "OK: no slowdown beyond the limit in 4 cells" in out
    assert out.count("1.000x") == 4 and "±1.0%" in out  # base and new half-spreads added


def test_a_ten_percent_slowdown_beyond_the_noise_fails(tmp_path, capsys):
    base = write(tmp_path / "base.json", document())
    new = write(tmp_path / "new.json", document(slower(1.10, only=(65536, "jit"))))
    assert main(["compare", base, new]) == 1
    out = capsys.readouterr().out
    line = next(row for row in out.splitlines() if "size=65536" in row and " jit " in row)
    assert "1.100x" in line and "slower?" in line and "5.0%" in line
    assert "FAIL: 1 of 4 cells slower beyond their limit, not re-measured" in out


def test_noise_widens_the_limit_instead_of_raising_an_alarm(tmp_path, capsys):
    """Quartiles +-4% on each side: a 10% ratio is inside 2 x 8% and is not a slowdown."""
    base = write(tmp_path / "base.json", document(spread=0.04))
    new = write(tmp_path / "new.json", document(slower(1.10), spread=0.04))
    assert main(["compare", base, new, "--threshold", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "±8.0%" in out and "16.0%" in out and "slower?" not in out


def test_missing_cells_and_benchmarks_are_listed(tmp_path, capsys):
    base_latency = slower(1.0)
    new_latency = {k: v for k, v in slower(1.0).items() if k != (4096, "torch")}
    new_latency[(65536, "jit")] = None  # skipped in NEW
    new_latency[(1024, "jit")] = 1e-6  # a case without a baseline
    write(tmp_path / "base" / "x.json", document(base_latency))
    write(tmp_path / "base" / "only.json", document(benchmark="bench_only_base.py::benchmark"))
    write(tmp_path / "new" / "x.json", document(new_latency))
    assert main(["compare", str(tmp_path / "base"), str(tmp_path / "new")]) == 0
    out = capsys.readouterr().out
    assert "Cells on one side only or not measured (4):" in out
    assert "bench_x.py::benchmark [size=4096] torch: BASE ok, NEW absent" in out
    assert "bench_x.py::benchmark [size=65536] jit: BASE ok, NEW skipped" in out
    assert "bench_x.py::benchmark [size=1024] jit: not in BASE (no baseline)" in out
    assert "bench_only_base.py::benchmark: not in NEW (4 cells not run)" in out
    assert "in 2 cells" in out


def test_cells_failed_on_both_sides_are_listed_and_nothing_judged_is_said(tmp_path, capsys):
    failed = {case: "error" for case in CASES}
    failed[(4096, "torch")] = None  # N/A on both sides: by design, not listed
    base = write(tmp_path / "base.json", document(failed))
    assert main(["compare", base, write(tmp_path / "new.json", document(failed))]) == 0
    out = capsys.readouterr().out
    assert "bench_x.py::benchmark [size=4096] jit: BASE error, NEW error" in out
    assert "Cells on one side only or not measured (3):" in out
    assert "OK (nothing judged): no cell was measured on both sides" in out


def test_several_new_runs_take_the_median(tmp_path, capsys):
    base = write(tmp_path / "base.json", document())
    runs = [write(tmp_path / f"n{i}.json", document(slower(f))) for i, f in enumerate([1, 1.3, 1])]
    assert main(["compare", base, *runs]) == 0  # one slow outlier among three
    assert "(3 runs)" in capsys.readouterr().out
    runs[0] = write(tmp_path / "n0.json", document(slower(1.3)))
    assert main(["compare", base, *runs]) == 1


def test_different_gpus_are_not_judged(tmp_path, capsys):
    base = write(tmp_path / "base.json", document())
    new = write(tmp_path / "new.json", document(slower(2.0), gpu="NVIDIA H200"))
    assert main(["compare", base, new]) == 0
    out = capsys.readouterr().out
    assert f"GPU differs (BASE {H100}, NEW NVIDIA H200)" in out
    assert out.count("not judged: GPU differs") == 4


def test_a_version_1_baseline_is_read_with_min_max_noise(tmp_path, capsys):
    base = write(tmp_path / "base.json", document(version=1, spread=0.005))
    new = write(tmp_path / "new.json", document(slower(1.10)))
    assert main(["compare", base, new]) == 1
    out = capsys.readouterr().out
    assert "BASE: no environment recorded (schema_version 1)" in out
    assert "±2.0%" in out  # v1: (max - min) / 2 = 1.5%, plus NEW's quartile half-spread 0.5%


def test_markdown_table_is_appended(tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    base = write(tmp_path / "base.json", document())
    new = write(tmp_path / "new.json", document(slower(1.2, only=(4096, "jit"))))
    assert main(["compare", base, new, "--markdown", str(summary)]) == 1
    text = summary.read_text()
    assert text.startswith("earlier step\n### Benchmark comparison")
    assert (
        "| bench_x.py::benchmark | size=4096 | jit | p50 | 4.0960 us | 4.9152 us | 1.200x" in text
    )


def test_the_writer_and_the_reader_agree(tmp_path, capsys):
    @marker.parametrize("size", [1000, 2000])
    @marker.benchmark("impl", ["jit", "torch"])
    def bench(size, impl):
        if impl == "torch" and size > 1000:
            marker.skip("no")
        return marker.BenchResult(metrics=(0.5,), times=(size * 1e-9,), min_time=size * 9e-10)

    bench.run(argv=["--json", str(tmp_path / "a.json")])
    bench.run(argv=["--json", str(tmp_path / "b.json")])
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0
    out = capsys.readouterr().out
    assert "OK: no slowdown beyond the limit in 3 cells" in out
    assert "noise" in out and " ? " in out  # no max: the spread is unknown, shown as ?


VALID = json.dumps(document())
DAMAGED = [
    ("not JSON", "garbage {", "not valid JSON (line 1 column 1"),
    ("truncated", VALID[: len(VALID) // 2], "truncated or damaged?"),
    ("empty", "", "not valid JSON"),
    ("array", "[1, 2]", "top level: expected a JSON object"),
    (
        "bench_jit_kernels report",
        json.dumps({"rows": [{"kernel": "rmsnorm", "shape": "a", "ours_us": 1.0}]}),
        "a table of rows (key 'rows', no schema_version: the --json of bench_jit_kernels",
    ),
    ("other schema", json.dumps({"tool": "pytest-benchmark"}), "no schema_version (keys: tool)"),
    ("newer", json.dumps({**document(), "schema_version": 99}), "schema_version 99 is not one"),
    ("cells", json.dumps({**document(), "cells": {}}), "cells: expected a JSON array, got {}"),
    (
        "latency type",
        VALID.replace('"latency_s": 4.096e-06', '"latency_s": "fast"', 1),
        "cells[0].latency_s: expected a finite number, got 'fast'",
    ),
    (
        "status",
        VALID.replace('"status": "ok"', '"status": "done"', 1),
        "cells[0].status: expected 'ok' or 'skipped' or 'error', got 'done'",
    ),
    (
        "no environment",
        json.dumps({k: v for k, v in document().items() if k != "environment"}),
        "key 'environment' is missing",
    ),
]


@pytest.mark.parametrize(("label", "text", "message"), DAMAGED, ids=[d[0] for d in DAMAGED])
@pytest.mark.parametrize("side", ["base", "new"])
def test_damaged_or_foreign_json_is_a_clear_error(tmp_path, capsys, label, text, message, side):
    good = write(tmp_path / "good.json", document())
    bad = write(tmp_path / "bad.json", text)
    args = [bad, good] if side == "base" else [good, bad]
    assert main(["compare", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}: ") and message in err, err


def test_unusable_paths_and_options_exit_2(tmp_path, capsys):
    good = write(tmp_path / "good.json", document())
    (tmp_path / "empty").mkdir()
    assert main(["compare", str(tmp_path / "nope.json"), good]) == 2
    assert "nope.json: no such file or directory" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "empty"), good]) == 2
    assert "a directory with no *.json file" in capsys.readouterr().err
    write(tmp_path / "twice" / "a.json", document())
    write(tmp_path / "twice" / "b.json", document())
    assert main(["compare", str(tmp_path / "twice"), good]) == 2
    assert "benchmark 'bench_x.py::benchmark' is also in" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["compare", good, good, "--threshold", "fast"])
    assert exit_info.value.code == 2
    assert "expected a fraction in (0, 10) such as 0.05, got 'fast'" in capsys.readouterr().err
    for flag, value in (("--threshold", "nan"), ("--threshold", "-0.1"), ("--confirm", "-1")):
        with pytest.raises(SystemExit):
            main(["compare", good, good, flag, value])
        assert f"argument {flag}: expected" in capsys.readouterr().err


FAKE_BENCH = '''
"""A benchmark whose jit cell takes FAKE_SLOWDOWN x its base time (a CPU stand-in for a GPU)."""
import os
from jit_kernel.benchmark.results import BenchResult
from jit_kernel.benchmark.runner import benchmark as bench
from jit_kernel.benchmark.sweep import parametrize

@parametrize("size", [4096, 65536])
@bench("impl", ["jit", "torch"])
def benchmark(size, impl):
    if os.environ.get("FAKE_LOG"):  # which cells ran
        with open(os.environ["FAKE_LOG"], "a") as log:
            log.write(f"{size} {impl}\\n")
    factor = float(os.environ.get("FAKE_SLOWDOWN", "1")) if impl == "jit" else 1.0
    t = size * 1e-9 * factor
    return BenchResult(metrics=(0.5,), times=(t,), min_time=t * 0.99, max_time=t * 1.01,
                       p25_time=t * 0.998, p75_time=t * 1.002)

if __name__ == "__main__":
    benchmark.run()
'''


def test_cells_selects_what_a_run_measures(tmp_path, capsys):
    fake = runpy.run_path(_fake_bench(tmp_path))["benchmark"]
    cells = write(tmp_path / "cells.json", [{"case": "size=65536", "provider": "torch"}])
    fake.run(argv=["--json", str(tmp_path / "r.json"), "--cells", cells])
    stored = json.loads((tmp_path / "r.json").read_text())["cells"]
    assert [c["status"] for c in stored] == ["skipped", "skipped", "skipped", "ok"]
    assert stored[0]["reason"] == "not selected by --cells"
    capsys.readouterr()
    for text, message in (
        ("{", "cannot read it"),
        ('{"case": "x"}', "expected a JSON list of"),
        ('[{"case": "x"}]', "entry 0 is {'case': 'x'}"),
    ):
        bad = write(tmp_path / "bad.json", text)
        with pytest.raises(SystemExit) as exit_info:
            fake.run(argv=["--cells", bad])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert f"error: --cells {bad}: " in err and message in err, err


def _fake_bench(directory: Path) -> str:
    (directory / ".git").mkdir(parents=True, exist_ok=True)
    (directory / "bench_fake.py").write_text(textwrap.dedent(FAKE_BENCH))
    return str(directory / "bench_fake.py")


@pytest.fixture
def repository(tmp_path, monkeypatch, capsys):
    """A repository holding bench_fake.py, with a baseline and a slowed result of it."""
    repo = tmp_path / "repo"
    fake = runpy.run_path(_fake_bench(repo))["benchmark"]
    for name, factor in (("base", "1"), ("new", "1.1")):
        monkeypatch.setenv("FAKE_SLOWDOWN", factor)
        fake.run(argv=["--json", str(repo / f"{name}.json")])
    capsys.readouterr()
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the re-runs import this checkout's jit_kernel
    monkeypatch.chdir(repo)
    return repo


def test_a_persisting_slowdown_is_confirmed_by_re_running(repository, capsys, monkeypatch):
    assert json.loads((repository / "new.json").read_text())["source"] == "bench_fake.py"
    monkeypatch.setenv("FAKE_SLOWDOWN", "1.1")  # the code is still slow when re-measured
    monkeypatch.setenv("FAKE_LOG", str(repository / "calls.log"))
    monkeypatch.chdir(repository.parent)  # --root names where the source is
    args = ["compare", "repo/base.json", "repo/new.json", "--confirm", "2", "--root", "repo"]
    assert main(args) == 1
    captured = capsys.readouterr()
    assert captured.err.count("re-measuring 2 cell(s) of bench_fake.py") == 2
    # Only the two suspected cells ran again, twice each (the torch cells were not slower).
    calls = (repository / "calls.log").read_text().split("\n")
    assert sorted(filter(None, calls)) == ["4096 jit", "4096 jit", "65536 jit", "65536 jit"]
    assert "SLOWER: re-measured 2x: 1.100x" in captured.out
    assert "FAIL: 2 of 4 cells slower beyond their limit, confirmed by re-measuring" in captured.out


def test_a_one_off_slow_run_is_not_confirmed(repository, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_SLOWDOWN", "1")  # the re-run measures the normal speed
    assert main(["compare", "base.json", "new.json", "--confirm", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("noise: re-measured 1x: 1.000x") == 2
    assert "2 suspected cell(s) were noise on re-measuring" in out


def test_a_source_that_is_gone_cannot_confirm(repository, capsys, monkeypatch):
    (repository / "bench_fake.py").unlink()
    assert main(["compare", "base.json", "new.json", "--confirm", "1"]) == 2
    assert "its source bench_fake.py is not a file under" in capsys.readouterr().err


@settings(max_examples=200, deadline=None)
@given(
    factor=st.floats(0.5, 2.0),
    base_noise=st.floats(0, 0.1),
    new_noise=st.floats(0, 0.1),
    threshold=st.floats(0.01, 0.2),
)
def test_a_slowdown_counts_only_beyond_threshold_and_noise(
    factor, base_noise, new_noise, threshold
):
    ratio, limit, verdict = judge(
        Measured(1e-6, base_noise, 1), Measured(1e-6 * factor, new_noise, 1), threshold
    )
    assert ratio == pytest.approx(factor)
    assert limit >= threshold and limit >= 2 * (base_noise + new_noise) - 1e-12
    assert (verdict == "slower?") == (factor > 1 + limit)
    if factor <= 1 + threshold:
        assert verdict != "slower?"


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
PLACES = st.sampled_from([(), ("cells", 0), ("cells", 2), ("environment",), ("cells", 1, "params")])


@settings(max_examples=100, deadline=None)
@given(
    place=PLACES, key=st.text(max_size=12) | st.sampled_from(sorted(document())), value=JSON_VALUES
)
def test_any_damaged_field_is_an_error_or_a_comparable_document(place, key, value):
    """Whatever one field holds, reading gives a DocumentError or a document compare can use."""
    data = document()
    target = data
    for step in place:
        target = target[step]
    target[key if place != ("cells", 0) or key else "latency_s"] = value
    try:
        new = parse_document(Path("fuzz.json"), json.dumps(data))
    except DocumentError as error:
        assert str(error).startswith("fuzz.json: ")
        return
    base = {"bench_x.py::benchmark": parse_document(Path("base.json"), json.dumps(document()))}
    result = compare_runs(base, [{new.benchmark: new}])
    render_text(result, ["BASE: x", "NEW: y"], "summary")
    render_markdown(result, ["BASE: x"], "summary")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
