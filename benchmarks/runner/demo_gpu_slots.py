"""The GPU-slot scheduler on real hardware: 1-GPU files side by side, a 2-GPU file on both.

Run on a machine with two or more GPUs::

    python -m benchmarks.runner.demo_gpu_slots [--seconds 8]

It writes a throwaway repository (its own ``[tool.ci-runner]`` catalog) with two 1-GPU test
files that each keep their GPU busy for ``--seconds`` and one file registered with
``min_gpus=2`` in a ``gpus-per-file = "all"`` suite, then runs ``run_suite.py`` on it three times:

1. the 1-GPU files with every GPU as a slot: they run in parallel, each seeing only its own GPU
   in ``CUDA_VISIBLE_DEVICES``;
2. the same with ``--gpus 1`` (one slot: sequential), for the wall-time comparison;
3. the 2-GPU file, which gets both GPUs.

Each test file asserts what it was given (``torch.cuda.device_count()`` and
``CUDA_VISIBLE_DEVICES``) and prints it, so the console shows it. Exit code: non-zero if either
run fails or the parallel run is not faster than the sequential one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

CATALOG = """
[tool.ci-runner]
registered-dir = "registered"

[[tool.ci-runner.suites]]
name = "demo-1-gpu"
hw = "cuda"
nightly = false
gpus-per-file = 1
timeout-per-file = 300

[[tool.ci-runner.suites]]
name = "demo-all-gpus"
hw = "cuda"
nightly = false
gpus-per-file = "all"
timeout-per-file = 300
"""

ONE_GPU_TEST = """
import os, sys, time
import torch
from ci_runner import register_cuda_ci

register_cuda_ci(est_time={seconds}, suite="demo-1-gpu")


def test_sees_only_its_gpu():
    visible = os.environ["CUDA_VISIBLE_DEVICES"]
    assert torch.cuda.device_count() == 1 and "," not in visible
    x = torch.randn(4096, 4096, device="cuda")
    start = time.time()
    while time.time() - start < {seconds}:
        x = (x @ x).tanh_()
    torch.cuda.synchronize()
    print(f"{{__file__}}: CUDA_VISIBLE_DEVICES={{visible}} device_count=1 busy {seconds}s", flush=True)


if __name__ == "__main__":
    import pytest
    sys.exit(pytest.main([__file__, "-q", "-s"]))
"""

TWO_GPU_TEST = """
import os, sys
import torch
from ci_runner import register_cuda_ci

register_cuda_ci(est_time=5, suite="demo-all-gpus", min_gpus=2)


def test_gets_every_gpu():
    count = torch.cuda.device_count()
    assert count >= 2
    a = torch.arange(1 << 20, device="cuda:0", dtype=torch.float32)
    b = a.to("cuda:1")  # a device-to-device copy between the two GPUs it was given
    assert torch.equal(b.cpu(), a.cpu())
    visible = os.environ["CUDA_VISIBLE_DEVICES"]
    print(f"{__file__}: CUDA_VISIBLE_DEVICES={visible} device_count={count}", flush=True)


if __name__ == "__main__":
    import pytest
    sys.exit(pytest.main([__file__, "-q", "-s"]))
"""


def write_tree(root: Path, seconds: int) -> None:
    """The throwaway repository: catalog plus three registered files."""
    (root / "pyproject.toml").write_text(CATALOG)
    tests = root / "registered"
    tests.mkdir()
    for name in ("test_busy_a.py", "test_busy_b.py"):
        (tests / name).write_text(ONE_GPU_TEST.format(seconds=seconds))
    (tests / "test_pair.py").write_text(TWO_GPU_TEST)


def run_suite(root: Path, suite: str, *extra: str) -> tuple[int, float]:
    """Run run_suite.py on the throwaway tree, echoing its console; (exit code, wall seconds)."""
    command = [sys.executable, str(REPO_ROOT / "run_suite.py"), "--root", str(root)]
    command += ["--hw", "cuda", "--suite", suite, "--show-output", *extra]
    print("$ " + " ".join(command[1:]), flush=True)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    start = time.perf_counter()
    done = subprocess.run(command, cwd=root, env=env, check=False)
    return done.returncode, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--seconds", type=int, default=8, help="GPU-busy seconds of each 1-GPU file (default 8)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpu-slots-demo-") as tmp:
        root = Path(tmp)
        write_tree(root, args.seconds)
        rc_parallel, parallel = run_suite(root, "demo-1-gpu")
        rc_sequential, sequential = run_suite(root, "demo-1-gpu", "--gpus", "1")
        rc_pair, _ = run_suite(root, "demo-all-gpus")
    print(
        f"\nwall time of the two 1-GPU files: {parallel:.1f} s with every GPU a slot, "
        f"{sequential:.1f} s with one slot (sequential): {sequential / parallel:.2f}x"
    )
    if rc_parallel or rc_sequential or rc_pair:
        print(
            f"FAILED: exit codes {rc_parallel} (slots), {rc_sequential} (one slot), {rc_pair} (pair)"
        )
        return 1
    if parallel >= sequential:
        print("FAILED: the parallel run was not faster than the sequential one")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
