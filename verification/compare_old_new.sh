#!/usr/bin/env bash
# Old and new kernels side by side on one GPU, in one session: the benchmark suite of the old
# code and of this tree (new, old, new; JSON per benchmark file), compared cell by cell, then
# this tree's unit, nightly and benchmark suites and compute-sanitizer memcheck of every kernel
# test. Logs and JSON go to $OUT (default ./compare-old-new); the exit code is non-zero if any
# step failed.
#
#   verification/compare_old_new.sh OLD_DIR [STEP ...]
#
# OLD_DIR: a full copy of the old tree (e.g. `git archive main | tar -x -C old-main`), with its
# jit_kernel/, ci_runner/, run_suite.py and registered benchmarks. STEPs, in the order given
# (default: all): bench (= precompile, bench_new_1, bench_old, bench_new_2, compare: both trees
# precompiled, the benchmark suite timed new/old/new, the cells compared by
# `python -m jit_kernel.benchmark compare`), unit, nightly, bench_suite, memcheck. Each step but
# bench fits one 10-minute device command.
set -uo pipefail
OLD=$(cd "${1:?usage: verification/compare_old_new.sh OLD_DIR [STEP ...]}" && pwd) || exit 2
shift
cd "$(dirname "$0")/.."
NEW=$PWD
OUT="${OUT:-$NEW/compare-old-new}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 SGLANG_IS_IN_CI="${SGLANG_IS_IN_CI:-1}"
PY="${PYTHON:-python3}"
BENCH_SUITE=base-b-kernel-benchmark-1-gpu-large
# shellcheck source=verification/verify_steps.sh
. verification/verify_steps.sh
if [ ! -f "$OLD/run_suite.py" ]; then
  echo "compare_old_new: $OLD has no run_suite.py (a full copy of the old tree is needed)" >&2
  exit 2
fi
# Each tree imports its own packages and builds into its own JIT cache.
old() { (cd "$OLD" && PYTHONPATH="$OLD${PYTHONPATH:+:$PYTHONPATH}" JIT_KERNEL_CACHE_DIR="$OUT/jit-old" "$@"); }
new() { PYTHONPATH="$NEW${PYTHONPATH:+:$PYTHONPATH}" JIT_KERNEL_CACHE_DIR="$OUT/jit-new" "$@"; }

KERNEL_TESTS=$(new "$PY" -m verification.kernel_tests)
run_step() {
  case "$1" in
    bench) for part in precompile bench_new_1 bench_old bench_new_2 compare; do run_step "$part"; done ;;
    precompile)
      step precompile_old old "$PY" -m jit_kernel precompile
      step precompile_new new "$PY" -m jit_kernel precompile ;;
    bench_new_1 | bench_new_2)
      rm -rf "${OUT:?}/$1"
      step "$1" new env JIT_KERNEL_BENCH_JSON="$OUT/$1/" "$PY" run_suite.py --hw cuda \
        --suite "$BENCH_SUITE" --continue-on-error ;;
    bench_old)
      rm -rf "${OUT:?}/bench_old"
      step bench_old old env JIT_KERNEL_BENCH_JSON="$OUT/bench_old/" "$PY" run_suite.py --hw cuda \
        --suite "$BENCH_SUITE" --continue-on-error ;;
    compare)
      # NEW is the median of the two new runs, so a drift of the GPU's speed during the session
      # cancels; the old tree's files may be schema_version 1, which compare reads.
      step compare new "$PY" -m jit_kernel.benchmark compare "$OUT/bench_old" \
        "$OUT/bench_new_1" "$OUT/bench_new_2" --threshold 0.02 ;;
    unit)
      step unit new "$PY" run_suite.py --hw cuda --suite base-b-kernel-unit-1-gpu-large \
        --junit-xml "$OUT/unit.xml" --continue-on-error ;;
    nightly)
      step nightly new "$PY" run_suite.py --hw cuda --suite nightly-kernel-1-gpu --nightly \
        --continue-on-error ;;
    bench_suite)
      step bench_suite new "$PY" run_suite.py --hw cuda --suite "$BENCH_SUITE" ;;
    memcheck)
      # As verify_gpu.sh: without the caching allocator first (every allocation its own
      # cudaMalloc, so reads past a tensor's end are caught), then the graph tests with it.
      step memcheck new env PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool memcheck \
        --target-processes all "$PY" -m pytest -q -p no:cacheprovider \
        -k "not graph and not 2_pow_31 and not 4_gib" $KERNEL_TESTS
      step memcheck_graphs new compute-sanitizer --tool memcheck --target-processes all \
        "$PY" -m pytest -q -p no:cacheprovider -k "graph" $KERNEL_TESTS ;;
    *)
      echo "compare_old_new: unknown step '$1' (bench or its parts precompile, bench_new_1," \
        "bench_old, bench_new_2, compare; unit, nightly, bench_suite, memcheck)" >&2
      status=1 ;;
  esac
}
[ "$#" -gt 0 ] || set -- bench unit nightly bench_suite memcheck
for name in "$@"; do run_step "$name"; done
exit "$status"
