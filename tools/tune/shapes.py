"""The timed shapes of each family, their inputs, how ours is called, and the check of a timed
output against the fp32 references (testing/references.py, the tests' tolerances)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from testing import references
from tools.tune.variants import SHORT_DTYPE

EPS = references.EPS


@dataclass(frozen=True)
class Shape:
    """One timed case of a family: the kernel, its label and what it needs."""

    family: str
    kernel: str  # silu_and_mul, rmsnorm, ...
    label: str
    dtype: torch.dtype
    dims: tuple[int, ...]
    bytes_moved: int
    core: bool = True  # a row of the lead's table (extras are dropped first when time is short)

    @property
    def key(self) -> str:
        return f"{self.kernel} {self.label}"


def _size(dtype: torch.dtype) -> int:
    return torch.empty(0, dtype=dtype).element_size()


TOKENS = 16384


def bench_case(stem: str) -> Any:
    """``testing.bench.<stem>``: its shapes, inputs and peers (rope, store_cache)."""
    if stem not in _BENCH_CASES:
        _BENCH_CASES[stem] = importlib.import_module(f"testing.bench.{stem}")
    return _BENCH_CASES[stem]


_BENCH_CASES: dict[str, Any] = {}


def family_shapes(family: str) -> list[Shape]:
    shapes: list[Shape] = []
    if family == "activation":
        specs = [
            ("silu_and_mul", 4096, torch.bfloat16, True),
            ("silu_and_mul", 11008, torch.bfloat16, True),
            ("silu_and_mul", 14336, torch.bfloat16, True),
            ("silu_and_mul", 11008, torch.float16, True),
            ("silu_and_mul", 11008, torch.float32, True),
            ("gelu_tanh_and_mul", 11008, torch.bfloat16, False),
            ("gelu_and_mul", 11008, torch.bfloat16, False),
        ]
        for op, d, dt, core in specs:
            shapes.append(
                Shape(
                    family,
                    op,
                    f"{TOKENS}x{d} {SHORT_DTYPE[dt]}",
                    dt,
                    (TOKENS, d),
                    3 * TOKENS * d * _size(dt),
                    core,
                )
            )
    elif family == "norm":
        for rows, dim, core in [(65536, 256, True), (65536, 1024, True), (16384, 4096, False)]:
            es = _size(torch.bfloat16)
            shapes.append(
                Shape(
                    family,
                    "rmsnorm",
                    f"{rows}x{dim} bf16",
                    torch.bfloat16,
                    (rows, dim),
                    2 * rows * dim * es + dim * es,
                    core,
                )
            )
            shapes.append(
                Shape(
                    family,
                    "fused_add_rmsnorm",
                    f"{rows}x{dim} bf16",
                    torch.bfloat16,
                    (rows, dim),
                    4 * rows * dim * es + dim * es,
                    core,
                )
            )
    elif family == "rope":  # the rows of testing/bench/rope.py
        rope = bench_case("rope")
        for t, hq, hk, dt, is_neox in rope.SPECS:
            d = rope.HEAD_DIM
            style = "neox" if is_neox else "gptj"
            shapes.append(
                Shape(
                    family,
                    "rope",
                    f"{t}x({hq}+{hk})x{d} {SHORT_DTYPE[dt]} {style}",
                    dt,
                    (t, hq, hk, int(is_neox)),
                    2 * t * (hq + hk) * d * _size(dt) + t * 8,
                )
            )
    elif family == "store_cache":  # the rows of testing/bench/store_cache.py
        for rows, heads, head_dim, _ in bench_case("store_cache").SPECS:
            row = heads * head_dim
            shapes.append(
                Shape(
                    family,
                    "store_cache",
                    f"{rows}x{row * 2}B bf16",
                    torch.bfloat16,
                    (rows, row),
                    2 * 2 * rows * row * 2 + rows * 8,
                )
            )
    else:
        specs = [
            (16384, 32, 8, 128, torch.bfloat16),
            (65536, 32, 8, 128, torch.bfloat16),
            (65536, 16, 2, 64, torch.bfloat16),
            (16384, 16, 4, 256, torch.bfloat16),
            (8192, 16, 4, 512, torch.bfloat16),
            (16384, 32, 8, 128, torch.float16),
        ]
        for t, hq, hk, d, dt in specs:
            es = _size(dt)
            shapes.append(
                Shape(
                    family,
                    "qknorm",
                    f"{t}x({hq}+{hk})x{d} {SHORT_DTYPE[dt]}",
                    dt,
                    (t, hq, hk, d),
                    2 * t * (hq + hk) * d * es + 2 * d * es,
                )
            )
    return shapes


def make_inputs(shape: Shape) -> tuple[Any, ...]:
    dt = shape.dtype
    if shape.family == "rope":
        t, hq, hk, _ = shape.dims
        return bench_case("rope")._inputs(t, hq, hk, dt)
    if shape.family == "store_cache":
        return bench_case("store_cache")._inputs(*shape.dims)
    if shape.family == "activation":
        rows, d = shape.dims
        return (torch.randn(rows, 2 * d, dtype=dt, device="cuda"),)
    if shape.family == "norm":
        rows, dim = shape.dims
        weight = (1.0 + 0.5 * torch.randn(dim, device="cuda")).to(dt)
        if shape.kernel == "rmsnorm":
            return torch.randn(rows, dim, dtype=dt, device="cuda"), weight
        return (
            torch.randn(rows, dim, dtype=dt, device="cuda"),
            torch.randn(rows, dim, dtype=dt, device="cuda"),
            weight,
        )
    t, hq, hk, d = shape.dims
    return (
        torch.randn(t, hq, d, dtype=dt, device="cuda"),
        torch.randn(t, hk, d, dtype=dt, device="cuda"),
        (1.0 + 0.5 * torch.randn(d, device="cuda")).to(dt),
        (1.0 + 0.5 * torch.randn(d, device="cuda")).to(dt),
    )


def rotate_args(shape: Shape) -> tuple[int, ...]:
    if shape.family == "rope":
        return (0, 1, 3)  # q, k, positions; not the cache
    if shape.family == "store_cache":
        return (0, 1, 4)  # k, v, indices; never the caches
    if shape.family == "activation" or shape.kernel == "rmsnorm":
        return (0,)
    return (0, 1)


# The tests' tolerances and references (testing/references.py).
ACT_TOL = {dtype: (tol["rtol"], tol["atol"]) for dtype, tol in references.ROUNDED_TOL.items()}
ROPE_RTOL = {dtype: tol["rtol"] for dtype, tol in references.ROUNDED_TOL.items()}
NORM_RTOL = references.NORM_RTOL
NORM_ATOL = references.NORM_ATOL
ACT_OPS = tuple(references.ACTIVATIONS)


def act_fn(op: str) -> Callable[[torch.Tensor], torch.Tensor]:
    return references.ACTIVATIONS[op]


def act_reference(op: str, x: torch.Tensor) -> torch.Tensor:
    return references.act_and_mul(op, x).to(x.dtype)


def rms_reference(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return references.rmsnorm(x, weight, EPS).to(x.dtype)


def _close(
    actual: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float, what: str
) -> None:
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, msg=lambda m: f"{what}: {m}")


def ours_callable(shape: Shape, export: Callable[..., Any]) -> Callable[..., Any]:
    """Ours as the wrapper would call it (allocating the output where the wrapper does)."""
    if shape.family == "activation":

        def act(x: torch.Tensor) -> torch.Tensor:
            out = x.new_empty((*x.shape[:-1], x.shape[-1] // 2))
            export(out, x)
            return out

        return act
    if shape.kernel == "rmsnorm":

        def rms(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
            out = torch.empty_like(x)
            export(out, x, w, EPS)
            return out

        return rms
    if shape.kernel == "fused_add_rmsnorm":
        return lambda x, r, w: export(x, r, w, EPS)
    if shape.family == "rope":
        is_neox = bool(shape.dims[3])
        return lambda q, k, cache, pos: export(q, k, cache, pos, is_neox, 0)
    if shape.family == "store_cache":
        return export
    return lambda q, k, qw, kw: export(q, k, qw, kw, EPS)


def check_timed_shape(shape: Shape, fn: Callable[..., Any], inputs: tuple[Any, ...]) -> None:
    """Run ``fn`` once on copies of the timed inputs and compare with the float32 reference."""
    if shape.family == "activation":
        (x,) = inputs
        rtol, atol = ACT_TOL[x.dtype]
        _close(fn(x), act_reference(shape.kernel, x), rtol, atol, shape.key)
    elif shape.kernel == "rmsnorm":
        x, w = inputs
        _close(
            fn(x, w).float(), rms_reference(x, w).float(), NORM_RTOL[x.dtype], NORM_ATOL, shape.key
        )
    elif shape.kernel == "fused_add_rmsnorm":
        x, r, w = (t.clone() for t in inputs)
        total = (x.float() + r.float()).to(x.dtype)
        expected = rms_reference(total, w).float()
        fn(x, r, w)
        _close(r, total, 0.0, 0.0, f"{shape.key} residual")
        _close(x.float(), expected, NORM_RTOL[x.dtype], NORM_ATOL, shape.key)
    elif shape.family == "rope":
        q, k, cache, pos = (t.clone() for t in inputs)
        is_neox = bool(shape.dims[3])
        eq = references.rope(q, cache, pos, is_neox).to(q.dtype)
        ek = references.rope(k, cache, pos, is_neox).to(k.dtype)
        fn(q, k, cache, pos)
        rtol = ROPE_RTOL[q.dtype]
        _close(q, eq, rtol, 1e-5, f"{shape.key} q")
        _close(k, ek, rtol, 1e-5, f"{shape.key} k")
    elif shape.family == "store_cache":
        k, v, k_cache, v_cache, indices = inputs
        fn(k, v, k_cache, v_cache, indices)
        _close(k_cache[indices], k, 0.0, 0.0, f"{shape.key} k rows")
        _close(v_cache[indices], v, 0.0, 0.0, f"{shape.key} v rows")
    else:
        q, k, qw, kw = (t.clone() for t in inputs)
        eq, ek = rms_reference(q, qw).float(), rms_reference(k, kw).float()
        fn(q, k, qw, kw)
        _close(q.float(), eq, NORM_RTOL[q.dtype], NORM_ATOL, f"{shape.key} q")
        _close(k.float(), ek, NORM_RTOL[k.dtype], NORM_ATOL, f"{shape.key} k")
