#!/usr/bin/env bash
# The JIT cache's dependency record and the wrappers' argument checks on one GPU: precompile
# into a cold cache (every nvcc build writes its dependency file); the unit suite from that
# cache with the load log on, and the log checked; a CUDA module whose headers are included
# through a macro, a BOM, a digraph and an -I flag rebuilt when each changes; compute-sanitizer
# memcheck over the kernel tests; the argument-type tests (rope's is_neox=1 among them). Logs go
# to $OUT (default ./gpu-verify-jit-cache). Exit code: non-zero if any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-verify-jit-cache}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 SGLANG_IS_IN_CI="${SGLANG_IS_IN_CI:-1}"
export JIT_KERNEL_CACHE_DIR="${JIT_KERNEL_CACHE_DIR:-$OUT/jit-cache}"
PY="${PYTHON:-python3}"
# shellcheck source=verification/verify_steps.sh
. verification/verify_steps.sh
rm -rf "$OUT/load-log"
step precompile "$PY" -m jit_kernel precompile
step unit env JIT_KERNEL_LOAD_LOG="$OUT/load-log" "$PY" run_suite.py --hw cuda \
  --suite base-b-kernel-unit-1-gpu-large --junit-xml "$OUT/unit.xml" --continue-on-error
step load_log "$PY" -m verification.check_load_log "$OUT/load-log"
step stale_headers "$PY" -m verification.stale_header_cuda
memcheck_steps
step argument_types "$PY" -m pytest -q -p no:cacheprovider registered/jit/test_wrapper_argument_types.py \
  "registered/jit/test_rope.py::test_rope_rejects_bad_keyword_types"
exit "$status"
