#!/usr/bin/env bash
# Everything that needs a GPU, in one go, the way CI runs it: the unit suite, the nightly suite
# (full grids), the benchmark suite, compute-sanitizer memcheck over the kernel tests, and the
# kernel bandwidth/peer/host-overhead benchmark. Logs go to $OUT (default ./gpu-verify). Exit code: non-zero if any
# step failed.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-verify}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 SGLANG_IS_IN_CI="${SGLANG_IS_IN_CI:-1}"
export JIT_KERNEL_CACHE_DIR="${JIT_KERNEL_CACHE_DIR:-$OUT/jit-cache}"
PY="${PYTHON:-python3}"
# shellcheck source=verification/verify_steps.sh
. verification/verify_steps.sh
step precompile "$PY" -m jit_kernel precompile
step unit "$PY" run_suite.py --hw cuda --suite base-b-kernel-unit-1-gpu-large \
  --junit-xml "$OUT/unit.xml" --continue-on-error
step nightly "$PY" run_suite.py --hw cuda --suite nightly-kernel-1-gpu --nightly --continue-on-error
step bench_suite "$PY" run_suite.py --hw cuda --suite base-b-kernel-benchmark-1-gpu-large --show-output
memcheck_steps
step bench_kernels "$PY" -m benchmarks.bench_jit_kernels --json "$OUT/bench_kernels.json" --check
exit "$status"
