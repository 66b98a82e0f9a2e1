# Sourced by the verification/verify_*.sh scripts: `step NAME COMMAND...` runs COMMAND with its
# output in $OUT/NAME.log, prints the log's last TAIL_LINES (default 40) lines and its exit code,
# and sets status=1 when it failed. `memcheck_steps` runs the kernel tests under memcheck.
status=0
step() {
  local name=$1; shift
  echo "=== $name: $*"
  "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  tail -n "${TAIL_LINES:-40}" "$OUT/$name.log"
  echo "=== $name: exit $rc"
  [ "$rc" -eq 0 ] || status=1
}

# compute-sanitizer memcheck over every kernel test file of the unit suite (the CI grid; the
# list comes from the registries: verification/kernel_tests.py), with $PY. Without the
# caching allocator every allocation is its own cudaMalloc, so memcheck sees out-of-bounds
# accesses at the tensor's edge; CUDA-graph capture needs the caching allocator (no cudaMalloc
# while capturing), so the capture tests run in a second step with it. The >2^31-element tests
# are left out (minutes each here).
memcheck_steps() {
  local tests
  tests=$("$PY" -m verification.kernel_tests)
  # shellcheck disable=SC2086  # tests is a list of paths
  step memcheck env PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool memcheck \
    --target-processes all "$PY" -m pytest -q -p no:cacheprovider \
    -k "not graph and not 2_pow_31 and not 4_gib" $tests
  # shellcheck disable=SC2086
  step memcheck_graphs compute-sanitizer --tool memcheck --target-processes all \
    "$PY" -m pytest -q -p no:cacheprovider -k "graph" $tests
}
