# Sourced by verification/verify_gpu.sh and verification/verify_multi_gpu.sh: `step NAME COMMAND...` runs
# COMMAND with its output in $OUT/NAME.log, prints the log's last TAIL_LINES (default 40) lines
# and its exit code, and sets status=1 when it failed.
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
