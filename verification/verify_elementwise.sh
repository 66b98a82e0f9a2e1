#!/usr/bin/env bash
# The element-wise kernels (add3, scale, add_constant: host::elementwise::map) on one GPU, in a
# few minutes: precompile them; their tests with the full grids (every size and alignment,
# unaligned views included); the same tests (CI grids) under compute-sanitizer memcheck; add3's
# benchmark file (CI sweep); their rows of the kernel benchmark with --check. Logs go to $OUT
# (default ./gpu-verify-elementwise). Exit code: non-zero if any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-verify-elementwise}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export JIT_KERNEL_CACHE_DIR="${JIT_KERNEL_CACHE_DIR:-$OUT/jit-cache}"
PY="${PYTHON:-python3}"
# shellcheck source=verification/verify_steps.sh
. verification/verify_steps.sh
TESTS="registered/jit/test_add3.py registered/jit/test_scale.py registered/jit/test_add_constant.py"
step precompile "$PY" -m jit_kernel precompile --only add3,scale,add_constant
# shellcheck disable=SC2086  # TESTS is a list of paths
step tests env SGLANG_JIT_KERNEL_RUN_FULL_TESTS=1 "$PY" -m pytest -q -rs -p no:cacheprovider $TESTS
# shellcheck disable=SC2086
step memcheck env SGLANG_IS_IN_CI=1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer \
  --tool memcheck --target-processes all "$PY" -m pytest -q -p no:cacheprovider $TESTS
step bench_add3 env SGLANG_IS_IN_CI=1 "$PY" registered/jit/benchmark/bench_add3.py
step bench_kernels "$PY" -m benchmarks.bench_jit_kernels --only add3 scale add_constant \
  --json "$OUT/bench_kernels.json" --check
exit "$status"
