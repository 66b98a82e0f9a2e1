#!/usr/bin/env bash
# The element-wise kernels (every kernel built on host::elementwise::map: the kernels whose tests
# a change to impl/elementwise.cuh selects, verification/kernel_tests.py) on one GPU, in a few
# minutes: precompile them; their tests with the full grids (every size and alignment, unaligned
# views included); the same tests (CI grids) under compute-sanitizer memcheck; their benchmark
# files (CI sweep); their rows of the kernel benchmark with --check. Logs go to $OUT (default
# ./gpu-verify-elementwise). Exit code: non-zero if any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-verify-elementwise}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export JIT_KERNEL_CACHE_DIR="${JIT_KERNEL_CACHE_DIR:-$OUT/jit-cache}"
PY="${PYTHON:-python3}"
# shellcheck source=verification/verify_steps.sh
. verification/verify_steps.sh
MAP=jit_kernel/include/sgl_kernel/impl/elementwise.cuh
TESTS=$("$PY" -m verification.kernel_tests --uses "$MAP")
KERNELS=$("$PY" -m verification.kernel_tests --uses "$MAP" --kernels)
BENCHES=$("$PY" -m verification.kernel_tests --uses "$MAP" \
  --suite base-b-kernel-benchmark-1-gpu-large)
step precompile "$PY" -m jit_kernel precompile --only "$(echo "$KERNELS" | paste -sd, -)"
# shellcheck disable=SC2086  # TESTS is a list of paths
step tests env SGLANG_JIT_KERNEL_RUN_FULL_TESTS=1 "$PY" -m pytest -q -rs -p no:cacheprovider $TESTS
# shellcheck disable=SC2086
step memcheck env SGLANG_IS_IN_CI=1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer \
  --tool memcheck --target-processes all "$PY" -m pytest -q -p no:cacheprovider $TESTS
for bench in $BENCHES; do
  step "$(basename "$bench" .py)" env SGLANG_IS_IN_CI=1 "$PY" "$bench"
done
# shellcheck disable=SC2086  # KERNELS is a list of names
step bench_kernels "$PY" -m benchmarks.bench_jit_kernels --only $KERNELS \
  --json "$OUT/bench_kernels.json" --check
exit "$status"
