"""python -m tools.tune_kernels: --list needs no GPU, and every usage error is one clear line (exit 2)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=20, suite="base-a-test-cpu")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "tune_kernels.py"


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.tune_kernels", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        timeout=120,
    )


def test_list_names_every_family_and_the_shipped_configs_first():
    done = run("--list")
    assert done.returncode == 0, done.stderr
    for line in (
        *("activation:", "norm:", "qknorm:", "rope:", "store_cache:"),
        "A0   B128 U4",
        *("ActConfig<128, 4>", "host::row::RowConfig<128, 4>", "QKNormConfig<128, 1>"),
        "RopeConfig<256, 2, 4, 72, 128, 1, 2097152>",
        "StoreCacheConfig<128, 8, 256, 4, 2048, 1>",
        "StoreCacheConfig<128, 16, 256, 4, 2048, 1>",  # C1 changes kUnroll only
    ):
        assert line in done.stdout
    for family in ("activation", "norm", "qknorm", "rope", "store_cache"):
        first = done.stdout.split(f"{family}:\n", 1)[1].splitlines()[0]
        assert "the shipped configuration" in first


def test_variant_table_errors_name_the_entry(tmp_path):
    from tools.tune.variants import TABLE, load_table

    text = TABLE.read_text()
    bad = tmp_path / "variants.toml"
    bad.write_text(text.replace('["A1", "U2",', '["A1", "Z2",'))
    with pytest.raises(
        ValueError, match=r"variants.toml: \[activation\] A1: unknown label\(s\) \['Z'\]"
    ):
        load_table(bad)
    bad.write_text(text.replace('["A0", "",', '["A0", "U2",'))
    with pytest.raises(
        ValueError, match=r"\[activation\] the first variant must be the shipped one"
    ):
        load_table(bad)


def test_shipped_config_matches_the_header_defaults():
    """The table's defaults are the Config templates' defaults, so variant 0 is what ships."""
    import re

    from tools.tune.variants import VARIANTS

    headers = {
        "activation": "csrc/elementwise/activation.cuh",
        "norm": "include/sgl_kernel/impl/row/plan.cuh",
        "qknorm": "csrc/elementwise/qknorm.cuh",
        "rope": "csrc/elementwise/rope.cuh",
        "store_cache": "csrc/elementwise/store_cache.cuh",
    }
    for family, header in headers.items():
        text = (ROOT / "jit_kernel" / header).read_text()
        for _, name, default in VARIANTS[family][0].family.params:
            found = re.search(rf"\b{name}_ = (\d+)", text)
            assert found, f"{header}: no default for {name}"
            assert int(found.group(1)) == default, (
                f"{family} {name}: table {default}, header {found.group(1)}"
            )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--arch", "nine", "--build-only"], "--arch: 'nine' is not a CUDA architecture"),
        (["--time-budget", "0"], "--time-budget must be a positive number of seconds, got 0"),
        (["--jobs", "0"], "--jobs must be at least 1, got 0"),
        (["--replay-iters", "0"], "--replay-iters must be at least 1, got 0"),
        (["--variants", "Z9", "--list"], "tune_kernels: unknown variant(s) Z9; see --list"),
        (["--kernels", "foo"], "argument --kernels: invalid choice: 'foo'"),
    ],
)
def test_usage_errors_exit_2_with_one_line(args, message):
    done = run(*args)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_build_only_without_any_arch_says_how_to_give_one():
    done = run("--build-only", env={"CUDA_VISIBLE_DEVICES": "", "TVM_FFI_CUDA_ARCH_LIST": ""})
    assert done.returncode == 2
    assert "tune_kernels: cannot determine the CUDA target architecture" in done.stderr
    assert "Traceback" not in done.stderr


def test_tuned_shapes_come_from_the_kernels_definitions():
    """Every family's rows are cases of testing/bench/, with the check and dtype the tuner uses."""
    pytest.importorskip("torch")
    from tools.tune.shapes import family_shapes
    from tools.tune.variants import FAMILIES

    shapes = {family: family_shapes(family) for family in FAMILIES}
    counts = {family: len(rows) for family, rows in shapes.items()}
    assert counts == {"activation": 7, "norm": 6, "qknorm": 6, "rope": 6, "store_cache": 8}
    assert [(s.key, s.core) for s in shapes["norm"]] == [
        ("rmsnorm 65536x256 bf16", True),
        ("rmsnorm 65536x1024 bf16", True),
        ("fused_add_rmsnorm 65536x256 bf16", True),
        ("fused_add_rmsnorm 65536x1024 bf16", True),
        ("rmsnorm 16384x4096 bf16", False),
        ("fused_add_rmsnorm 16384x4096 bf16", False),
    ]
    assert [s.kernel for s in shapes["activation"] if not s.core] == [
        "gelu_and_mul",
        "gelu_tanh_and_mul",
    ]
    for shape in (s for rows in shapes.values() for s in rows):
        assert shape.case.check is not None and shape.dtype is not None, shape.key


def test_a_tuned_row_missing_from_the_definitions_is_named(monkeypatch):
    pytest.importorskip("torch")
    from tools.tune import shapes

    monkeypatch.setitem(shapes.ROWS, "norm", {"65536x256 bf16": True, "3x3 bf16": False})
    with pytest.raises(
        ValueError, match=r"tools/tune/shapes.py ROWS\['norm'\]: no case \['3x3 bf16'\]"
    ):
        shapes.family_shapes("norm")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
