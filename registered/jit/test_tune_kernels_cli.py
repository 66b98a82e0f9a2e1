"""tools/tune_kernels.py: --list needs no GPU, and every usage error is one clear line (exit 2)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=15, suite="base-a-test-cpu")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "tune_kernels.py"


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        timeout=120,
    )


def test_list_names_every_family_and_the_baselines():
    done = run("--list")
    assert done.returncode == 0, done.stderr
    for line in (
        *("activation:", "norm:", "qknorm:", "rope:", "store_cache:"),
        *("A0 ", "N0 ", "Q0 ", "R0 ", "C0 "),
        *("-DSGL_ACT_BLOCK=256", "-DSGL_ROPE_SPREAD=0", "-DSGL_STORE_PERSISTENT=1"),
    ):
        assert line in done.stdout


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


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
