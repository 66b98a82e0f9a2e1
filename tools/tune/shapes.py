"""The timed shapes of each family: the memory-bound cases of the kernels' definitions
(``testing/bench/<module>.py``: inputs, bytes moved, peers and the check of a timed output),
and how a variant's export is called on them."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from testing import references
from testing.bench.case import BandwidthCase

EPS = references.EPS

# Tuner family -> its kernels' definition modules (testing/bench/). Every memory-bound case is
# timed unless ROWS names the ones to time (case shape -> core: a row of the lead's table;
# extras are dropped first when time is short).
DEFINITIONS = {
    "activation": ("activation",),
    "norm": ("rmsnorm", "fused_add_rmsnorm"),
    "qknorm": ("qknorm",),
    "rope": ("rope",),
    "store_cache": ("store_cache",),
}
ROWS = {"norm": {"65536x256 bf16": True, "65536x1024 bf16": True, "16384x4096 bf16": False}}
EXTRA_KERNELS = {"gelu_and_mul", "gelu_tanh_and_mul"}  # timed after the core rows


@dataclass(frozen=True)
class Shape:
    """One timed case of a family: its definition and whether it is a core row."""

    family: str
    case: BandwidthCase
    core: bool = True

    @property
    def kernel(self) -> str:  # silu_and_mul, rmsnorm, ...
        return self.case.kernel

    @property
    def label(self) -> str:
        return self.case.shape

    @property
    def dtype(self) -> torch.dtype:
        return self.case.dtype

    @property
    def bytes_moved(self) -> int:
        return self.case.bytes_moved

    @property
    def key(self) -> str:
        return self.case.key


def family_shapes(family: str) -> list[Shape]:
    """The family's timed cases, core rows first; a row ROWS names must exist."""
    cases = [
        case
        for module in DEFINITIONS[family]
        for case in importlib.import_module(f"testing.bench.{module}").bandwidth_cases()
    ]
    # store_cache: every row, decode sizes included (its launch plan changes with the row count).
    chosen = [c for c in cases if family == "store_cache" or not c.decode]
    rows = ROWS.get(family)
    if rows is not None:
        missing = set(rows) - {c.shape for c in chosen}
        if missing:
            raise ValueError(f"tools/tune/shapes.py ROWS[{family!r}]: no case {sorted(missing)}")
        chosen = [c for c in chosen if c.shape in rows]
    shapes = [
        Shape(family, c, rows[c.shape] if rows else c.kernel not in EXTRA_KERNELS) for c in chosen
    ]
    return sorted(shapes, key=lambda shape: not shape.core)


def make_inputs(shape: Shape) -> tuple[Any, ...]:
    return shape.case.make_inputs()


def rotate_args(shape: Shape) -> tuple[int, ...] | str:
    return shape.case.rotate_args


# The tests' tolerances and references (testing/references.py).
ACT_TOL = {dtype: (tol["rtol"], tol["atol"]) for dtype, tol in references.ROUNDED_TOL.items()}
ROPE_RTOL = {dtype: tol["rtol"] for dtype, tol in references.ROUNDED_TOL.items()}
NORM_RTOL = references.NORM_RTOL
NORM_ATOL = references.NORM_ATOL
ACT_OPS = tuple(references.ACTIVATIONS)


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
        is_neox = shape.case.keywords["is_neox"]
        return lambda q, k, cache, pos: export(q, k, cache, pos, is_neox, 0)
    if shape.family == "store_cache":
        return export
    return lambda q, k, qw, kw: export(q, k, qw, kw, EPS)


def check_timed_shape(shape: Shape, fn: Callable[..., Any], inputs: tuple[Any, ...]) -> None:
    """The definition's check of ``fn`` on the timed inputs (on copies where it writes)."""
    if shape.case.check is None:
        raise ValueError(f"{shape.key}: its definition has no check")
    try:
        shape.case.check(fn, inputs)
    except AssertionError as error:
        raise AssertionError(f"{shape.key}: {error}") from None
