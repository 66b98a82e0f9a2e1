"""The norm family for ``benchmarks/bench_jit_kernels.py``: rmsnorm, fused_add_rmsnorm, qknorm.

``bandwidth_cases()``: memory-bound sizes (N * D >= 2^24 elements, 16384..65536 rows among
them), ours against torch eager (``torch.nn.functional.rms_norm``), ``torch.compile`` of the
fp32 formula ours computes, FlashInfer (a reason string, shown as N/A, when it is not
installed or fails) and upstream SGLang's kernels (:mod:`testing.upstream_sglang.kernels`);
then decode sizes (1-64 rows; qknorm 16 tokens) against the same peers. ``bytes_moved`` is the
fewest bytes a call must move: every element read once and written once, plus the weights.

``overhead_cases()``: host time per call at decode size (16 rows of 4096 bf16; qknorm 16
tokens x (32 + 8) heads x 128): wrapper vs a bare call of the module's export (module fetched
once here, output allocated as the wrapper does) vs torch eager. Calling it loads (or builds)
the bf16 modules.

Inputs are built lazily by ``make_inputs`` on the GPU; importing this module needs no GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from jit_kernel.benchmark import marker
from jit_kernel.benchmark.utils import create_random
from jit_kernel.fused_add_rmsnorm import _jit_fused_add_rmsnorm_module, fused_add_rmsnorm
from jit_kernel.qknorm import _jit_qknorm_module, fused_inplace_qknorm
from jit_kernel.rmsnorm import _jit_rmsnorm_module, rmsnorm
from testing import references
from testing.bench import peers
from testing.bench.case import Axis, BandwidthCase, Call, OverheadCase, Sweep, runnable
from testing.bench.peers import upstream

EPS = 1e-6
BF16 = torch.bfloat16

# --------------------------------------------------------------------------- peers


def _fp32_rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """What our kernels compute: fp32 math, one rounding."""
    return references.rmsnorm(x, weight, EPS).to(x.dtype)


def _torch_rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, EPS)


def _torch_fused_add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor):
    residual.add_(x)
    x.copy_(torch.nn.functional.rms_norm(residual, (x.shape[-1],), weight, EPS))


def _fp32_fused_add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor):
    total, out = references.fused_add_rmsnorm(x, residual, weight, EPS)
    residual.copy_(total)
    x.copy_(out.to(x.dtype))


def _torch_qknorm(q, k, q_weight, k_weight):
    q.copy_(torch.nn.functional.rms_norm(q, (q.shape[-1],), q_weight, EPS))
    k.copy_(torch.nn.functional.rms_norm(k, (k.shape[-1],), k_weight, EPS))


def _fp32_qknorm(q, k, q_weight, k_weight):
    q.copy_(_fp32_rmsnorm(q, q_weight))
    k.copy_(_fp32_rmsnorm(k, k_weight))


FLASHINFER = {
    "rmsnorm": peers.flashinfer_rmsnorm,
    "fused_add_rmsnorm": peers.flashinfer_fused_add_rmsnorm,
    "qknorm": peers.flashinfer_qknorm,
}


def _peers(
    kernel: str, torch_fn: Callable[..., Any], fp32_fn: Callable[..., Any], upstream_peer: Any
) -> dict[str, Any]:
    """torch eager, torch.compile of the fp32 formula, FlashInfer and upstream for ``kernel``."""
    return {
        "torch": torch_fn,
        "torch_compile": peers.compiled(fp32_fn),
        "flashinfer": FLASHINFER[kernel](EPS),
        "upstream": upstream_peer,
    }


# --------------------------------------------------------------------------- checks


def _tolerance(dtype: torch.dtype) -> float:
    return 2.0**-7 if dtype == torch.bfloat16 else 2.0**-10  # one ulp of the output


def _check_rmsnorm(fn: Callable[..., Any], inputs: tuple[Any, ...]) -> None:
    x, weight = inputs
    expected = _fp32_rmsnorm(x, weight).float()
    actual = fn(x, weight).float()
    torch.testing.assert_close(actual, expected, rtol=_tolerance(x.dtype), atol=2e-2)


def _check_fused_add_rmsnorm(fn: Callable[..., Any], inputs: tuple[Any, ...]) -> None:
    x, residual, weight = (t.clone() for t in inputs)
    expected_residual = (x.float() + residual.float()).to(x.dtype)
    expected = _fp32_rmsnorm(expected_residual, weight).float()
    fn(x, residual, weight)
    torch.testing.assert_close(residual, expected_residual, rtol=0, atol=0)
    torch.testing.assert_close(x.float(), expected, rtol=_tolerance(x.dtype), atol=2e-2)


def _check_qknorm(fn: Callable[..., Any], inputs: tuple[Any, ...]) -> None:
    q, k, q_weight, k_weight = (t.clone() for t in inputs)
    expected_q = _fp32_rmsnorm(q, q_weight).float()
    expected_k = _fp32_rmsnorm(k, k_weight).float()
    fn(q, k, q_weight, k_weight)
    torch.testing.assert_close(q.float(), expected_q, rtol=_tolerance(q.dtype), atol=2e-2)
    torch.testing.assert_close(k.float(), expected_k, rtol=_tolerance(k.dtype), atol=2e-2)


# --------------------------------------------------------------------------- cases


def _randn(*shape: int, dtype: torch.dtype) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype, device="cuda")


def _weight(dim: int, dtype: torch.dtype) -> torch.Tensor:
    return (1.0 + 0.5 * torch.randn(dim, device="cuda")).to(dtype)


def _short_dtype(dtype: torch.dtype) -> str:
    return {torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]


def _size(dtype: torch.dtype) -> int:
    return torch.empty(0, dtype=dtype).element_size()


# (rows, hidden) with rows * hidden >= 2^24; 16384..65536 rows and every launch plan class.
ROW_SHAPES = [(65536, 256), (65536, 1024), (16384, 4096), (65536, 4096), (4096, 8192)]
ROW_SHAPES += [(2048, 16384)]
# (tokens, q heads, k heads, head_dim) with tokens * heads * head_dim >= 2^24.
QK_SHAPES = [(16384, 32, 8, 128), (65536, 32, 8, 128), (65536, 16, 2, 64), (16384, 16, 4, 256)]
QK_SHAPES += [(8192, 16, 4, 512)]
# Decode batches (bf16): rmsnorm, fused_add_rmsnorm (rows, hidden); qknorm as QK_SHAPES.
DECODE_RMSNORM = [(1, 4096), (16, 4096), (64, 4096), (16, 256), (16, 1024), (16, 8192)]
DECODE_FUSED_ADD_RMSNORM = [(16, 4096), (64, 4096)]
DECODE_QK = [(16, 32, 8, 128)]


def _rmsnorm_case(rows: int, dim: int, dtype: torch.dtype, decode: bool) -> BandwidthCase:
    es = _size(dtype)
    return BandwidthCase(
        kernel="rmsnorm",
        shape=f"{rows}x{dim} {_short_dtype(dtype)}",
        make_inputs=lambda: (_randn(rows, dim, dtype=dtype), _weight(dim, dtype)),
        ours=lambda x, w: rmsnorm(x, w, EPS),
        bytes_moved=2 * rows * dim * es + dim * es,
        peers=_peers("rmsnorm", _torch_rmsnorm, _fp32_rmsnorm, upstream.rmsnorm(dim, dtype, EPS)),
        rotate_args=(0,),
        check=_check_rmsnorm,
        decode=decode,
        dtype=dtype,
    )


def _fused_add_rmsnorm_case(rows: int, dim: int, dtype: torch.dtype, decode: bool) -> BandwidthCase:
    es = _size(dtype)
    return BandwidthCase(
        kernel="fused_add_rmsnorm",
        shape=f"{rows}x{dim} {_short_dtype(dtype)}",
        make_inputs=lambda: (
            _randn(rows, dim, dtype=dtype),
            _randn(rows, dim, dtype=dtype),
            _weight(dim, dtype),
        ),
        ours=lambda x, r, w: fused_add_rmsnorm(x, r, w, EPS),
        bytes_moved=4 * rows * dim * es + dim * es,
        peers=_peers(
            "fused_add_rmsnorm",
            _torch_fused_add_rmsnorm,
            _fp32_fused_add_rmsnorm,
            upstream.fused_add_rmsnorm(dim, dtype, EPS),
        ),
        rotate_args=(0, 1),
        check=_check_fused_add_rmsnorm,
        decode=decode,
        dtype=dtype,
    )


def _qknorm_case(
    tokens: int, num_q: int, num_k: int, head_dim: int, dtype: torch.dtype, decode: bool
) -> BandwidthCase:
    es = _size(dtype)
    return BandwidthCase(
        kernel="qknorm",
        shape=f"{tokens}x({num_q}+{num_k})x{head_dim} {_short_dtype(dtype)}",
        make_inputs=lambda: (
            _randn(tokens, num_q, head_dim, dtype=dtype),
            _randn(tokens, num_k, head_dim, dtype=dtype),
            _weight(head_dim, dtype),
            _weight(head_dim, dtype),
        ),
        ours=lambda q, k, qw, kw: fused_inplace_qknorm(q, k, qw, kw, EPS),
        bytes_moved=2 * tokens * (num_q + num_k) * head_dim * es + 2 * head_dim * es,
        peers=_peers("qknorm", _torch_qknorm, _fp32_qknorm, upstream.qknorm(head_dim, dtype, EPS)),
        rotate_args=(0, 1),
        check=_check_qknorm,
        decode=decode,
        dtype=dtype,
    )


def bandwidth_cases() -> list[BandwidthCase]:
    """Ours vs peers at memory-bound sizes (bf16; plus one float16 shape per kernel), then the
    decode sizes (bf16)."""
    cases: list[BandwidthCase] = []
    row_specs = [(rows, dim, BF16) for rows, dim in ROW_SHAPES]
    row_specs.append((16384, 4096, torch.float16))
    for rows, dim, dtype in row_specs:
        cases.append(_rmsnorm_case(rows, dim, dtype, decode=False))
        cases.append(_fused_add_rmsnorm_case(rows, dim, dtype, decode=False))
    qk_specs = [(*shape, BF16) for shape in QK_SHAPES]
    qk_specs.append((16384, 32, 8, 128, torch.float16))
    cases += [_qknorm_case(*spec, decode=False) for spec in qk_specs]
    cases += [_rmsnorm_case(rows, dim, BF16, decode=True) for rows, dim in DECODE_RMSNORM]
    cases += [
        _fused_add_rmsnorm_case(rows, dim, BF16, decode=True)
        for rows, dim in DECODE_FUSED_ADD_RMSNORM
    ]
    cases += [_qknorm_case(*shape, BF16, decode=True) for shape in DECODE_QK]
    return cases


def overhead_cases() -> list[OverheadCase]:
    """Host time per call at N=16, D=4096 bf16 (qknorm: 16 tokens x (32 + 8) heads x 128)."""
    rms = _jit_rmsnorm_module()
    fused = _jit_fused_add_rmsnorm_module()
    qk = _jit_qknorm_module()

    def rmsnorm_bare(x, w, eps):
        out = torch.empty_like(x)
        rms.rmsnorm(out, x, w, eps)
        return out

    def rows_inputs():
        return _randn(16, 4096, dtype=BF16), _weight(4096, BF16)

    return [
        OverheadCase(
            name="rmsnorm 16x4096 bf16",
            make_inputs=rows_inputs,
            wrapper=Call(rmsnorm, (EPS,)),
            bare=Call(rmsnorm_bare, (EPS,)),
            torch_eager=_torch_rmsnorm,
        ),
        OverheadCase(
            name="fused_add_rmsnorm 16x4096 bf16",
            make_inputs=lambda: (
                _randn(16, 4096, dtype=BF16),
                _randn(16, 4096, dtype=BF16),
                _weight(4096, BF16),
            ),
            wrapper=Call(fused_add_rmsnorm, (EPS,)),
            bare=Call(fused.fused_add_rmsnorm, (EPS,)),
            torch_eager=_torch_fused_add_rmsnorm,
        ),
        OverheadCase(
            name="qknorm 16x(32+8)x128 bf16",
            make_inputs=lambda: (
                _randn(16, 32, 128, dtype=BF16),
                _randn(16, 8, 128, dtype=BF16),
                _weight(128, BF16),
                _weight(128, BF16),
            ),
            wrapper=Call(fused_inplace_qknorm, (EPS,)),
            bare=Call(qk.fused_inplace_qknorm, (EPS,)),
            torch_eager=_torch_qknorm,
        ),
    ]


# --------------------------------------------------------------------------- registered sweeps
# registered/jit/benchmark/bench_{rmsnorm,fused_add_rmsnorm,qknorm}.py. Lines: ``jit`` (ours),
# ``torch`` (eager ``torch.nn.functional.rms_norm``; + ``residual.add_`` and ``copy_`` in place),
# ``torch_compile`` (the fp32 formula ours computes) and ``flashinfer`` (``flashinfer.norm``;
# qknorm: two ``rmsnorm(..., out=)`` calls, it has no fused q/k kernel; N/A with the reason
# when unavailable). Full sweep locally (decode to memory-bound sizes); CI: bf16, 16 and 16384
# rows (tokens) of 4096 (qknorm: 32 q + 8 k heads of 128).

_SWEEP_IMPLS = ("jit", "torch", "torch_compile", "flashinfer")
_SWEEP_FNS = {
    "rmsnorm": {
        "jit": lambda x, w: rmsnorm(x, w, EPS),
        "torch": _torch_rmsnorm,
        "torch_compile": lambda: peers.compiled(_fp32_rmsnorm),
    },
    "fused_add_rmsnorm": {
        "jit": lambda x, r, w: fused_add_rmsnorm(x, r, w, EPS),
        "torch": _torch_fused_add_rmsnorm,
        "torch_compile": lambda: peers.compiled(_fp32_fused_add_rmsnorm),
    },
    "qknorm": {
        "jit": lambda q, k, qw, kw: fused_inplace_qknorm(q, k, qw, kw, EPS),
        "torch": _torch_qknorm,
        "torch_compile": lambda: peers.compiled(_fp32_qknorm),
    },
}


def _sweep_fn(kernel: str, impl: str, inputs: tuple[Any, ...]) -> Callable[..., Any]:
    if impl == "flashinfer":
        return runnable(FLASHINFER[kernel](EPS), *inputs)
    if impl == "torch_compile":
        return _SWEEP_FNS[kernel][impl]()
    return _SWEEP_FNS[kernel][impl]


def _rmsnorm_cell(impl: str, dtype: torch.dtype, hidden_size: int, num_rows: int):
    x = create_random(num_rows, hidden_size, dtype=dtype)
    weight = create_random(hidden_size, dtype=dtype)
    return marker.do_bench(
        _sweep_fn("rmsnorm", impl, (x, weight)),
        input_args=(x, weight),
        graph_clone_args=(0,),  # rotate the input; the weight is small and stays cached
        # Defaults: memory_args="all" counts x and weight, memory_output="out" the result.
    )


def _fused_add_rmsnorm_cell(impl: str, dtype: torch.dtype, hidden_size: int, num_rows: int):
    x = create_random(num_rows, hidden_size, dtype=dtype)
    residual = create_random(num_rows, hidden_size, dtype=dtype)
    weight = create_random(hidden_size, dtype=dtype)
    return marker.do_bench(
        _sweep_fn("fused_add_rmsnorm", impl, (x, residual, weight)),
        input_args=(x, residual, weight),
        graph_clone_args=(0, 1),  # both are read (and written): rotate them; not the weight
        memory_args=(x, residual, weight),
        memory_output=(x, residual),  # in place: returns None, writes both
    )


def _qknorm_cell(
    impl: str,
    dtype: torch.dtype,
    head_dim: int,
    num_q_heads: int,
    num_k_heads: int,
    num_tokens: int,
):
    q = create_random(num_tokens, num_q_heads, head_dim, dtype=dtype)
    k = create_random(num_tokens, num_k_heads, head_dim, dtype=dtype)
    q_weight = create_random(head_dim, dtype=dtype)
    k_weight = create_random(head_dim, dtype=dtype)
    return marker.do_bench(
        _sweep_fn("qknorm", impl, (q, k, q_weight, k_weight)),
        input_args=(q, k, q_weight, k_weight),
        graph_clone_args=(0, 1),  # q and k are read and written: rotate them
        memory_args=(q, k, q_weight, k_weight),
        memory_output=(q, k),  # in place: returns None, writes both
    )


_ROWS_AXES = (
    Axis("dtype", [torch.bfloat16, torch.float16], ci_vals=[torch.bfloat16]),
    Axis("hidden_size", [1024, 2048, 4096, 8192, 16384], ci_vals=[4096]),
    Axis("num_rows", [1, 16, 64, 1024, 16384, 65536], ci_vals=[16, 16384]),
)
SWEEPS = {
    "rmsnorm": Sweep(_ROWS_AXES, _SWEEP_IMPLS, _rmsnorm_cell),
    "fused_add_rmsnorm": Sweep(_ROWS_AXES, _SWEEP_IMPLS, _fused_add_rmsnorm_cell),
    "qknorm": Sweep(
        (
            Axis("dtype", [torch.bfloat16, torch.float16], ci_vals=[torch.bfloat16]),
            Axis("head_dim", [64, 128, 256, 512], ci_vals=[128]),
            Axis("num_q_heads,num_k_heads", [(32, 8), (16, 2)], ci_vals=[(32, 8)]),
            Axis("num_tokens", [1, 16, 1024, 16384, 65536], ci_vals=[16, 16384]),
        ),
        _SWEEP_IMPLS,
        _qknorm_cell,
    ),
}
