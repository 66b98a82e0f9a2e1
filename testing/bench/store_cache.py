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

from typing import Any

import torch

from jit_kernel.benchmark import marker
from jit_kernel.store_cache import _jit_store_cache_module, store_cache
from testing.bench import peers
from testing.bench.case import Axis, BandwidthCase, OverheadCase, Sweep, implementation
from testing.bench.peers import upstream

BF16 = torch.bfloat16
NUM_SLOTS = 1 << 18
FLASHINFER_NA = (
    "FlashInfer has no flat slot-index KV store (append_paged_kv_cache needs a paged layout "
    "and indptr arrays)"
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


def _inputs(rows: int, row: int, dtype: torch.dtype = BF16) -> tuple[torch.Tensor, ...]:
    """k, v [rows, row] (random bf16, cast to ``dtype``), both caches, unique random slots."""
    k = torch.randn(rows, row, dtype=BF16, device="cuda").to(dtype)
    v = torch.randn(rows, row, dtype=BF16, device="cuda").to(dtype)
    k_cache = torch.zeros(NUM_SLOTS, row, dtype=dtype, device="cuda")
    v_cache = torch.zeros(NUM_SLOTS, row, dtype=dtype, device="cuda")
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
                    "torch_compile": peers.compiled(torch_store),
                    "flashinfer": FLASHINFER_NA,
                    "upstream": upstream.store_cache(row * 2, row * 2),
                },
                rotate_args=(0, 1, 4),  # k, v, indices; never the caches
                check=_check,
                decode=decode,
                dtype=BF16,
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


# --------------------------------------------------------------------------- registered sweep
# registered/jit/benchmark/bench_store_cache.py. Lines: ``jit`` (ours, one launch for k and v),
# ``torch`` (eager, two index_put launches), ``torch_compile`` (the same function) and
# ``flashinfer`` (N/A: no flat slot-index store). Bytes per call (scoped, the caches are not
# counted whole): k, v and indices read, k.nbytes + v.nbytes written. Rotated: k, v and indices,
# never the caches (each 256 MiB .. 2 GiB). Full sweep locally; CI: bf16 rows of 8 heads x 128
# (2 KiB), 16 and 16384 rows.


def _cell(
    impl: str, dtype: torch.dtype, num_heads: int, head_dim: int, num_rows: int
) -> marker.BenchResult:
    if impl == "flashinfer":
        marker.skip(FLASHINFER_NA)
    args = _inputs(num_rows, num_heads * head_dim, dtype)
    if impl != "jit" and dtype.is_floating_point and dtype.itemsize == 1:
        # torch's index_put has no float8 kernels: move the same bytes as uint8.
        args = (*(t.view(torch.uint8) for t in args[:4]), args[4])
    return marker.do_bench(
        implementation(impl, store_cache, torch_store),
        input_args=args,
        graph_clone_args=(0, 1, 4),  # k, v and indices are read; the caches are only written
        memory_args=(args[0], args[1], args[4]),
        # In place (returns None): the cache rows written are as many bytes as k and v.
        memory_output=(args[0], args[1]),
    )


SWEEPS = {
    "store_cache": Sweep(
        (
            Axis("dtype", [torch.bfloat16, torch.float8_e4m3fn], ci_vals=[torch.bfloat16]),
            Axis(
                "num_heads,head_dim",
                [(1, 128), (4, 128), (8, 128), (8, 256), (16, 128)],
                ci_vals=[(8, 128)],
            ),
            Axis("num_rows", [1, 16, 256, 4096, 16384, 65536], ci_vals=[16, 16384]),
        ),
        ("jit", "torch", "torch_compile", "flashinfer"),
        _cell,
    )
}
