#!/usr/bin/env bash
# Everything that needs several GPUs, in one go, the way CI runs it: peer access and topology,
# the multi-GPU unit suite, compute-sanitizer memcheck on one all-reduce rank, the nightly
# multi-GPU suite (with its all-reduce benchmark), the all-reduce sweep against NCCL at every
# world size from 2 to the GPU count, and the GPU-slot scheduler demo. Logs go to $OUT (default
# ./gpu-verify-multi). Exit code: non-zero if any step failed. NVLink multicast stays off.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-verify-multi}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 SGLANG_IS_IN_CI="${SGLANG_IS_IN_CI:-1}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export JIT_KERNEL_CACHE_DIR="${JIT_KERNEL_CACHE_DIR:-$OUT/jit-cache}"
PY="${PYTHON:-python3}"
# shellcheck source=verification/verify_steps.sh
. verification/verify_steps.sh
GPUS=$("$PY" -c "import torch; print(torch.cuda.device_count())" 2>/dev/null || echo 0)
echo "GPUs: $GPUS"
if [ "$GPUS" -lt 2 ]; then
  echo "verify_multi_gpu: needs two or more GPUs, found $GPUS" >&2
  exit 2
fi
step topology "$PY" -m jit_kernel.distributed.topology
step precompile "$PY" -m jit_kernel precompile
step unit "$PY" run_suite.py --hw cuda --suite base-b-kernel-unit-8-gpu-h200 \
  --junit-xml "$OUT/unit.xml" --continue-on-error
step memcheck "$PY" -m verification.memcheck_all_reduce --world-size 2 --sanitized-rank 0 \
  --log-dir "$OUT/memcheck-logs"
step nightly "$PY" run_suite.py --hw cuda --suite nightly-kernel-8-gpu-h200 --nightly \
  --continue-on-error --show-output
step bench_all_reduce "$PY" -m benchmarks.bench_all_reduce --world-sizes $(seq 2 "$GPUS") \
  --json "$OUT/all_reduce.json"
step gpu_slots "$PY" -m benchmarks.runner.demo_gpu_slots
exit "$status"
