"""silu/gelu/gelu_tanh_and_mul for ``benchmarks/bench_jit_kernels.py``: gated MLP activations.

``bandwidth_cases()``: 16384 tokens of d = 4096, 11008 and 14336 (bf16 silu), gelu and
gelu_tanh at d = 11008, silu in fp16 and fp32; ours against torch eager
(``F.silu(x[..., :d]) * x[..., d:]``, ``F.gelu(..., approximate=...)``), ``torch.compile`` of
the same, FlashInfer's ``flashinfer.activation.<op>_and_mul`` (N/A with the reason when it
is missing or fails) and upstream SGLang's ``ActivationKernel`` (built with fast math, as
upstream builds it); then decode batches (silu 16 x 11008 and 64 x 4096, gelu and gelu_tanh
16 x 11008, bf16). ``bytes_moved``: x read (2 d per row), out written (d per row).

``overhead_cases()``: host time per call at 16 tokens x d = 4096 bf16, each of the three: the
wrapper vs a bare call (output allocated from the input's shape, the module's export) vs torch
eager. Importing this module needs no GPU.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from jit_kernel.activation import (
    _jit_activation_module,
    gelu_and_mul,
    gelu_tanh_and_mul,
    silu_and_mul,
)
from jit_kernel.benchmark import marker
from jit_kernel.benchmark.utils import create_random
from testing import references
from testing.bench import peers
from testing.bench.case import Axis, BandwidthCase, OverheadCase, Sweep, implementation
from testing.bench.peers import upstream

TOKENS = 16384
# (op, d, dtype)
SPECS = [
    ("silu", 4096, torch.bfloat16),
    ("silu", 11008, torch.bfloat16),
    ("silu", 14336, torch.bfloat16),
    ("gelu", 11008, torch.bfloat16),
    ("gelu_tanh", 11008, torch.bfloat16),
    ("silu", 11008, torch.float16),
    ("silu", 11008, torch.float32),
]
# (op, tokens, d): decode batches, bf16
DECODE_SPECS = [
    ("silu", 16, 11008),
    ("silu", 64, 4096),
    ("gelu", 16, 11008),
    ("gelu_tanh", 16, 11008),
]
OURS = {"silu": silu_and_mul, "gelu": gelu_and_mul, "gelu_tanh": gelu_tanh_and_mul}
ACT = {
    "silu": F.silu,
    "gelu": lambda x: F.gelu(x, approximate="none"),
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
}
TOLERANCE = {torch.bfloat16: 1e-2, torch.float16: 2e-3, torch.float32: 1e-5}


@functools.cache
def torch_fn(op: str) -> Callable[[torch.Tensor], torch.Tensor]:
    act = ACT[op]

    def fn(x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1] // 2
        return act(x[..., :d]) * x[..., d:]

    return fn


def _checker(op: str) -> Callable[[Callable[..., Any], tuple[Any, ...]], None]:
    def check(fn: Callable[..., Any], inputs: tuple[Any, ...]) -> None:
        (x,) = inputs
        expected = references.act_and_mul(f"{op}_and_mul", x).to(x.dtype)
        tol = TOLERANCE[x.dtype]
        torch.testing.assert_close(fn(x), expected, rtol=tol, atol=1e-5)

    return check


def _case(op: str, tokens: int, d: int, dtype: torch.dtype, decode: bool) -> BandwidthCase:
    size = torch.empty(0, dtype=dtype).element_size()
    short = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}[dtype]
    return BandwidthCase(
        kernel=f"{op}_and_mul",
        shape=f"{tokens}x{d} {short}",
        make_inputs=lambda: (torch.randn(tokens, 2 * d, dtype=dtype, device="cuda"),),
        ours=OURS[op],
        bytes_moved=3 * tokens * d * size,
        peers={
            "torch": torch_fn(op),
            "torch_compile": peers.compiled(torch_fn(op)),
            "flashinfer": peers.flashinfer_activation(f"{op}_and_mul", dtype),
            "upstream": upstream.activation(f"{op}_and_mul", dtype),
        },
        rotate_args=(0,),
        check=_checker(op),
        decode=decode,
        dtype=dtype,
    )


def bandwidth_cases() -> list[BandwidthCase]:
    cases = [_case(op, TOKENS, d, dtype, decode=False) for op, d, dtype in SPECS]
    return cases + [_case(*spec, torch.bfloat16, decode=True) for spec in DECODE_SPECS]


def overhead_cases() -> list[OverheadCase]:
    """Each of the three wrappers at 16 x 4096 bf16."""
    module = _jit_activation_module()

    def bare_of(op: str) -> Callable[[torch.Tensor], torch.Tensor]:
        export = getattr(module, f"{op}_and_mul")

        def bare(x: torch.Tensor) -> torch.Tensor:
            shape = x.shape
            out = x.new_empty((*shape[:-1], shape[-1] // 2))
            export(out, x)
            return out

        return bare

    return [
        OverheadCase(
            name=f"{op}_and_mul 16x4096 bf16",
            make_inputs=lambda: (torch.randn(16, 2 * 4096, dtype=torch.bfloat16, device="cuda"),),
            wrapper=OURS[op],
            bare=bare_of(op),
            torch_eager=torch_fn(op),
        )
        for op in OURS
    ]


# --------------------------------------------------------------------------- registered sweep
# registered/jit/benchmark/bench_activation.py: ``out = act(x[..., :d]) * x[..., d:]`` for
# x [T, 2 d]. Lines: ``jit`` (ours), ``torch`` (eager, two launches), ``torch_compile`` (the same
# function) and ``flashinfer`` (``flashinfer.activation.<op>_and_mul``; N/A with the reason when
# unavailable). Bytes per call: x read, out written (do_bench's defaults). Full sweep locally;
# CI: silu, bf16, d = 11008 (Llama-2 7B MLP), 16 and 16384 tokens.


def _cell(impl: str, op: str, dtype: torch.dtype, d: int, num_tokens: int) -> marker.BenchResult:
    x = create_random(num_tokens, 2 * d, dtype=dtype)
    # Defaults: memory_args="all" counts x, memory_output="out" the returned tensor.
    fn = implementation(
        impl,
        OURS[op],
        torch_fn(op),
        flashinfer=peers.flashinfer_activation(f"{op}_and_mul", dtype),
        inputs=(x,),
    )
    return marker.do_bench(fn, input_args=(x,), graph_clone_args=(0,))


SWEEPS = {
    "activation": Sweep(
        (
            Axis("op", ["silu", "gelu", "gelu_tanh"], ci_vals=["silu"]),
            Axis("dtype", [torch.bfloat16, torch.float16, torch.float32], ci_vals=[torch.bfloat16]),
            Axis("d", [4096, 11008, 14336], ci_vals=[11008]),
            Axis("num_tokens", [1, 16, 256, 4096, 16384], ci_vals=[16, 16384]),
        ),
        ("jit", "torch", "torch_compile", "flashinfer"),
        _cell,
    )
}
