"""``python -m jit_kernel.benchmark plot`` on stored results generated here (no GPU)."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from helpers_bench_results import document, write

from ci_runner import register_cpu_ci
from jit_kernel.benchmark.cli import main
from jit_kernel.benchmark.document import document_from_dict
from jit_kernel.benchmark.plot import choose_baseline, title

register_cpu_ci(est_time=5, suite="base-a-test-cpu")

HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
PNG = b"\x89PNG\r\n\x1a\n"


def stored(**environment) -> dict:
    data = document()
    data["environment"].update(environment)
    return data


def test_title_names_benchmark_device_commit_and_time():
    data = stored(jit_kernel_dirty=True, timestamp="2026-11-27T21:00:00Z")
    text = title(document_from_dict(Path("x.json"), data))
    assert text == (
        "bench_x.py::benchmark\n"
        "NVIDIA H100 80GB HBM3, commit ababababab (+local changes), 2026-11-27T21:00:00Z"
    )
    data["environment"] = {}
    assert "GPU unknown, commit unknown" in title(document_from_dict(Path("x.json"), data))


def test_baseline_provider_defaults_to_torch_and_must_exist(tmp_path, capsys):
    doc = document_from_dict(Path("x.json"), document())
    assert choose_baseline(doc, None) == "torch"
    assert choose_baseline(doc, "jit") == "jit"
    path = write(tmp_path / "r.json", document())
    assert main(["plot", path, "--baseline", "flashinfer"]) == 2
    err = capsys.readouterr().err
    assert "--baseline 'flashinfer' is not a provider of" in err and "(impl: jit, torch)" in err


@pytest.mark.skipif(not HAS_MATPLOTLIB, reason="matplotlib is not installed (bench extra)")
def test_plot_redraws_a_stored_result_with_its_panels(tmp_path, capsys, monkeypatch):
    path = write(tmp_path / "r.json", stored(copy_gbps=3000.0))
    drawn = []
    import matplotlib.axes

    original = matplotlib.axes.Axes.axhline
    monkeypatch.setattr(
        matplotlib.axes.Axes,
        "axhline",
        lambda self, y=0, *a, **k: drawn.append((y, k.get("label"))) or original(self, y, *a, **k),
    )
    assert main(["plot", path]) == 0
    assert f"plot written to {tmp_path / 'r.png'}" in capsys.readouterr().out
    assert (tmp_path / "r.png").read_bytes()[:8] == PNG
    assert (3000.0, "copy bandwidth (measured) 3000") in drawn  # from the JSON
    assert (1.0, None) in drawn  # the speed-up panel's parity line
    drawn.clear()
    assert main(["plot", path, "-o", str(tmp_path / "o" / "p.png"), "--peak-gbps", "2500"]) == 0
    assert (2500.0, "copy bandwidth (given) 2500") in drawn
    assert (tmp_path / "o" / "p.png").read_bytes()[:8] == PNG


@pytest.mark.skipif(not HAS_MATPLOTLIB, reason="matplotlib is not installed (bench extra)")
def test_a_version_1_result_and_skipped_cells_still_plot(tmp_path):
    latency = {(4096, "jit"): 1e-6, (4096, "torch"): None, (65536, "jit"): 2e-6}
    path = write(tmp_path / "v1.json", document(latency, version=1))
    assert main(["plot", path]) == 0
    assert (tmp_path / "v1.png").stat().st_size > 1000


def test_damaged_result_and_bad_options_exit_2(tmp_path, capsys):
    bad = write(tmp_path / "bad.json", json.dumps(document())[:100])
    assert main(["plot", bad]) == 2
    assert f"error: {bad}: not valid JSON" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["plot", bad, "--peak-gbps", "-3"])
    assert exit_info.value.code == 2
    assert "expected a bandwidth in GB/s > 0, got '-3'" in capsys.readouterr().err
    for value in ("inf", "nan", "fast"):
        with pytest.raises(SystemExit):
            main(["plot", bad, "--peak-gbps", value])
        assert f"expected a bandwidth in GB/s > 0, got '{value}'" in capsys.readouterr().err


def test_without_matplotlib_plot_says_how_to_install_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    path = write(tmp_path / "r.json", document())
    assert main(["plot", path]) == 2
    err = capsys.readouterr().err
    assert "matplotlib is not installed (pip install matplotlib, or the project's [bench]" in err
    assert not (tmp_path / "r.png").exists()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
