"""store_cache for ``benchmarks/bench_jit_kernels.py``: KV rows scattered into a 262144-row cache.

``bandwidth_cases()``: 16384 and 65536 rows of 1, 2 and 4 KiB (bf16, 4/8/16 heads x 128) into
unique random slots, ours against torch eager (``k_cache[indices] = k; v_cache[indices] = v``),
``torch.compile`` of the same and FlashInfer (N/A: no flat slot-index store). ``bytes_moved``:
k and v read and written once each (the caches are touched only where written) plus the
indices. Rows of 256 B (1 head x 128, one KV head per rank) carry the same targets. Upstream
SGLang's ``StoreKVCacheKernel`` (one module per row size) is a peer at every size. Decode
batches (16 and 64 rows of 2 KiB, 16 rows of 256 B) are decode rows: at 8-256 KiB a call is
bound by latency, not bandwidth.

``overhead_cases()``: host time per call at 16 rows of 8 x 128 bf16: wrapper vs a bare call
of the module's export vs torch eager. Importing this module needs no GPU.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from benchmarks.cases.case import BandwidthCase, OverheadCase
from benchmarks.upstream_sglang import kernels as upstream
from jit_kernel.store_cache import _jit_store_cache_module, store_cache

BF16 = torch.bfloat16
NUM_SLOTS = 1 << 18
FLASHINFER_NA = (
    "FlashInfer has no flat slot-index KV store (append_paged_kv_cache needs a paged layout)"
)
# (rows, heads, head_dim, decode)
SPECS = [
    (16384, 4, 128, False),
    (16384, 8, 128, False),
    (65536, 8, 128, False),
    (16384, 16, 128, False),
    (65536, 1, 128, False),
    (16, 8, 128, True),
    (64, 8, 128, True),
    (16, 1, 128, True),
]


def torch_store(k, v, k_cache, v_cache, indices) -> None:
    k_cache[indices] = k
    v_cache[indices] = v


@functools.cache
def _compiled() -> Any:
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)
    return torch.compile(torch_store, dynamic=False)


def _inputs(rows: int, row: int) -> tuple[torch.Tensor, ...]:
    k = torch.randn(rows, row, dtype=BF16, device="cuda")
    v = torch.randn(rows, row, dtype=BF16, device="cuda")
    k_cache = torch.zeros(NUM_SLOTS, row, dtype=BF16, device="cuda")
    v_cache = torch.zeros(NUM_SLOTS, row, dtype=BF16, device="cuda")
    indices = torch.randperm(NUM_SLOTS, device="cuda")[:rows]
    return k, v, k_cache, v_cache, indices


def _check(fn: Any, inputs: tuple[Any, ...]) -> None:
    k, v, k_cache, v_cache, indices = inputs
    k_cache[indices] = 0  # so a store that writes nothing (or elsewhere) cannot pass
    v_cache[indices] = 0
    fn(k, v, k_cache, v_cache, indices)
    assert torch.equal(k_cache[indices], k), "store_cache: k rows differ"
    assert torch.equal(v_cache[indices], v), "store_cache: v rows differ"


def bandwidth_cases() -> list[BandwidthCase]:
    cases = []
    for rows, heads, head_dim, decode in SPECS:
        row = heads * head_dim
        cases.append(
            BandwidthCase(
                kernel="store_cache",
                shape=f"{rows}x{row * 2}B bf16",
                make_inputs=lambda rows=rows, row=row: _inputs(rows, row),
                ours=store_cache,
                bytes_moved=2 * 2 * rows * row * 2 + rows * 8,
                peers={
                    "torch": torch_store,
                    "torch_compile": _compiled(),
                    "flashinfer": FLASHINFER_NA,
                    "upstream": upstream.store_cache(row * 2, row * 2),
                },
                rotate_args=(0, 1, 4),  # k, v, indices; never the caches
                check=_check,
                decode=decode,
            )
        )
    return cases


def overhead_cases() -> list[OverheadCase]:
    module = _jit_store_cache_module()
    return [
        OverheadCase(
            name="store_cache 16x(8x128) bf16",
            make_inputs=lambda: _inputs(16, 8 * 128),
            wrapper=store_cache,
            bare=module.store_cache,
            torch_eager=torch_store,
        )
    ]
