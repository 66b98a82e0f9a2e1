"""The launch floor of ``benchmarks/bench_jit_kernels.py``: an empty kernel in the same harness.

``launch_floor.cuh`` launches one warp that does nothing, without and with programmatic
dependent launch (PDL, as our kernels launch on SM90+). Timed by the same CUDA-graph replay as
the decode rows, it is the least a kernel call can cost there, so the decode table can say how
far above it each row is.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from jit_kernel.compiler import is_arch_support_pdl, load_jit

SOURCE = Path(__file__).resolve().with_name("launch_floor.cuh")
VARIANTS = {"empty kernel": "empty", "empty kernel, PDL": "empty_pdl"}


def floor_module() -> Any:
    """Build (or load from our cache) the module exporting ``empty`` and ``empty_pdl``."""
    return load_jit(
        "bench_launch_floor",
        cuda_files=[SOURCE],
        cuda_wrappers=[("empty", "launch_empty<false>"), ("empty_pdl", "launch_empty<true>")],
    )


def floor_us(time_fn: Callable[[Callable[..., Any], tuple[Any, ...]], float]) -> dict[str, float]:
    """Microseconds per call of each variant (PDL only where the GPU has it), timed by
    ``time_fn(fn, inputs)`` (seconds per call)."""
    import torch

    module = floor_module()
    anchor = torch.empty(1, device="cuda")
    variants = VARIANTS if is_arch_support_pdl() else {"empty kernel": "empty"}
    return {
        label: time_fn(getattr(module, name), (anchor,)) * 1e6 for label, name in variants.items()
    }
