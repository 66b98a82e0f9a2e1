"""Cost of a cache hit in ``load_jit``: the first call in a fresh process, and a repeated call.

Builds (if missing) the ``scale``, ``rope`` and ``rmsnorm`` modules for ``--arch`` into
``$JIT_KERNEL_CACHE_DIR``, then, in fresh processes (imports done before timing), times

* **first call**: the first ``load_jit`` of each module in the process (key, cache check,
  ``dlopen``), the median over ``--repeats`` processes;
* **warm call**: ``load_jit`` again for a module the process already loaded (key, cache check,
  tvm-ffi's load of a library already mapped), the median over 50 calls.

Each as wall time and as the process's CPU time (``time.process_time``), which a shared,
loaded machine inflates less.

Needs nvcc to build and no GPU (a CUDA module's library loads without one)::

    JIT_KERNEL_CACHE_DIR=/tmp/c python -m benchmarks.bench_jit_load --arch 9.0
    JIT_KERNEL_CACHE_DIR=/tmp/c0 python -m benchmarks.bench_jit_load --repo /tmp/main-copy
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
MODULES = ("scale", "rope", "rmsnorm")

CHILD = """
import importlib, json, statistics, sys, time
getters = [getattr(importlib.import_module(f"jit_kernel.{name}"), f"_jit_{name}_module").__wrapped__
           for name in sys.argv[1:]]
def timed(call):
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return (time.perf_counter() - wall) * 1e3, (time.process_time() - cpu) * 1e3
first = [timed(getter) for getter in getters]
warm = [timed(getters[0]) for _ in range(50)]
print(json.dumps({"first": first, "warm": [statistics.median(w[i] for w in warm) for i in (0, 1)]}))
"""


def build(arch: str, repo: Path, env: dict[str, str]) -> None:
    """Build the modules once (``python -m jit_kernel precompile``), so every child hits."""
    command = [sys.executable, "-m", "jit_kernel", "precompile", "--arch", arch]
    for name in MODULES:
        command += ["--only", name]
    subprocess.run(command, check=True, cwd=repo, env=env, stdout=subprocess.DEVNULL)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="9.0", help="target architecture (default 9.0)")
    parser.add_argument("--repeats", type=int, default=7, help="fresh processes (default 7)")
    parser.add_argument(
        "--repo",
        type=Path,
        default=REPO_ROOT,
        help="the checkout whose jit_kernel is timed (default: this one); give another, with "
        "another JIT_KERNEL_CACHE_DIR, to compare two versions on one machine",
    )
    args = parser.parse_args(argv)
    env = {**os.environ, "TVM_FFI_CUDA_ARCH_LIST": args.arch}
    env["PYTHONPATH"] = os.pathsep.join([str(args.repo), env.get("PYTHONPATH", "")])
    build(args.arch, args.repo, env)
    samples = []
    for _ in range(args.repeats):
        done = subprocess.run(
            [sys.executable, "-c", CHILD, *MODULES],
            capture_output=True,
            text=True,
            env=env,
            cwd=args.repo,
            check=True,
        )
        samples.append(json.loads(done.stdout.splitlines()[-1]))
    print("                       wall ms   CPU ms (medians)")
    for index, name in enumerate(MODULES):
        wall, cpu = (statistics.median(s["first"][index][i] for s in samples) for i in (0, 1))
        print(f"first call  {name:8s} {wall:8.2f} {cpu:8.2f}")
    wall, cpu = (statistics.median(s["warm"][i] for s in samples) for i in (0, 1))
    print(f"warm call   {MODULES[0]:8s} {wall:8.3f} {cpu:8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
