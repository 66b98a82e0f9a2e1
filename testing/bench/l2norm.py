"""l2norm (``out = x / sqrt(sum(x^2) + eps)`` per row): how every harness measures and checks it.

``SWEEPS["l2norm"]``: ``registered/jit/benchmark/bench_l2norm.py``, ours (``jit``) against the
fp32 formula in torch eager (several kernels) and ``torch.compile`` of it (one); full sweep
decode to memory-bound sizes, CI bf16 16 and 16384 rows of 4096. Bytes per call: x read, the
returned output written. ``bandwidth_cases()``: ``benchmarks/bench_jit_kernels.py`` at 16384
rows of 4096 and a decode batch of 16; ``overhead_cases()``: none yet.
"""

from __future__ import annotations

import torch

from jit_kernel.benchmark import marker
from jit_kernel.benchmark.utils import create_random
from jit_kernel.l2norm import l2norm
from testing import references
from testing.bench import peers
from testing.bench.case import Axis, BandwidthCase, OverheadCase, Sweep, implementation
from testing.tolerances import assert_within_ulps


def fp32_l2norm(x: torch.Tensor) -> torch.Tensor:
    return references.l2norm(x).to(x.dtype)  # eager: several kernels; compiled: one


def _check(fn, inputs: tuple[torch.Tensor, ...]) -> None:
    (x,) = inputs
    assert_within_ulps(fn(x), references.l2norm(x), what="l2norm")


def _case(rows: int, dim: int, decode: bool) -> BandwidthCase:
    return BandwidthCase(
        kernel="l2norm",
        shape=f"{rows}x{dim} bf16",
        make_inputs=lambda: (torch.randn(rows, dim, dtype=torch.bfloat16, device="cuda"),),
        ours=l2norm,
        peers={
            "torch": fp32_l2norm,
            "torch_compile": peers.compiled(fp32_l2norm),
            "upstream": "upstream SGLang has no l2norm kernel",
        },
        bytes_moved=2 * rows * dim * 2,
        rotate_args=(0,),
        check=_check,
        decode=decode,
        dtype=torch.bfloat16,
    )


def bandwidth_cases() -> list[BandwidthCase]:
    return [_case(16384, 4096, decode=False), _case(16, 4096, decode=True)]


def overhead_cases() -> list[OverheadCase]:
    return []


def _cell(impl: str, dtype: torch.dtype, row_size: int, num_rows: int) -> marker.BenchResult:
    fn = implementation(impl, l2norm, fp32_l2norm)
    x = create_random(num_rows, row_size, dtype=dtype)
    # x is read: rotate clones of it. The GB/s column counts it and the output.
    return marker.do_bench(fn, input_args=(x,), graph_clone_args=(0,))


SWEEPS = {
    "l2norm": Sweep(
        (
            Axis("dtype", [torch.bfloat16, torch.float16], ci_vals=[torch.bfloat16]),
            Axis("row_size", [128, 1024, 4096, 16384], ci_vals=[4096]),
            Axis("num_rows", [1, 16, 64, 1024, 16384], ci_vals=[16, 16384]),
        ),
        ("jit", "torch", "torch_compile"),
        _cell,
    )
}
