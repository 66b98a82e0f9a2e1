#!/usr/bin/env bash
# The benchmark regression gate (python -m jit_kernel.benchmark compare) on one GPU, in about two
# minutes. jit_kernel.scale at three memory-bound sizes, against torch:
#   unchanged_2..6  runs 2..6 of the unchanged code, each compared with run 1 (--confirm 2)
#   unchanged_all   runs 2..6 at once (their median)                                 expect 0
#   slowed          a run of a copy whose jit call makes one more pass over a tenth of
#                   the data (read + write, not a sleep), without and with --confirm 2,
#                   the re-measure running the slowed code too                       expect 1
#   one_off         the same slow result, re-measured on the unchanged code          expect 0
# The slowed copy is generated in a temporary directory inside the tree, never shipped. Tables,
# JSON and plots go to $OUT (default ./gpu-verify-gate). Exit code: non-zero if a run failed or a
# compare ended otherwise than expected.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-verify-gate}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export JIT_KERNEL_CACHE_DIR="${JIT_KERNEL_CACHE_DIR:-$OUT/jit-cache}"
unset SGLANG_IS_IN_CI SGLANG_JIT_KERNEL_RUN_FULL_TESTS JIT_KERNEL_BENCH_JSON JIT_KERNEL_BENCH_PLOT
PY="${PYTHON:-python3}"
# Results name their benchmark file relative to the repository root; re-runs start there.
ROOT=$(git rev-parse --show-toplevel 2>/dev/null || pwd)
GATE=$(mktemp -d "$PWD/.gate-XXXXXX") || exit 2
trap 'rm -rf "$GATE"' EXIT
BENCH=$GATE/bench_scale_gate.py
cat > "$BENCH" <<'PY'
"""jit_kernel.scale vs torch at memory-bound sizes; GATE_SLOW=1 slows the jit call's copy."""

import os

import torch

from jit_kernel.benchmark import marker
from jit_kernel.benchmark.utils import create_random
from jit_kernel.scale import scale

SLOW = os.environ.get("GATE_SLOW") == "1"


def jit(src: torch.Tensor, factor: float) -> torch.Tensor:
    out = scale(src, factor)
    if SLOW:  # one more pass over the first tenth, writing the same values again
        tenth = src.numel() // 10
        scale(src[:tenth], factor, out=out[:tenth])
    return out


def torch_scale(src: torch.Tensor, factor: float) -> torch.Tensor:
    return src * factor


FN = {"jit": jit, "torch": torch_scale}


@marker.parametrize("size", [2**24, 2**25, 2**26])
@marker.benchmark("impl", list(FN))
def benchmark(size: int, impl: str) -> marker.BenchResult:
    src = create_random(size, dtype=torch.bfloat16)
    return marker.do_bench(FN[impl], input_args=(src, 2.0), graph_clone_args=(0,))


if __name__ == "__main__":
    benchmark.run()
PY
status=0
measure() {  # measure NAME: one run of the benchmark, JSON to $OUT/NAME.json
  if ! "$PY" "$BENCH" --json "$OUT/$1.json" > "$OUT/$1.log" 2>&1; then
    echo "=== $1: the benchmark failed"; tail -20 "$OUT/$1.log"; status=1
  fi
}
expect() {  # expect RC NAME ARGS...: one compare, tables to $OUT/NAME.txt and .md; exit must be RC
  local want=$1 name=$2
  shift 2
  "$PY" -m jit_kernel.benchmark compare "$@" --root "$ROOT" --markdown "$OUT/$name.md" \
    > "$OUT/$name.txt" 2> "$OUT/$name.err"
  local rc=$?
  echo "=== $name: exit $rc (expected $want)"
  cat "$OUT/$name.txt"
  tail -3 "$OUT/$name.err"
  [ "$rc" -eq "$want" ] || status=1
}
for i in 1 2 3 4 5 6; do measure "run$i"; done
cat "$OUT/run1.log"
GATE_SLOW=1 measure slow
cat "$OUT/slow.log"
expect 1 slowed_unconfirmed "$OUT/run1.json" "$OUT/slow.json"
GATE_SLOW=1 expect 1 slowed "$OUT/run1.json" "$OUT/slow.json" --confirm 2
for i in 2 3 4 5 6; do expect 0 "unchanged_$i" "$OUT/run1.json" "$OUT/run$i.json" --confirm 2; done
expect 0 unchanged_all "$OUT/run1.json" "$OUT"/run{2,3,4,5,6}.json
expect 0 one_off "$OUT/run1.json" "$OUT/slow.json" --confirm 1
if "$PY" -c "import matplotlib" 2> /dev/null; then
  for name in run1 slow; do
    "$PY" -m jit_kernel.benchmark plot "$OUT/$name.json" -o "$OUT/$name.png" || status=1
  done
else
  echo "note: matplotlib is not installed, no plots (pip install -e .[bench])"
fi
exit "$status"
