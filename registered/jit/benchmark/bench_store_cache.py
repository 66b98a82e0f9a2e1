"""Benchmark: jit_kernel.store_cache against torch eager and torch.compile.

``k_cache[indices[i]] = k[i]; v_cache[indices[i]] = v[i]`` with unique random slots of a
262144-row cache. Lines: ``jit`` (ours, one launch for k and v), ``torch`` (eager
``k_cache[indices] = k; v_cache[indices] = v``: two index_put launches), ``torch_compile``
(the same function, ``torch.compile(dynamic=False)``) and ``flashinfer`` (N/A: FlashInfer has
no flat slot-index store; ``append_paged_kv_cache`` needs a paged layout with indptr arrays).

Bytes per call (scoped, the caches are not counted whole): k, v and indices read, k.nbytes +
v.nbytes written. Rotated input sets: k, v and indices (``graph_clone_args=(0, 1, 4)``), never
the caches (each 256 MiB .. 2 GiB).
"""

from __future__ import annotations

import torch

from ci_runner import register_cuda_ci
from jit_kernel.benchmark import marker
from jit_kernel.benchmark.utils import create_random
from jit_kernel.store_cache import store_cache

register_cuda_ci(est_time=33, suite="base-b-kernel-benchmark-1-gpu-large")

torch._dynamo.config.recompile_limit = 256

NUM_SLOTS = 1 << 18


def jit_store(k, v, k_cache, v_cache, indices) -> None:
    store_cache(k, v, k_cache, v_cache, indices)


def torch_store(k, v, k_cache, v_cache, indices) -> None:
    k_cache[indices] = k
    v_cache[indices] = v


FN_MAP = {
    "jit": jit_store,
    "torch": torch_store,
    "torch_compile": torch.compile(torch_store, dynamic=False),
    "flashinfer": None,
}
FLASHINFER_NA = (
    "FlashInfer has no flat slot-index KV store (append_paged_kv_cache needs a paged layout "
    "and indptr arrays)"
)


# Full sweep locally; CI: bf16 rows of 8 heads x 128 (2 KiB), 16 and 16384 rows.
@marker.parametrize("dtype", [torch.bfloat16, torch.float8_e4m3fn], ci_vals=[torch.bfloat16])
@marker.parametrize(
    "num_heads,head_dim", [(1, 128), (4, 128), (8, 128), (8, 256), (16, 128)], ci_vals=[(8, 128)]
)
@marker.parametrize("num_rows", [1, 16, 256, 4096, 16384, 65536], ci_vals=[16, 16384])
@marker.benchmark("impl", list(FN_MAP))
def benchmark(dtype: torch.dtype, num_heads: int, head_dim: int, num_rows: int, impl: str):
    if impl == "flashinfer":
        marker.skip(FLASHINFER_NA)
    row = num_heads * head_dim
    k = create_random(num_rows, row).to(dtype)
    v = create_random(num_rows, row).to(dtype)
    k_cache = torch.zeros(NUM_SLOTS, row, dtype=dtype, device="cuda")
    v_cache = torch.zeros(NUM_SLOTS, row, dtype=dtype, device="cuda")
    indices = torch.randperm(NUM_SLOTS, device="cuda")[:num_rows]
    args = (k, v, k_cache, v_cache, indices)
    if impl != "jit" and dtype.is_floating_point and dtype.itemsize == 1:
        # torch's index_put has no float8 kernels: move the same bytes as uint8.
        args = (*(t.view(torch.uint8) for t in args[:4]), indices)
    return marker.do_bench(
        FN_MAP[impl],
        input_args=args,
        graph_clone_args=(0, 1, 4),  # k, v and indices are read; the caches are only written
        memory_args=(args[0], args[1], indices),
        # In place (returns None): the cache rows written are as many bytes as k and v.
        memory_output=(args[0], args[1]),
    )


if __name__ == "__main__":
    benchmark.run()
