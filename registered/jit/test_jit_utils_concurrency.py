"""Several processes build the same module at once with an empty cache: all succeed, one file,
and the compiler runs once (the others wait on the module's build lock)."""

import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers_jit_toolchain import run_python, subprocess_env, write_cpp_kernel

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=23, suite="base-a-test-cpu")

WORKERS = 6

WORKER_SCRIPT = """
import sys, time
from pathlib import Path
from jit_kernel.compiler import load_jit
go = Path(sys.argv[2])
while not go.exists():
    time.sleep(0.005)
module = load_jit("race", cpp_files=[sys.argv[1]], cpp_wrappers=[("add_k", "add_k<5>")])
print(module.add_k(1))
"""


def test_concurrent_builds_publish_one_library(tmp_path: Path):
    source = write_cpp_kernel(tmp_path / "k")
    cache = tmp_path / "cache"
    go = tmp_path / "go"
    log = tmp_path / "compiler.log"
    compiler = tmp_path / "logging-c++"  # logs every compiler run, then runs the real one
    compiler.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec c++ "$@"\n')
    compiler.chmod(0o755)
    env = subprocess_env(cache, CXX=str(compiler))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER_SCRIPT, str(source), str(go)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(WORKERS)
    ]
    time.sleep(3)  # let every worker import torch/tvm_ffi and wait at the start line
    go.touch()
    outputs = [proc.communicate(timeout=300) for proc in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert out.strip() == str(1 + 5 + 40)
    libraries = list(cache.glob("jit_race_*/*.so"))
    assert len(libraries) == 1
    assert sorted(p.name for p in libraries[0].parent.iterdir()) == [
        "jit_race.so",
        "jit_race.so.json",
        "jit_race.so.toolchain.json",
        "key.json",
    ]
    assert list((cache / ".staging").iterdir()) == [], "no partial or leftover build directories"
    runs = log.read_text().splitlines()
    assert sum(" -c " in run for run in runs) == 1, runs  # one compile, one link: one build
    # a fresh process now hits the cache
    hit = run_python(["-c", WORKER_SCRIPT, str(source), str(go)], env)
    assert hit.returncode == 0 and hit.stdout.strip() == "46", hit.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
