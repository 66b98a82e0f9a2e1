"""Sweep the compile-time knobs of the activation, norm, qknorm, rope and store_cache kernels.

Run on a GPU from the repo root (the manual is tools/tune_kernels.md)::

    python -m tools.tune_kernels --json tune.json            # the whole sweep, ~4 minutes
    python -m tools.tune_kernels --build-only --arch 9.0     # compile every variant, no GPU

Each variant is a set of ``-DSGL_...`` knob values (unlisted knobs: the values before tuning)
built as its own JIT module through ``load_jit(..., extra_cuda_cflags=[...])`` (the knob values
are in the module markers). All builds run first, in parallel child processes (killed at the
build deadline); meanwhile the peers are compiled (torch.compile, FlashInfer) and the 1 GiB
copy bandwidth is measured. A child process then checks every variant against a float32 torch
reference on the tests' shapes (a crash there cannot take this process down); a wrong variant
is marked WRONG and never recommended. Finally, per kernel and shape, every variant and peer
is timed with ``jit_kernel.benchmark.marker.do_bench`` (CUDA-graph replay, read inputs rotated
against the L2) and the output of the timed shape is checked too. The last lines are, per
family, the variant with the best worst-case ratio to the faster peer over all its shapes::

    BEST activation: -DSGL_ACT_BLOCK=256 -DSGL_ACT_UNROLL=2 ...  # A3: ...

The whole run stays within ``--time-budget`` seconds: builds that do not finish in time are
killed and their variants skipped, and measurements that do not fit are skipped (all said in
the output).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
import torch  # noqa: E402

from benchmarks.bench_jit_kernels import (  # noqa: E402  (the same timers and copy reference)
    copy_bandwidth,
    load_family,
    short_error,
    time_graph,
)

GB = 1e9
EPS = 1e-6
BW_TARGET = 0.90
PEER_NOISE = 0.98
DEFAULT_BUDGET_S = 240.0
RESERVE_S = 6.0  # kept free at the end for the report
CALLS_PER_MEASUREMENT = 1110  # do_bench graph mode: 10 warm-up + 1 warm replay + 10 replays of 100
MEASUREMENT_OVERHEAD_S = 0.2  # capture, clones, synchronisation
FAMILIES = ("activation", "norm", "qknorm", "rope", "store_cache")

# ----------------------------------------------------------------------------------- knobs

# Every knob of a family with its value before tuning (the baseline A0/N0/Q0; every variant is
# built with all its values explicit, so the headers' defaults play no part) and a short label.
# The headers' defaults are now A7, N2 and Q6 (H100 sweep, tools/tune_kernels.md).
KNOBS: dict[str, dict[str, tuple[str, int]]] = {
    "activation": {
        "SGL_ACT_BLOCK": ("B", 256),
        "SGL_ACT_UNROLL": ("U", 2),
        "SGL_ACT_PERSISTENT": ("P", 1),
        "SGL_ACT_FAST_MATH": ("F", 0),
        "SGL_ACT_SCHEDULE": ("S", 0),
        "SGL_ACT_MIN_BLOCKS": ("M", 0),
        "SGL_ACT_PDL_EARLY": ("E", 0),
    },
    "norm": {
        "SGL_NORM_WARP_CTA_THREADS": ("T", 128),
        "SGL_NORM_ROWS_PER_GROUP": ("R", 1),
        "SGL_NORM_PERSISTENT": ("P", 0),
        "SGL_NORM_PDL_EARLY": ("E", 0),
        "SGL_NORM_MIN_BLOCKS": ("M", 0),
        "SGL_NORM_LANE_PACKS": ("L", 2),
        "SGL_NORM_WEIGHT_GLOBAL": ("W", 0),
    },
    "qknorm": {
        "SGL_QKNORM_ITEMS": ("I", 1),
        "SGL_QKNORM_PERSISTENT": ("P", 1),
        "SGL_QKNORM_CTA_THREADS": ("T", 128),
        "SGL_QKNORM_WEIGHT_REGS": ("W", 0),
        "SGL_QKNORM_PDL_EARLY": ("E", 0),
    },
    "rope": {
        "SGL_ROPE_BLOCK": ("B", 256),
        "SGL_ROPE_NEOX_UNROLL": ("U", 2),
        "SGL_ROPE_GPTJ_UNROLL": ("G", 2),
        "SGL_ROPE_PERSISTENT": ("P", 1),
        "SGL_ROPE_SPREAD": ("S", 0),
        "SGL_ROPE_WHOLE_WARPS": ("W", 0),
        "SGL_ROPE_MAX_SIDE": ("H", 0),
        "SGL_ROPE_MAX_REGS": ("M", 0),
        "SGL_ROPE_LEAN": ("L", 0),
        "SGL_ROPE_LEAN_HEADS": ("K", 1),
        "SGL_ROPE_LEAN_BLOCK": ("J", 128),
        "SGL_ROPE_LEAN_NEOX_LIMIT": ("N", 0),
        "SGL_ROPE_LEAN_ORDER": ("O", 0),
        "SGL_ROPE_PDL_EARLY": ("E", 0),
        "SGL_ROPE_CACHE_HINT": ("C", 0),
    },
    "store_cache": {
        "SGL_STORE_BLOCK": ("B", 256),
        "SGL_STORE_UNROLL": ("U", 4),
        "SGL_STORE_PERSISTENT": ("P", 1),
        "SGL_STORE_PDL_EARLY": ("E", 0),
        "SGL_STORE_LOAD_HINT": ("H", 0),
        "SGL_STORE_SMALL_SPLIT": ("G", 0),
        "SGL_STORE_SMALL_UNROLL": ("V", 4),
        "SGL_STORE_SMALL_PERSISTENT": ("Q", 1),
        "SGL_STORE_FEW_ROWS": ("F", 0),
    },
}


@dataclass(frozen=True)
class Variant:
    """One point of a family's grid: the knobs that differ from the baseline, and why."""

    family: str
    name: str
    changes: tuple[tuple[str, int], ...]
    why: str

    def knobs(self, **force: int) -> dict[str, int]:
        """Every knob of the family with its value (``force`` overrides by label)."""
        values = {knob: default for knob, (_, default) in KNOBS[self.family].items()}
        values.update(dict(self.changes))
        for label, value in force.items():
            for knob, (short, _) in KNOBS[self.family].items():
                if short == label:
                    values[knob] = value
        return values

    def flags(self, **force: int) -> list[str]:
        return [f"-D{knob}={value}" for knob, value in self.knobs(**force).items()]

    def label(self, **force: int) -> str:
        """E.g. ``B256 U2 P1 F0 S0 M0``."""
        return " ".join(
            f"{KNOBS[self.family][knob][0]}{value}" for knob, value in self.knobs(**force).items()
        )


def _grid(family: str, rows: list[tuple[str, str, str]]) -> list[Variant]:
    """Variants from (name, changed knobs as labels and values, e.g. "F1 P0 U4", why)."""
    by_label = {short: knob for knob, (short, _) in KNOBS[family].items()}
    grid = []
    for name, changes, why in rows:
        pairs = tuple((by_label[item[0]], int(item[1:])) for item in changes.split())
        grid.append(Variant(family, name, pairs, why))
    return grid


# The grids, best guesses first (when time is short the last ones are dropped first). The first
# variant of each family is the baseline before tuning. B/U/P/F/S/M/E: SGL_ACT_BLOCK, _UNROLL,
# _PERSISTENT, _FAST_MATH, _SCHEDULE, _MIN_BLOCKS, _PDL_EARLY; T/R/P/E:
# SGL_NORM_WARP_CTA_THREADS, _ROWS_PER_GROUP, _PERSISTENT, _PDL_EARLY; I/P/T/W/E:
# SGL_QKNORM_ITEMS, _PERSISTENT, _CTA_THREADS, _WEIGHT_REGS, _PDL_EARLY; rope B/U/G/P/S/W/H:
# SGL_ROPE_BLOCK, _NEOX_UNROLL, _GPTJ_UNROLL, _PERSISTENT, _SPREAD, _WHOLE_WARPS, _MAX_SIDE,
# _MAX_REGS (M), _LEAN (L), _LEAN_HEADS (K), _LEAN_BLOCK (J), _LEAN_NEOX_LIMIT (N),
# _LEAN_ORDER (O), _PDL_EARLY (E), _CACHE_HINT (C); store_cache B/U/P/E/H: SGL_STORE_BLOCK,
# _UNROLL, _PERSISTENT, _PDL_EARLY, _LOAD_HINT, G/V/Q: _SMALL_SPLIT, _SMALL_UNROLL,
# _SMALL_PERSISTENT, F: _FEW_ROWS; norm also M/L/W: _MIN_BLOCKS, _LANE_PACKS, _WEIGHT_GLOBAL. (Register caps that make the bf16
# 16-byte activation kernels spill are left out: 40 and 48 registers spill there.)
# R27 (rope default before R34): the base of the fifth sweep's rope variants.
R27_KNOBS = "S2 G4 L2 M72 N2097152"

VARIANTS: dict[str, list[Variant]] = {
    "activation": _grid(
        "activation",
        [
            ("A0", "", "before tuning"),
            ("A1", "F1", "fast math alone: are the exact expf + IEEE division the cost?"),
            ("A2", "F1 P0", "fast math, one block per row group (no persistent tail)"),
            ("A3", "F1 P0 U4", "fast math, non-persistent, 4 vector pairs in flight"),
            ("A4", "F1 P0 B128", "fast math, non-persistent 128-thread blocks"),
            ("A5", "F1 P0 B128 U8", "fast math, non-persistent, 128 threads x 8 pairs"),
            ("A6", "F1 U4", "fast math, persistent, 4 pairs in flight"),
            (
                "A7",
                "F1 P0 S1 B128 U4",
                "fast math, one tile (row chunk) per 128-thread block (default)",
            ),
            ("A8", "F1 S1 U4", "fast math, persistent over tiles (finer tail), 4 pairs"),
            ("A9", "F1 S2", "fast math, persistent tiles + next-tile prefetch"),
            ("A10", "F1 S2 U4 M2", "fast math, prefetch of 4 pairs, <= 128 registers"),
            ("A11", "F1 P0 U4 E1", "as A3, PDL dependents launched when a block starts"),
        ],
    ),
    "norm": _grid(
        "norm",
        [
            ("N0", "", "before tuning"),
            ("N1", "R2", "2 rows per lane group in flight (loads first)"),
            ("N2", "R4", "4 rows per lane group in flight (the default before N27)"),
            ("N3", "P1", "persistent grid: weight staged once per CTA"),
            ("N4", "P1 R2", "persistent, 2 rows per group"),
            ("N5", "P1 R4", "persistent, 4 rows per group"),
            ("N6", "T256", "256-thread CTAs (half the CTAs, half the fixed costs)"),
            ("N7", "T256 R2", "256-thread CTAs, 2 rows per group"),
            ("N8", "T256 R4", "256-thread CTAs, 4 rows per group"),
            ("N9", "R2 E1", "as N1, PDL dependents launched when a CTA starts"),
            ("N10", "P1 R2 E1", "as N4, PDL dependents launched when a CTA starts"),
            ("N11", "T512 R2", "512-thread CTAs, 2 rows per group"),
            (
                "N12",
                "R4 M8",
                "as N2 (default), rmsnorm D <= 512 at <= 64 registers: 8 CTAs per SM, not 6",
            ),
            ("N13", "T64 R4", "as N2 with 64-thread CTAs (finer CTA turnover)"),
            ("N14", "T64 R4 M16", "64-thread CTAs, 4 rows, rmsnorm D <= 512 at <= 64 registers"),
            (
                "N15",
                "R2 M10",
                "2 rows per group, rmsnorm D <= 512 at <= 48 registers: 10 CTAs per SM",
            ),
            ("N16", "R4 L1", "D <= 256: one pack per lane, a warp per D = 256 row"),
            ("N17", "R4 L1 T32", "as N16 in one-warp CTAs of 4 rows (Triton's layout at D = 256)"),
            ("N18", "R2 L1 T32", "as N17 with 2 rows per CTA"),
            ("N19", "R4 L1 T64", "as N16 in two-warp CTAs"),
            # N20-N23 and N26 (cache hints on the row loads and stores) were measured and removed
            # with their knobs: see tools/tune_kernels.md.
            ("N24", "R4 W2", "as N2, the weight from global into registers in every plan"),
            ("N25", "R4 L1 T32 W2", "as N17 (Triton's layout), the weight in registers"),
            (
                "N27",
                "R4 W1",
                "as N2, the weight in registers in the warp-group plans, staged in the CTA plan "
                "(default)",
            ),
            ("N28", "R4 W1 E1", "as N27, PDL dependents launched when a CTA starts"),
            ("N29", "R2 W1 E1", "as N28 with 2 rows per group (fused D = 256: more CTAs per SM)"),
            (
                "N30",
                "R2 L1 T32 W1",
                "as N18 (closest to torch.compile's fused), weight in registers",
            ),
        ],
    ),
    "qknorm": _grid(
        "qknorm",
        [
            ("Q0", "", "before tuning"),
            ("Q1", "I2", "2 heads per lane group in flight"),
            ("Q2", "I4", "4 heads per lane group in flight"),
            ("Q3", "W1", "weights held in registers (no per-head L1 loads)"),
            ("Q4", "I2 W1", "2 heads in flight, weights in registers"),
            ("Q5", "I4 W1", "4 heads in flight, weights in registers"),
            ("Q6", "P0", "non-persistent (one CTA per 16..32 heads) (default)"),
            ("Q7", "P0 I2 W1", "non-persistent, 2 heads in flight, weights in registers"),
            ("Q8", "P0 I4 W1", "non-persistent, 4 heads in flight, weights in registers"),
            ("Q9", "T256 I2 W1", "256-thread CTAs, 2 heads in flight, weights in registers"),
            ("Q10", "I2 W1 E1", "as Q4, PDL dependents launched when a CTA starts"),
            ("Q11", "T256 I4", "256-thread CTAs, 4 heads in flight"),
        ],
    ),
    "rope": _grid(
        "rope",
        [
            ("R0", "", "before tuning"),
            ("R1", "G4", "GPT-J: 4 heads (vectors) in flight per thread, as many bytes as NeoX"),
            ("R2", "P0", "one block per token group (no persistent tail)"),
            ("R3", "P0 G4", "non-persistent, GPT-J 4 heads in flight"),
            ("R4", "S1 G4", "every thread a full unroll of heads (few heads: more tokens/block)"),
            ("R5", "P0 S1 G4", "non-persistent, spread, GPT-J 4 heads"),
            ("R6", "P0 S1 U4 G8", "non-persistent, spread, twice the bytes in flight"),
            ("R7", "P0 S1 G4 B128", "as R5 with 128-thread blocks"),
            ("R8", "P0 S1 G4 B512", "as R5 with 512-thread blocks"),
            ("R9", "S1 U4 G8", "persistent, spread, twice the bytes in flight"),
            ("R10", "S2 G4", "as R0 for NeoX, as R4 for GPT-J (spread GPT-J only)"),
            ("R11", "W1", "whole-warp blocks (16 + 2 heads: 2 tokens x 144 threads)"),
            ("R12", "S2 G4 W1", "R10 with whole-warp blocks"),
            ("R13", "S2 G4 H1", "every thread walks all heads of its token (32 NeoX tokens/block)"),
            ("R14", "S2 G4 H1 P0", "as R13, one block per token group (FlashInfer's layout)"),
            ("R15", "S2 G4 H1 P0 B128", "as R14 with 128-thread blocks"),
            ("R16", "S2 G4 H2", "at most 2 heads side by side per token"),
            ("R17", "S2 G4 H4", "at most 4 heads side by side per token"),
            ("R18", "S2 G4 M128", "no spill: GPT-J bf16 80+ registers (ptxas picks 64 and spills)"),
            ("R19", "S2 G4 M72", "72 registers: NeoX 5 blocks of 144 threads per SM, not 4"),
            ("R20", "S2 G4 M64", "64 registers: 6 blocks per SM, some spilling"),
            ("R21", "S2 G4 H2 M72", "as R16 with 72 registers"),
            ("R22", "S2 G4 L1", "lean plan: a thread per chunk, token and head (33-50 regs)"),
            ("R23", "S2 G4 L1 J256", "lean plan, 256-thread blocks"),
            ("R24", "S2 G4 L1 K2", "lean plan, 2 heads per thread"),
            ("R25", "S2 G4 L1 K4", "lean plan, 4 heads per thread"),
            ("R26", "S2 G4 L2 M72", "lean plan for GPT-J, the looping plan (72 regs) for NeoX"),
            (
                "R27",
                R27_KNOBS,
                "as R26, NeoX below 2^21 (token, head) pairs lean too (the default before R34)",
            ),
            ("R28", f"{R27_KNOBS} O1", "as R27, lean grid token-major (DRAM locality)"),
            ("R29", f"{R27_KNOBS} O1 E1", "as R28, PDL dependents launched at start"),
            ("R30", f"{R27_KNOBS} E1", "as R27, PDL dependents launched at start"),
            ("R31", f"{R27_KNOBS} C1", "as R27, q/k loads evict-first in L2"),
            ("R32", f"{R27_KNOBS} C6", "as R27, cos/sin loads evict-last in L2"),
            ("R33", f"{R27_KNOBS} C7", "as R27, q/k evict-first and cos/sin evict-last"),
            (
                "R34",
                f"{R27_KNOBS} C2",
                "as R32 in the lean plan, as R27 in the looping plan (default)",
            ),
        ],
    ),
    "store_cache": _grid(
        "store_cache",
        [
            ("C0", "", "before tuning"),
            ("C1", "U8", "8 vectors in flight per thread (a 4 KiB k+v row in one pass)"),
            ("C2", "U16", "16 vectors in flight per thread"),
            ("C3", "P0", "one warp per row, no persistent loop"),
            ("C4", "P0 U8", "non-persistent, 8 vectors in flight"),
            ("C5", "P0 U16", "non-persistent, 16 vectors in flight"),
            ("C6", "P0 U8 B128", "as C4 with 128-thread blocks"),
            ("C7", "P0 U8 B512", "as C4 with 512-thread blocks"),
            ("C8", "U8 B512", "persistent, 8 vectors, 512-thread blocks"),
            (
                "C9",
                "P2 U8 B128",
                "as C6; rows of one vector per lane: the C0 plan (the default before C13)",
            ),
            ("C10", "P2 U8 B128 E1", "as C9, PDL dependents launched when a block starts"),
            ("C11", "P2 U8 B128 H1", "as C9, k/v rows loaded evict-first (L1 and L2)"),
            ("C12", "P2 U8 B128 H2", "as C11 for k + v rows of at most 2 KiB, else C9"),
            (
                "C13",
                "P2 U8 B128 H2 G1",
                "as C12, small rows split: 4 vectors per lane (H2 now hints them too; the default"
                " before C17)",
            ),
            ("C14", "P2 U8 B128 H2 G1 Q0", "as C13, small-row plan not persistent"),
            ("C15", "P2 U8 B128 H1 G1", "as C13, every row loaded evict-first"),
            ("C16", "P2 U8 B128 H2 G1 V8", "as C13 with 8 vectors per lane"),
            (
                "C17",
                "P2 U8 B128 H2 G1 F1",
                "as C13, rows of few-row calls spread over more lanes until the grid has a"
                " block per SM (default)",
            ),
            ("C18", "P2 U8 B128 H2 G1 F2", "as C17, spread until 2 blocks per SM"),
            ("C19", "P2 U8 B128 H2 G1 F4", "as C17, spread until 4 blocks per SM"),
        ],
    ),
}

# ----------------------------------------------------------------------------------- modules

ACT_OPS = ("silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul")
EXPORT_NAMES = {"qknorm": "fused_inplace_qknorm", "rope": "apply_rope_inplace"}  # kernel -> export
SHORT_DTYPE = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
CPP_DTYPE = {torch.bfloat16: "bf16_t", torch.float16: "fp16_t", torch.float32: "fp32_t"}
DTYPE_BY_SHORT = {short: dtype for dtype, short in SHORT_DTYPE.items()}


@dataclass(frozen=True)
class ModuleSpec:
    """The ``load_jit`` arguments of one module (the same in the build child and here)."""

    markers: tuple[str, ...]
    cuda_files: tuple[str, ...]
    wrappers: tuple[tuple[str, str], ...]
    flags: tuple[str, ...]

    @property
    def name(self) -> str:
        from jit_kernel.compiler.plan import module_name

        return module_name(self.markers)

    def as_json(self) -> dict[str, Any]:
        return {
            "markers": list(self.markers),
            "cuda_files": list(self.cuda_files),
            "wrappers": [list(w) for w in self.wrappers],
            "flags": list(self.flags),
        }


def _markers(prefix: str, dtypes: str, variant: Variant, **force: int) -> tuple[str, ...]:
    return (prefix, dtypes, *variant.label(**force).split())


def variant_modules(variant: Variant, pdl: bool) -> dict[str, ModuleSpec]:
    """dtype short name -> the module holding that dtype's exports for ``variant``.

    activation: one module for bf16 + fp16, one for fp32 built with SGL_ACT_FAST_MATH=0
    (the knob does not apply to fp32, so variants that differ only in it share the fp32 module).
    norm: one bf16 module with rmsnorm and fused_add_rmsnorm. qknorm: one bf16 + fp16 module.
    rope: one bf16 + fp16 + fp32 module. store_cache: one module (the copy is by bytes).
    Export names carry the dtype: ``silu_and_mul_bf16``, ``rmsnorm_bf16``, ...
    """
    flag = "true" if pdl else "false"
    if variant.family == "activation":
        two = tuple(
            (f"{op}_{SHORT_DTYPE[dt]}", f"{op}<{CPP_DTYPE[dt]}, {flag}>")
            for dt in (torch.bfloat16, torch.float16)
            for op in ACT_OPS
        )
        four = tuple((f"{op}_fp32", f"{op}<{CPP_DTYPE[torch.float32]}, {flag}>") for op in ACT_OPS)
        files = ("elementwise/activation.cuh",)
        half = ModuleSpec(
            _markers("tune_act", "bf16_fp16", variant), files, two, tuple(variant.flags())
        )
        full = ModuleSpec(
            _markers("tune_act", "fp32", variant, F=0), files, four, tuple(variant.flags(F=0))
        )
        return {"bf16": half, "fp16": half, "fp32": full}
    if variant.family == "norm":
        wrappers = (
            ("rmsnorm_bf16", f"rmsnorm<bf16_t, {flag}>"),
            ("fused_add_rmsnorm_bf16", f"fused_add_rmsnorm<bf16_t, {flag}>"),
        )
        files = ("elementwise/rmsnorm.cuh", "elementwise/fused_add_rmsnorm.cuh")
        spec = ModuleSpec(
            _markers("tune_norm", "bf16", variant), files, wrappers, tuple(variant.flags())
        )
        return {"bf16": spec}
    if variant.family == "rope":
        wrappers = tuple(
            (f"apply_rope_inplace_{short}", f"apply_rope_inplace<{CPP_DTYPE[dt]}, {flag}>")
            for dt, short in SHORT_DTYPE.items()
        )
        spec = ModuleSpec(
            _markers("tune_rope", "all", variant),
            ("elementwise/rope.cuh",),
            wrappers,
            tuple(variant.flags()),
        )
        return dict.fromkeys(SHORT_DTYPE.values(), spec)
    if variant.family == "store_cache":
        spec = ModuleSpec(
            _markers("tune_store", "bytes", variant),
            ("elementwise/store_cache.cuh",),
            (("store_cache_bf16", f"store_cache<{flag}>"),),
            tuple(variant.flags()),
        )
        return {"bf16": spec}
    wrappers = tuple(
        (
            f"fused_inplace_qknorm_{SHORT_DTYPE[dt]}",
            f"fused_inplace_qknorm<{CPP_DTYPE[dt]}, {flag}>",
        )
        for dt in (torch.bfloat16, torch.float16)
    )
    spec = ModuleSpec(
        _markers("tune_qknorm", "bf16_fp16", variant),
        ("elementwise/qknorm.cuh",),
        wrappers,
        tuple(variant.flags()),
    )
    return {"bf16": spec, "fp16": spec}


def load_module(spec: ModuleSpec, arch: str) -> Any:
    """The built module (warm path: the child built it into the same cache)."""
    from jit_kernel.compiler import load_jit, override_arch

    with override_arch(arch):
        return load_jit(
            *spec.markers,
            cuda_files=list(spec.cuda_files),
            cuda_wrappers=[tuple(w) for w in spec.wrappers],
            extra_cuda_cflags=list(spec.flags),
        )


# ----------------------------------------------------------------------------------- builds

BUILD_CHILD = r"""
import json, sys
spec, arch = json.loads(sys.argv[1]), sys.argv[2]
from jit_kernel.compiler import build_only, load_jit, override_arch
with override_arch(arch), build_only():
    result = load_jit(*spec["markers"], cuda_files=spec["cuda_files"],
                      cuda_wrappers=[tuple(w) for w in spec["wrappers"]],
                      extra_cuda_cflags=spec["flags"])
print("TUNE_BUILD " + json.dumps({"path": str(result.path), "built": bool(result.built)}))
"""


@dataclass
class BuildOutcome:
    status: str  # "built", "cached", "failed", "skipped"
    seconds: float = 0.0
    path: str = ""
    error: str = ""


class Builder:
    """Builds modules in child processes, ``jobs`` at a time; ``stop`` kills what still runs.

    Each child runs in its own session, so killing its process group also ends the ninja and
    nvcc it started (and nothing else).
    """

    def __init__(self, specs: list[ModuleSpec], arch: str, jobs: int, log_dir: Path) -> None:
        self.pending: deque[ModuleSpec] = deque(specs)
        self.running: dict[str, tuple[subprocess.Popen[bytes], float, Path, ModuleSpec]] = {}
        self.results: dict[str, BuildOutcome] = {}
        self.arch = arch
        self.jobs = max(1, jobs)
        self.log_dir = log_dir
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.stopped = False
        self.thread = threading.Thread(target=self._loop, name="tune-builder", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _spawn(self, spec: ModuleSpec) -> None:
        log = self.log_dir / f"{spec.name}.log"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-c", BUILD_CHILD, json.dumps(spec.as_json()), self.arch],
                cwd=REPO_ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.running[spec.name] = (proc, time.perf_counter(), log, spec)

    def _reap(self) -> None:
        for name, (proc, started, log, _) in list(self.running.items()):
            code = proc.poll()
            if code is None:
                continue
            seconds = time.perf_counter() - started
            text = log.read_text(errors="replace")
            match = re.search(r"^TUNE_BUILD (.*)$", text, re.MULTILINE)
            if code == 0 and match:
                info = json.loads(match.group(1))
                status = "built" if info["built"] else "cached"
                self.results[name] = BuildOutcome(status, seconds, info["path"])
            else:
                self.results[name] = BuildOutcome("failed", seconds, error=_tail(text, 40))
            del self.running[name]

    def _loop(self) -> None:
        while True:
            with self.lock:
                if self.stopped:
                    return
                self._reap()
                while self.pending and len(self.running) < self.jobs:
                    self._spawn(self.pending.popleft())
                if not self.pending and not self.running:
                    self.done.set()
                    return
            time.sleep(0.1)

    def wait(self, deadline: float | None) -> bool:
        """Wait until every build ended or ``deadline`` (perf_counter) passed; True if all ended."""
        timeout = None if deadline is None else max(0.0, deadline - time.perf_counter())
        return self.done.wait(timeout)

    def stop(self, reason: str) -> None:
        with self.lock:
            self.stopped = True
            self._reap()
            for name, (proc, started, _, _) in self.running.items():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)  # the child's own session (its pid)
                proc.wait()
                self.results[name] = BuildOutcome(
                    "skipped", time.perf_counter() - started, error=reason
                )
            self.running.clear()
            while self.pending:
                self.results[self.pending.popleft().name] = BuildOutcome("skipped", error=reason)
            self.done.set()

    def progress(self) -> str:
        with self.lock:
            ended = len(self.results)
            return f"{ended} ended, {len(self.running)} running, {len(self.pending)} queued"


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def build_order(variants: list[Variant], pdl: bool) -> list[ModuleSpec]:
    """Unique modules, interleaving the families by grid position (baselines first)."""
    by_family: dict[str, list[Variant]] = {}
    for variant in variants:
        by_family.setdefault(variant.family, []).append(variant)
    order: list[ModuleSpec] = []
    seen: set[str] = set()
    for index in range(max((len(v) for v in by_family.values()), default=0)):
        for family in FAMILIES:
            group = by_family.get(family, [])
            if index >= len(group):
                continue
            for spec in variant_modules(group[index], pdl).values():
                if spec.name not in seen:
                    seen.add(spec.name)
                    order.append(spec)
    return order


def find_cuobjdump() -> str | None:
    found = shutil.which("cuobjdump")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / "cuobjdump").is_file():
            return str(Path(root) / "bin" / "cuobjdump")
    return None


def resource_usage(cuobjdump: str, library: str) -> list[tuple[str, int, int, int]]:
    """(kernel, registers, stack bytes, local bytes) of every kernel in ``library``."""
    try:
        out = subprocess.run(
            [cuobjdump, "-res-usage", library], capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    rows = []
    for name, regs, stack, local in re.findall(
        r"Function (\S+):\s*\n\s*REG:(\d+) STACK:(\d+) SHARED:\d+ LOCAL:(\d+)", out
    ):
        rows.append((_short_kernel_name(name) or name, int(regs), int(stack), int(local)))
    return rows


def _short_kernel_name(mangled: str) -> str:
    """``act_and_mul_kernel<bf16, SiluOp, 16>``-like text from a mangled name (best effort)."""
    try:
        text = subprocess.run(
            ["c++filt"], input=mangled, capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""
    text = text.replace("(anonymous namespace)::", "").replace("__nv_bfloat16", "bf16")
    text = text.replace("__half", "fp16")
    return re.sub(r"\(.*\)$", "", text)


# ----------------------------------------------------------------------------------- shapes


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
    """``benchmarks/cases/<stem>.py``: its shapes, inputs and peers (rope, store_cache)."""
    if stem not in _BENCH_CASES:
        _BENCH_CASES[stem] = load_family(stem)
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
    elif family == "rope":  # the rows of benchmarks/cases/rope.py
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
    elif family == "store_cache":  # the rows of benchmarks/cases/store_cache.py
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


# ----------------------------------------------------------------------------------- references

ACT_TOL = {torch.bfloat16: (1e-2, 1e-5), torch.float16: (2e-3, 1e-5), torch.float32: (1e-5, 1e-5)}
NORM_RTOL = {torch.bfloat16: 2.0**-7, torch.float16: 2.0**-10}
NORM_ATOL = 1e-5
ROPE_RTOL = {torch.bfloat16: 1e-2, torch.float16: 2e-3, torch.float32: 1e-5}  # test_rope.py


def act_fn(op: str) -> Callable[[torch.Tensor], torch.Tensor]:
    import torch.nn.functional as F

    return {
        "silu_and_mul": F.silu,
        "gelu_and_mul": lambda x: F.gelu(x, approximate="none"),
        "gelu_tanh_and_mul": lambda x: F.gelu(x, approximate="tanh"),
    }[op]


def act_reference(op: str, x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    xf = x.float()
    return (act_fn(op)(xf[..., :d]) * xf[..., d:]).to(x.dtype)


def rms_reference(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + EPS)
    return ((xf * rstd) * weight.float()).to(x.dtype)


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
        eq, ek = q.clone(), k.clone()
        bench_case("rope").torch_rope(eq, ek, cache, pos, bool(shape.dims[3]))
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


# ----------------------------------------------------------------------------------- checks
# The tests' shapes (registered/jit/test_*.py), run on every variant in a child process, plus
# shapes whose work exceeds one wave of a persistent grid (the tile schedule's carry from chunk
# to row group needs a chunk count that does not divide the grid: 5 and 7 chunks below).

ACT_CHECK_SHAPES = [
    (2,),
    (1, 2),
    (5, 6),
    (4, 14),
    (7, 16),
    (9, 200),
    (2, 3, 512),
    (2, 5, 3, 64),
    (4097, 128),
    (1, 2 * 4096),
    (33, 2 * 4096),
    (128, 2 * 11008),
    (3, 2 * 14336),
    (1000, 2 * 256),
    (37, 2 * 1001),
    (8191, 2 * 136),
    (1030, 2 * 11008),
    (300, 2 * 19200),
    (300, 2 * 28000),
    (0, 16),
    (4, 0),
]
NORM_CHECK_DIMS = [8, 16, 64, 72, 128, 256, 264, 512, 520, 1024, 1032, 2048, 4096, 8192, 16384]
NORM_CHECK_ROWS = [1, 7, 129, 1025]
QK_CHECK_TOKENS = [1, 9, 257, 4109]
QK_CHECK_HEADS = [(1, 1), (8, 1), (5, 3), (32, 8)]


def check_activation(exports: dict[str, Callable[..., Any]]) -> None:
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        rtol, atol = ACT_TOL[dtype]
        for op in ACT_OPS:
            fn = exports[f"{op}_{SHORT_DTYPE[dtype]}"]
            for shape in ACT_CHECK_SHAPES:
                x = torch.randn(shape, dtype=dtype, device="cuda") * 3
                out = torch.full(
                    (*shape[:-1], shape[-1] // 2), float("nan"), dtype=dtype, device="cuda"
                )
                fn(out, x)
                _close(out, act_reference(op, x), rtol, atol, f"{op} {dtype} {shape}")
            gate = torch.tensor([80.0, -80.0, 1e4, -1e4, 0.0, -0.0, 5.0, -5.0], dtype=dtype)
            up = torch.tensor([1.0, 2.0, -1.0, 3.0, 4.0, -4.0, 0.5, 1.5], dtype=dtype)
            x = torch.cat([gate, up]).view(1, -1).cuda()
            out = torch.full((1, 8), float("nan"), dtype=dtype, device="cuda")
            fn(out, x)
            _close(out, act_reference(op, x), rtol, atol, f"{op} {dtype} large magnitudes")
            # Views at element offsets (narrower vectors); the neighbours must stay intact.
            for offset in (1, 2, 3, 8):
                rows, d = 19, 136
                flat = torch.randn(rows * 2 * d + offset, dtype=dtype, device="cuda")
                x = flat[offset:].view(rows, 2 * d)
                out_flat = torch.full((rows * d + 2 * offset,), 7.0, dtype=dtype, device="cuda")
                out = out_flat[offset : offset + rows * d].view(rows, d)
                fn(out, x)
                _close(out, act_reference(op, x), rtol, atol, f"{op} {dtype} offset {offset}")
                if not bool(
                    (out_flat[:offset] == 7).all() and (out_flat[offset + rows * d :] == 7).all()
                ):
                    raise AssertionError(f"{op} {dtype} offset {offset}: wrote outside out")


def check_norm(exports: dict[str, Callable[..., Any]]) -> None:
    dtype = torch.bfloat16
    rms, fused = exports["rmsnorm_bf16"], exports["fused_add_rmsnorm_bf16"]
    cases = [(rows, dim) for dim in NORM_CHECK_DIMS for rows in NORM_CHECK_ROWS]
    cases += [(70001, 256), (70001, 1024), (5003, 4096)]
    for rows, dim in cases:
        what = f"{rows}x{dim}"
        weight = (1.0 + 0.5 * torch.randn(dim, device="cuda")).to(dtype)
        x = torch.randn(rows, dim, dtype=dtype, device="cuda")
        out = torch.full_like(x, float("nan"))
        rms(out, x, weight, EPS)
        _close(
            out.float(),
            rms_reference(x, weight).float(),
            NORM_RTOL[dtype],
            NORM_ATOL,
            f"rmsnorm {what}",
        )
        r = torch.randn(rows, dim, dtype=dtype, device="cuda")
        total = (x.float() + r.float()).to(dtype)
        expected = rms_reference(total, weight).float()
        fused(x, r, weight, EPS)
        _close(r, total, 0.0, 0.0, f"fused_add_rmsnorm residual {what}")
        _close(x.float(), expected, NORM_RTOL[dtype], NORM_ATOL, f"fused_add_rmsnorm {what}")
    for dim in (256, 1024, 4096):  # strided rows (stride dim + 24), in place, guards around
        rows = 19
        base = torch.randn(rows + 2, dim + 24, dtype=dtype, device="cuda")
        keep = base.clone()
        x = base[1 : rows + 1, 8 : 8 + dim]
        weight = (1.0 + 0.5 * torch.randn(dim, device="cuda")).to(dtype)
        expected = rms_reference(x, weight).float()
        rms(x, x, weight, EPS)
        _close(x.float(), expected, NORM_RTOL[dtype], NORM_ATOL, f"rmsnorm strided in place {dim}")
        keep[1 : rows + 1, 8 : 8 + dim] = x
        if not torch.equal(base, keep):
            raise AssertionError(f"rmsnorm strided {dim}: wrote outside the view")
        xb = torch.randn(rows + 2, dim + 16, dtype=dtype, device="cuda")
        rb = torch.randn(rows + 1, dim + 40, dtype=dtype, device="cuda")
        x, r = xb[2:, 8 : 8 + dim], rb[1:, 32 : 32 + dim]
        total = (x.float() + r.float()).to(dtype)
        expected = rms_reference(total, weight).float()
        fused(x, r, weight, EPS)
        _close(r, total, 0.0, 0.0, f"fused_add_rmsnorm strided residual {dim}")
        _close(x.float(), expected, NORM_RTOL[dtype], NORM_ATOL, f"fused_add_rmsnorm strided {dim}")


def check_qknorm(exports: dict[str, Callable[..., Any]]) -> None:
    for dtype in (torch.bfloat16, torch.float16):
        fn = exports[f"fused_inplace_qknorm_{SHORT_DTYPE[dtype]}"]
        for d in (64, 128, 256, 512):
            qw = (1.0 + 0.5 * torch.randn(d, device="cuda")).to(dtype)
            kw = (1.0 + 0.5 * torch.randn(d, device="cuda")).to(dtype)
            layouts = [(t, hq, hk) for t in QK_CHECK_TOKENS for hq, hk in QK_CHECK_HEADS]
            for t, hq, hk in [*layouts, (65537, 6, 2)]:
                q = torch.randn(t, hq, d, dtype=dtype, device="cuda")
                k = torch.randn(t, hk, d, dtype=dtype, device="cuda")
                eq, ek = rms_reference(q, qw).float(), rms_reference(k, kw).float()
                fn(q, k, qw, kw, EPS)
                what = f"qknorm {dtype} {t}x({hq}+{hk})x{d}"
                _close(q.float(), eq, NORM_RTOL[dtype], NORM_ATOL, f"{what} q")
                _close(k.float(), ek, NORM_RTOL[dtype], NORM_ATOL, f"{what} k")
            # Views of a fused qkv buffer with a padded token stride; head-major k.
            t, hq, hk = 33, 5, 3
            width = (hq + 2 * hk) * d + 8
            qkv = torch.randn(t, width, dtype=dtype, device="cuda")
            keep = qkv.clone()
            q = qkv[:, : hq * d].view(t, hq, d)
            k = torch.randn(hk, t, d, dtype=dtype, device="cuda").transpose(0, 1)
            eq, ek = rms_reference(q, qw).float(), rms_reference(k, kw).float()
            fn(q, k, qw, kw, EPS)
            _close(q.float(), eq, NORM_RTOL[dtype], NORM_ATOL, f"qknorm view {d} q")
            _close(k.float(), ek, NORM_RTOL[dtype], NORM_ATOL, f"qknorm head-major {d} k")
            if not torch.equal(qkv[:, hq * d :], keep[:, hq * d :]):
                raise AssertionError(f"qknorm view {d}: wrote outside q")


ROPE_CHECK_DIMS = [(128, 128), (64, 64), (256, 256), (128, 64), (80, 80), (128, 34), (96, 2)]
ROPE_CHECK_LAYOUTS = [(1, 1, 1), (7, 4, 1), (129, 8, 2), (2049, 32, 8), (33, 64, 8)]


def check_rope(exports: dict[str, Callable[..., Any]]) -> None:
    """test_rope.py's cases: every dim pair and head layout, fused-qkv views, offsets, positions."""
    rope = bench_case("rope")
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        fn = exports[f"apply_rope_inplace_{SHORT_DTYPE[dtype]}"]
        rtol = ROPE_RTOL[dtype]

        def run(q, k, cache, pos, is_neox, what, fn=fn, rtol=rtol, dtype=dtype):
            eq, ek = q.clone(), k.clone()
            rope.torch_rope(eq, ek, cache, pos, is_neox)
            fn(q, k, cache, pos, is_neox, 0)
            _close(q, eq, rtol, 1e-5, f"rope {dtype} {what} q")
            _close(k, ek, rtol, 1e-5, f"rope {dtype} {what} k")

        for is_neox in (True, False):
            layouts = [(d, r, *lay) for d, r in ROPE_CHECK_DIMS for lay in ROPE_CHECK_LAYOUTS]
            for head_dim, rope_dim, t, hq, hk in [*layouts, (128, 128, 70001, 16, 2)]:
                cache = rope.make_cos_sin_cache(4096, rope_dim)
                pos = torch.randint(0, 4096, (t,), device="cuda")
                qkv = torch.randn(t, (hq + 2 * hk) * head_dim, dtype=dtype, device="cuda")
                v_before = qkv[:, (hq + hk) * head_dim :].clone()
                q = qkv[:, : hq * head_dim].view(t, hq, head_dim)
                k = qkv[:, hq * head_dim : (hq + hk) * head_dim].view(t, hk, head_dim)
                what = f"{'neox' if is_neox else 'gptj'} {t}x({hq}+{hk})x{head_dim}/{rope_dim}"
                run(q, k, cache, pos, is_neox, what)
                if not torch.equal(qkv[:, (hq + hk) * head_dim :], v_before):
                    raise AssertionError(f"rope {dtype} {what}: wrote into v")
            # Views at element offsets (narrower vectors); the neighbours must stay intact.
            for offset in (1, 2, 4) if is_neox else (2, 4):
                t, hq, hk, d = 33, 4, 2, 64
                flat = torch.randn(t * (hq + hk) * d + offset + 8, dtype=dtype, device="cuda")
                keep = flat.clone()
                body = flat[offset : offset + t * (hq + hk) * d].view(t, hq + hk, d)
                cache = rope.make_cos_sin_cache(4096, d)
                pos = torch.randint(0, 4096, (t,), device="cuda", dtype=torch.int32)
                run(body[:, :hq], body[:, hq:], cache, pos, is_neox, f"offset {offset}")
                if not (
                    torch.equal(flat[:offset], keep[:offset])
                    and torch.equal(flat[offset + body.numel() :], keep[offset + body.numel() :])
                ):
                    raise AssertionError(f"rope {dtype} offset {offset}: wrote outside q/k")
            # Out-of-range positions leave their tokens unchanged; strided int32 positions.
            q = torch.randn(9, 8, 128, dtype=dtype, device="cuda")
            k = torch.randn(9, 2, 128, dtype=dtype, device="cuda")
            q0, k0 = q.clone(), k.clone()
            cache = rope.make_cos_sin_cache(64, 128)
            pos = torch.tensor([0, -1, 63, 64, 5, 1 << 20, 7, 8, 9], device="cuda")
            fn(q, k, cache, pos, is_neox, 0)
            for token in (1, 3, 5):
                if not (torch.equal(q[token], q0[token]) and torch.equal(k[token], k0[token])):
                    raise AssertionError(f"rope {dtype}: out-of-range token {token} changed")
            strided = torch.randint(0, 64, (2 * 257,), device="cuda", dtype=torch.int32)[::2]
            q = torch.randn(257, 8, 128, dtype=dtype, device="cuda")
            k = torch.randn(257, 2, 128, dtype=dtype, device="cuda")
            run(q, k, cache, strided, is_neox, "strided int32 positions")


def check_store_cache(exports: dict[str, Callable[..., Any]]) -> None:
    """test_store_cache.py's cases: row sizes, dtypes, strides, index types, skipped rows."""
    fn = exports["store_cache_bf16"]  # the copy is by bytes: one export for every dtype
    slots = 9000
    cases = [  # (rows, k row elements, v row elements, dtype)
        (rows, k_row, v_row, dtype)
        for rows in (1, 7, 129, 4097)
        for k_row, v_row in ((1024, 1024), (2048, 2048), (8192, 8192), (1024, 512), (128, 128))
        for dtype in (torch.bfloat16, torch.float32)
    ]
    cases += [
        (70001, 1024, 1024, torch.bfloat16),
        (4097, 3, 5, torch.uint8),
        (33, 7, 8, torch.int8),
    ]
    for rows, k_row, v_row, dtype in cases:
        for index_dtype in (torch.int32, torch.int64):
            num_slots = max(slots, 2 * rows + 2)

            def make(n, width, dtype=dtype):
                if dtype.is_floating_point:
                    return torch.randn(n, width, dtype=dtype, device="cuda")
                return torch.randint(-100, 100, (n, width), device="cuda").to(dtype)

            k = make(rows, k_row + 8)[:, 8:]  # strided rows at an element offset
            v = make(rows, v_row)
            k_cache, v_cache = make(num_slots, k_row), make(num_slots, v_row)
            indices = torch.randperm(num_slots, device="cuda")[: 2 * rows].to(index_dtype)[::2]
            bad = indices.clone()
            if rows > 1:
                bad[1] = -1
                bad[rows - 1] = num_slots
            ek, ev = k_cache.clone(), v_cache.clone()
            valid = (bad >= 0) & (bad < num_slots)
            ek[bad[valid].long()] = k[valid]
            ev[bad[valid].long()] = v[valid]
            fn(k, v, k_cache, v_cache, bad)
            what = f"store_cache {rows}x({k_row}+{v_row}) {dtype} {index_dtype}"
            _close(k_cache, ek, 0.0, 0.0, f"{what} k_cache")
            _close(v_cache, ev, 0.0, 0.0, f"{what} v_cache")


CHECKERS = {
    "activation": check_activation,
    "norm": check_norm,
    "qknorm": check_qknorm,
    "rope": check_rope,
    "store_cache": check_store_cache,
}


def check_child(spec_path: Path) -> int:
    """Check the variants listed in ``spec_path``; print one ``TUNE_CHECK`` line per variant.

    A CUDA error poisons the context, so the child stops at the first one (exit 3) after
    reporting that variant as crashed; the parent starts a new child for the rest.
    """
    spec = json.loads(spec_path.read_text())
    torch.manual_seed(0)
    for entry in spec["variants"]:
        name, family = entry["name"], entry["family"]
        started = time.perf_counter()
        try:
            exports: dict[str, Callable[..., Any]] = {}
            for module_json in {json.dumps(m, sort_keys=True) for m in entry["modules"].values()}:
                module_spec = ModuleSpec(
                    tuple(json.loads(module_json)["markers"]),
                    tuple(json.loads(module_json)["cuda_files"]),
                    tuple(tuple(w) for w in json.loads(module_json)["wrappers"]),
                    tuple(json.loads(module_json)["flags"]),
                )
                module = load_module(module_spec, spec["arch"])
                for export, _ in module_spec.wrappers:
                    exports[export] = getattr(module, export)
            CHECKERS[family](exports)
            torch.cuda.synchronize()
            result = {"name": name, "status": "ok", "error": ""}
        except AssertionError as error:
            result = {"name": name, "status": "wrong", "error": str(error)[:2000]}
        except Exception as error:  # a launch/CUDA error: the context is unusable now
            result = {
                "name": name,
                "status": "crash",
                "error": f"{type(error).__name__}: {error}"[:2000],
            }
        result["seconds"] = round(time.perf_counter() - started, 2)
        print("TUNE_CHECK " + json.dumps(result), flush=True)
        if result["status"] == "crash":
            return 3
        try:
            torch.cuda.synchronize()
        except Exception:
            return 3
    return 0


def run_checks(
    entries: list[dict[str, Any]], arch: str, deadline: float, log_dir: Path
) -> dict[str, dict[str, Any]]:
    """Check ``entries`` in child processes (a new one after a crash); name -> result."""
    results: dict[str, dict[str, Any]] = {}
    remaining = list(entries)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    attempt = 0
    while remaining and deadline - time.perf_counter() > 1.0:
        attempt += 1
        spec_path = log_dir / f"check-{attempt}.json"
        spec_path.write_text(json.dumps({"arch": arch, "variants": remaining}))
        try:
            done = subprocess.run(
                [sys.executable, "-m", "tools.tune_kernels", "--check-child", str(spec_path)],
                cwd=REPO_ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=deadline - time.perf_counter(),
            )
            output, code, errors = done.stdout, done.returncode, done.stderr
        except subprocess.TimeoutExpired as expired:
            output = expired.stdout or ""
            output = output.decode(errors="replace") if isinstance(output, bytes) else output
            code, errors = None, "timed out"
        for line in output.splitlines():
            if line.startswith("TUNE_CHECK "):
                result = json.loads(line[len("TUNE_CHECK ") :])
                results[result["name"]] = result
        remaining = [e for e in remaining if e["name"] not in results]
        if code is None:
            break
        if code not in (0, 3) and remaining:
            # The child died without reporting: blame the variant it was on, go on with the rest.
            entry = remaining.pop(0)
            results[entry["name"]] = {
                "name": entry["name"],
                "status": "crash",
                "error": f"check process exited with {code}: {_tail(errors, 3)}",
            }
    for entry in remaining:
        results[entry["name"]] = {
            "name": entry["name"],
            "status": "skipped",
            "error": "no time left to check it",
        }
    return results


# ----------------------------------------------------------------------------------- peers


class Peers:
    """torch.compile and FlashInfer callables per shape (built lazily, failures as reasons)."""

    def __init__(self, use_compile: bool, use_flashinfer: bool) -> None:
        self.use_compile = use_compile
        self.use_flashinfer = use_flashinfer
        self.compiled: dict[str, Callable[..., Any]] = {}
        self.flashinfer_error: str | None = None
        self.flashinfer: Any = None
        if use_flashinfer:
            try:
                import flashinfer.activation  # optional peer
                import flashinfer.norm

                self.flashinfer = flashinfer
            except Exception as error:
                self.flashinfer_error = (
                    f"FlashInfer is not available ({type(error).__name__}: {error})"[:200]
                )
        else:
            self.flashinfer_error = "--no-flashinfer"

    def _compile(self, key: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        if key not in self.compiled:
            torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)
            self.compiled[key] = torch.compile(fn, dynamic=False)
        return self.compiled[key]

    def for_shape(self, shape: Shape) -> dict[str, Callable[..., Any] | str]:
        """name -> callable (same arguments as ours), or the reason it is N/A."""
        peers: dict[str, Callable[..., Any] | str] = {}
        if not self.use_compile:
            peers["torch_compile"] = "--no-compile"
        elif shape.family == "activation":
            act = act_fn(shape.kernel)

            def gated(x: torch.Tensor, act=act) -> torch.Tensor:
                d = x.shape[-1] // 2
                return act(x[..., :d]) * x[..., d:]

            peers["torch_compile"] = self._compile(shape.kernel, gated)
        elif shape.kernel == "rmsnorm":
            peers["torch_compile"] = self._compile("rmsnorm", rms_reference)
        elif shape.kernel == "fused_add_rmsnorm":

            def fused(x: torch.Tensor, r: torch.Tensor, w: torch.Tensor) -> None:
                total = (x.float() + r.float()).to(x.dtype)
                r.copy_(total)
                x.copy_(rms_reference(total, w))

            peers["torch_compile"] = self._compile("fused_add_rmsnorm", fused)
        elif shape.family == "rope":
            peers["torch_compile"] = bench_case("rope")._compiled(bool(shape.dims[3]))
        elif shape.family == "store_cache":
            peers["torch_compile"] = bench_case("store_cache")._compiled()
        else:

            def qk(q: torch.Tensor, k: torch.Tensor, qw: torch.Tensor, kw: torch.Tensor) -> None:
                q.copy_(rms_reference(q, qw))
                k.copy_(rms_reference(k, kw))

            peers["torch_compile"] = self._compile("qknorm", qk)
        if shape.family == "store_cache":
            peers["flashinfer"] = bench_case("store_cache").FLASHINFER_NA
        elif self.flashinfer is None:
            peers["flashinfer"] = self.flashinfer_error or "FlashInfer is not available"
        elif shape.family == "rope":
            peers["flashinfer"] = bench_case("rope")._flashinfer_peer(
                shape.dtype, bool(shape.dims[3])
            )
        elif shape.family == "activation":
            if shape.dtype == torch.float32:
                peers["flashinfer"] = "FlashInfer's activations take fp16/bf16 only"
            else:
                peers["flashinfer"] = getattr(self.flashinfer.activation, shape.kernel)
        elif shape.kernel == "rmsnorm":
            norm = self.flashinfer.norm
            peers["flashinfer"] = lambda x, w: norm.rmsnorm(x, w, EPS)
        elif shape.kernel == "fused_add_rmsnorm":
            norm = self.flashinfer.norm
            peers["flashinfer"] = lambda x, r, w: norm.fused_add_rmsnorm(x, r, w, EPS)
        else:
            norm = self.flashinfer.norm

            def fi_qk(q, k, qw, kw):
                norm.rmsnorm(q, qw, EPS, out=q)
                norm.rmsnorm(k, kw, EPS, out=k)

            peers["flashinfer"] = fi_qk
        return peers


# ----------------------------------------------------------------------------------- timing


def estimate_seconds(shape: Shape, kernel_s: float | None = None) -> float:
    """Predicted wall time of one do_bench of ``shape`` (kernel time from 2.6 TB/s if unknown)."""
    per_call = kernel_s if kernel_s is not None else shape.bytes_moved / 2.6e12 + 4e-6
    return CALLS_PER_MEASUREMENT * per_call + MEASUREMENT_OVERHEAD_S


@dataclass
class Row:
    """One kernel at one shape: microseconds (or a reason) for each peer and variant."""

    family: str
    kernel: str
    shape: str
    bytes_moved: int
    peers_us: dict[str, float] = field(default_factory=dict)
    peers_na: dict[str, str] = field(default_factory=dict)
    ours_us: dict[str, float] = field(default_factory=dict)
    ours_na: dict[str, str] = field(default_factory=dict)


def plan_measurements(
    shapes: list[Shape], candidates: dict[str, list[Variant]], available_s: float
) -> tuple[list[Shape], dict[str, list[Variant]], list[str]]:
    """Drop extra shapes, then the last variants of the costliest family, until the plan fits."""
    notes: list[str] = []
    kept = list(shapes)
    chosen = {family: list(v) for family, v in candidates.items()}

    def cost() -> float:
        return sum(estimate_seconds(s) * (len(chosen.get(s.family, [])) + 2) for s in kept)

    while cost() > available_s:
        extras = [s for s in kept if not s.core]
        if extras:
            kept.remove(extras[-1])
            notes.append(f"not timed (time budget): {extras[-1].key}")
            continue
        per_family = {
            family: sum(estimate_seconds(s) for s in kept if s.family == family)
            for family, v in chosen.items()
            if len(v) > 1
        }
        if not per_family:
            break
        family = max(per_family, key=lambda f: per_family[f])
        dropped = chosen[family].pop()
        notes.append(f"not timed (time budget): {dropped.name} ({dropped.label()})")
    return kept, chosen, notes


# ----------------------------------------------------------------------------------- report


def best_peer(row: Row) -> float | None:
    return min(row.peers_us.values()) if row.peers_us else None


def ratio(row: Row, us: float, copy_gbps: float) -> float:
    """Faster peer's time / ours (no peer: our fraction of the copy bandwidth)."""
    peer = best_peer(row)
    if peer is not None:
        return peer / us
    return row.bytes_moved / (us * 1e-6) / GB / copy_gbps


def choose_best(
    family: str,
    rows: list[Row],
    variants: list[Variant],
    copy_gbps: float,
    kernel: str | None = None,
) -> dict[str, Any] | None:
    """The variant with the largest minimum ratio over the rows (ties: larger geometric mean)."""
    rows = [r for r in rows if r.family == family and (kernel is None or r.kernel == kernel)]
    rows = [r for r in rows if r.ours_us]
    if not rows:
        return None
    scored = []
    for variant in variants:
        if not all(variant.name in r.ours_us for r in rows):
            continue
        ratios = [ratio(r, r.ours_us[variant.name], copy_gbps) for r in rows]
        copies = [r.bytes_moved / (r.ours_us[variant.name] * 1e-6) / GB / copy_gbps for r in rows]
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        scored.append((min(ratios), geo, min(copies), variant))
    if not scored:
        return None
    scored.sort(key=lambda item: (round(item[0], 3), item[1]), reverse=True)
    worst, geo, copy_min, variant = scored[0]
    return {
        "variant": variant.name,
        "flags": variant.flags(),
        "label": variant.label(),
        "min_ratio_vs_best_peer": worst,
        "geomean_ratio": geo,
        "min_copy_fraction": copy_min,
        "shapes": [f"{r.kernel} {r.shape}" for r in rows],
        "meets_targets": worst >= PEER_NOISE and copy_min >= BW_TARGET,
    }


def print_row(row: Row, variants: dict[str, Variant], copy_gbps: float) -> None:
    print(f"\n{row.kernel} {row.shape}  ({row.bytes_moved / 1e6:.1f} MB moved)")
    header = f"  {'variant':<14}{'knobs':<24}{'us':>9}{'GB/s':>7}{'/copy':>8}{'x tc':>7}{'x fi':>7}"
    print(header)

    def line(name: str, knobs: str, us: float | None, note: str = "") -> None:
        if us is None:
            print(f"  {name:<14}{knobs:<24}{note}")
            return
        gbps = row.bytes_moved / (us * 1e-6) / GB
        cells = ""
        for peer in ("torch_compile", "flashinfer"):
            cells += f"{row.peers_us[peer] / us:>6.2f}x" if peer in row.peers_us else f"{'-':>7}"
        print(f"  {name:<14}{knobs:<24}{us:>9.1f}{gbps:>7.0f}{gbps / copy_gbps:>8.1%}{cells}{note}")

    for peer in ("torch_compile", "flashinfer"):
        if peer in row.peers_us:
            line(peer, "(peer)", row.peers_us[peer])
        elif peer in row.peers_na:
            line(peer, "(peer)", None, f"N/A: {row.peers_na[peer]}")
    fastest = min(row.ours_us.values()) if row.ours_us else None
    for name, variant in variants.items():
        if name in row.ours_us:
            mark = "  <- fastest" if row.ours_us[name] == fastest else ""
            line(name, variant.label(), row.ours_us[name], mark)
        elif name in row.ours_na:
            line(name, variant.label(), None, row.ours_na[name])


# ----------------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--kernels",
        nargs="+",
        choices=FAMILIES,
        default=list(FAMILIES),
        metavar="FAMILY",
        help="kernel families to sweep: " + " ".join(FAMILIES) + " (default: all)",
    )
    parser.add_argument(
        "--variants",
        nargs="+",
        metavar="NAME",
        help="only these variants (e.g. A3 N1 Q4 R2 C1; each family's baseline "
        "A0/N0/Q0/R0/C0 is always kept)",
    )
    parser.add_argument(
        "--json", type=Path, metavar="PATH", help="write every figure to this JSON file"
    )
    parser.add_argument(
        "--time-budget",
        type=float,
        metavar="SECONDS",
        help=f"wall-clock limit of the whole run (default {DEFAULT_BUDGET_S:.0f}; "
        "with --build-only: none)",
    )
    parser.add_argument(
        "--build-only",
        action="store_true",
        help="only compile every variant (no GPU needed; use --arch) and print registers/spills",
    )
    parser.add_argument(
        "--arch",
        metavar="X.Y",
        help="target architecture, e.g. 9.0 (default: TVM_FFI_CUDA_ARCH_LIST, else the GPU)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="parallel module builds (default: the number of CPUs)",
    )
    parser.add_argument("--list", action="store_true", help="print the variants and exit")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile peer")
    parser.add_argument("--no-flashinfer", action="store_true", help="skip the FlashInfer peer")
    parser.add_argument(
        "--replay-iters",
        type=int,
        default=1000,
        metavar="N",
        help="do_bench replay_iters per measurement (default 1000: 10 replays of 100 calls)",
    )
    parser.add_argument("--check-child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    if args.replay_iters < 1:
        parser.error(f"--replay-iters must be at least 1, got {args.replay_iters}")
    if args.time_budget is not None and args.time_budget <= 0:
        parser.error(
            f"--time-budget must be a positive number of seconds, got {args.time_budget:g}"
        )
    if args.arch:
        from jit_kernel.compiler.arch import ArchError, parse_arch

        try:
            parse_arch(args.arch, "--arch")
        except ArchError as error:
            parser.error(str(error))
    return args


def selected_variants(args: argparse.Namespace) -> dict[str, list[Variant]]:
    chosen: dict[str, list[Variant]] = {}
    wanted = set(args.variants or [])
    known = {v.name for grid in VARIANTS.values() for v in grid}
    unknown = wanted - known
    if unknown:
        print(
            f"tune_kernels: unknown variant(s) {', '.join(sorted(unknown))}; see --list",
            file=sys.stderr,
        )
        raise SystemExit(2)
    for family in args.kernels:
        grid = VARIANTS[family]
        chosen[family] = [v for i, v in enumerate(grid) if i == 0 or not wanted or v.name in wanted]
    return chosen


def resolve_arch(args: argparse.Namespace) -> str:
    from jit_kernel.compiler.arch import get_jit_cuda_arch, parse_arch

    info = parse_arch(args.arch, "--arch") if args.arch else get_jit_cuda_arch()
    return f"{info.major}.{info.minor}"


def print_variants(chosen: dict[str, list[Variant]]) -> None:
    for family, grid in chosen.items():
        print(f"{family}:")
        for variant in grid:
            print(f"  {variant.name:<4} {variant.label():<26} {variant.why}")
            print(f"       {' '.join(variant.flags())}")


def build_all(
    chosen: dict[str, list[Variant]], arch: str, jobs: int, deadline: float | None, log_dir: Path
) -> tuple[Builder, list[ModuleSpec]]:
    pdl = int(arch.split(".")[0]) >= 9
    specs = build_order([v for grid in chosen.values() for v in grid], pdl)
    builder = Builder(specs, arch, jobs, log_dir)
    builder.start()
    return builder, specs


def run_build_only(
    args: argparse.Namespace, chosen: dict[str, list[Variant]], log_dir: Path
) -> int:
    arch = resolve_arch(args)
    start = time.perf_counter()
    deadline = None if args.time_budget is None else start + args.time_budget
    builder, specs = build_all(chosen, arch, args.jobs, deadline, log_dir)
    print(f"building {len(specs)} modules for {arch} with {args.jobs} jobs ...", flush=True)
    if not builder.wait(deadline):
        builder.stop("time budget exhausted")
    builder.thread.join(timeout=5)
    cuobjdump = find_cuobjdump()
    failed = spills = 0
    for spec in specs:
        outcome = builder.results.get(spec.name, BuildOutcome("skipped", error="not started"))
        print(f"{outcome.status:<8}{outcome.seconds:7.1f}s  {spec.name}")
        if outcome.status in ("failed", "skipped"):
            failed += 1
            if outcome.error:
                print("    " + outcome.error.replace("\n", "\n    "))
            continue
        if cuobjdump:
            for kernel, regs, stack, local in resource_usage(cuobjdump, outcome.path):
                spill = stack > 0 or local > 0
                spills += spill
                flag = "  SPILL" if spill else ""
                print(f"    REG {regs:>3}  STACK {stack:>4}  LOCAL {local:>4}  {kernel}{flag}")
    if not cuobjdump:
        print("(cuobjdump not found: registers/spills not listed)")
    print(
        f"\n{len(specs)} modules: {len(specs) - failed} built or cached, {failed} failed or "
        f"skipped; {spills} kernels with stack/local memory; {time.perf_counter() - start:.0f} s"
    )
    return 1 if failed or spills else 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.check_child is not None:
        return check_child(args.check_child)
    chosen = selected_variants(args)
    if args.list:
        print_variants(chosen)
        return 0
    log_dir = Path(tempfile.mkdtemp(prefix="tune_kernels_"))
    if args.build_only:
        from jit_kernel.compiler.arch import ArchError

        try:
            return run_build_only(args, chosen, log_dir)
        except ArchError as error:  # no --arch, no TVM_FFI_CUDA_ARCH_LIST and no GPU
            print(f"tune_kernels: {error}", file=sys.stderr)
            return 2
    if not torch.cuda.is_available():
        print("tune_kernels: needs a CUDA GPU (or --build-only)", file=sys.stderr)
        return 2

    budget = args.time_budget if args.time_budget is not None else DEFAULT_BUDGET_S
    start = time.perf_counter()
    deadline = start + budget

    def elapsed() -> str:
        return f"[{time.perf_counter() - start:6.1f}s]"

    arch = resolve_arch(args)
    builder, specs = build_all(chosen, arch, args.jobs, deadline, log_dir)
    device = torch.cuda.get_device_name()
    print(
        f"{elapsed()} device {device}; arch {arch}; budget {budget:.0f} s; "
        f"{len(specs)} modules building with {args.jobs} jobs",
        flush=True,
    )

    shapes = [s for family in chosen for s in family_shapes(family)]
    all_variants = {v.name: v for grid in chosen.values() for v in grid}
    core_estimate = sum(estimate_seconds(s) * (len(chosen[s.family]) + 2) for s in shapes if s.core)
    # Builds (and compiling the peers, meanwhile) may use what the checks (<= 30 s) and the
    # measurements of the core shapes will not need, and at least 30% of the budget.
    build_deadline = start + max(0.3 * budget, budget - core_estimate - 30.0 - RESERVE_S)
    build_deadline = min(build_deadline, deadline - 30.0)
    copies = copy_bandwidth(args.replay_iters)
    copy_gbps = max(copies.values())
    print(
        f"{elapsed()} copy 1 GiB (read + write): graph {copies['graph']:.0f} GB/s, "
        f"eager loop {copies['loop']:.0f} GB/s; reference {copy_gbps:.0f} GB/s",
        flush=True,
    )

    # Compile the peers while the modules build (each first call compiles for its shape).
    peers = Peers(not args.no_compile, not args.no_flashinfer)
    peer_fns: dict[str, dict[str, Callable[..., Any] | str]] = {}
    for shape in sorted(shapes, key=lambda s: not s.core):  # core shapes first
        fns = peers.for_shape(shape)
        if time.perf_counter() > build_deadline:
            late = "not compiled within the time budget"
            fns = {p: (f if isinstance(f, str) else late) for p, f in fns.items()}
        else:
            inputs = make_inputs(shape)
            for peer, fn in list(fns.items()):
                if isinstance(fn, str):
                    continue
                try:
                    fn(*inputs)
                    torch.cuda.synchronize()
                except Exception as error:
                    fns[peer] = short_error(error, 160)
                    torch.cuda.synchronize()
            del inputs
            torch.cuda.empty_cache()
        peer_fns[shape.key] = fns
    print(f"{elapsed()} peers ready; builds: {builder.progress()}", flush=True)

    if not builder.wait(build_deadline):
        print(f"{elapsed()} build deadline: stopping ({builder.progress()})", flush=True)
        builder.stop("build did not finish within the time budget")
    builder.thread.join(timeout=10)
    build_results = dict(builder.results)
    skipped_builds = [n for n, o in build_results.items() if o.status in ("failed", "skipped")]
    print(
        f"{elapsed()} builds done: {len(build_results) - len(skipped_builds)} of {len(specs)} "
        "modules available",
        flush=True,
    )
    for name in skipped_builds:
        outcome = build_results[name]
        print(
            f"  {outcome.status.upper()} {name}: {outcome.error.splitlines()[-1] if outcome.error else ''}"
        )

    # Variants whose modules all built are checked (child processes), the rest are out.
    status: dict[str, str] = {}
    entries = []
    pdl = int(arch.split(".")[0]) >= 9
    for name, variant in all_variants.items():
        modules = variant_modules(variant, pdl)
        missing = [
            m.name
            for m in modules.values()
            if build_results.get(m.name, BuildOutcome("skipped")).status not in ("built", "cached")
        ]
        if missing:
            status[name] = (
                f"not built ({build_results.get(missing[0], BuildOutcome('skipped')).status})"
            )
            continue
        entries.append(
            {
                "name": name,
                "family": variant.family,
                "modules": {dt: spec.as_json() for dt, spec in modules.items()},
            }
        )
    check_deadline = min(time.perf_counter() + max(30.0, 0.15 * budget), deadline - RESERVE_S)
    checks = run_checks(entries, arch, check_deadline, log_dir)
    for name, result in checks.items():
        status[name] = (
            "ok"
            if result["status"] == "ok"
            else f"WRONG ({result['status']}): {result['error'].splitlines()[0] if result['error'] else ''}"
        )
    print(
        f"{elapsed()} checks: "
        + ", ".join(f"{n} {'ok' if s == 'ok' else 'WRONG/skipped'}" for n, s in status.items()),
        flush=True,
    )
    for name, text in status.items():
        if text != "ok":
            print(f"  {name}: {text}")

    candidates = {
        family: [v for v in grid if status.get(v.name) == "ok"] for family, grid in chosen.items()
    }
    available = deadline - time.perf_counter() - RESERVE_S
    timed_shapes, planned, notes = plan_measurements(shapes, candidates, available)
    for note in notes:
        print(f"  {note}")

    modules: dict[str, Any] = {}
    rows: list[Row] = []
    context_lost = False

    def usable() -> bool:
        """False once a CUDA error has poisoned this process's context."""
        try:
            torch.cuda.synchronize()
            return True
        except Exception:
            return False

    for shape in timed_shapes:
        if context_lost:
            break
        row = Row(shape.family, shape.kernel, shape.label, shape.bytes_moved)
        rows.append(row)
        variants = planned.get(shape.family, [])
        inputs = make_inputs(shape)
        rotate = rotate_args(shape)
        kernel_s: float | None = None
        for peer, fn in peer_fns[shape.key].items():
            if isinstance(fn, str):
                row.peers_na[peer] = fn
                continue
            if time.perf_counter() + estimate_seconds(shape, kernel_s) > deadline - RESERVE_S:
                row.peers_na[peer] = "skipped: time budget"
                continue
            try:
                seconds = time_graph(
                    fn, inputs, rotate, replay_iters=args.replay_iters, warmup_iters=10
                )
                row.peers_us[peer] = seconds * 1e6
                kernel_s = max(kernel_s or 0.0, seconds)
            except Exception as error:
                row.peers_na[peer] = short_error(error, 160)
                if not usable():
                    context_lost = True
                    break
        for variant in variants:
            if context_lost:
                break
            if time.perf_counter() + estimate_seconds(shape, kernel_s) > deadline - RESERVE_S:
                row.ours_na[variant.name] = "skipped: time budget"
                continue
            spec = variant_modules(variant, pdl)[SHORT_DTYPE[shape.dtype]]
            try:
                if spec.name not in modules:
                    modules[spec.name] = load_module(spec, arch)
                export_name = EXPORT_NAMES.get(shape.kernel, shape.kernel)
                export = getattr(modules[spec.name], f"{export_name}_{SHORT_DTYPE[shape.dtype]}")
                fn = ours_callable(shape, export)
                seconds = time_graph(
                    fn, inputs, rotate, replay_iters=args.replay_iters, warmup_iters=10
                )
                check_timed_shape(shape, fn, inputs)
                row.ours_us[variant.name] = seconds * 1e6
                kernel_s = kernel_s or seconds
            except AssertionError as error:
                row.ours_na[variant.name] = f"WRONG: {str(error).splitlines()[0][:150]}"
                status[variant.name] = f"WRONG on {shape.key}"
            except Exception as error:
                row.ours_na[variant.name] = f"ERROR: {short_error(error, 160)}"
                status[variant.name] = f"ERROR on {shape.key}"
                context_lost = not usable()
        if context_lost:
            print(
                f"{elapsed()} CUDA context lost on {shape.key}; stopping the measurements "
                "(the report covers what was timed before)",
                flush=True,
            )
            break
        del inputs
        torch.cuda.empty_cache()
        print(f"{elapsed()} timed {shape.key}", flush=True)

    # A variant found wrong on any shape is out everywhere.
    for row in rows:
        for name in list(row.ours_us):
            if status.get(name) != "ok":
                row.ours_na[name] = status[name]
                del row.ours_us[name]

    print(
        f"\ndevice: {device}; copy reference {copy_gbps:.0f} GB/s; x = peer time / ours "
        f"(targets: >= {BW_TARGET:.0%} of copy, >= {PEER_NOISE:.2f}x every peer)"
    )
    for row in rows:
        print_row(row, {n: v for n, v in all_variants.items() if v.family == row.family}, copy_gbps)

    best: dict[str, Any] = {}
    per_kernel: dict[str, Any] = {}
    print()
    for family, grid in chosen.items():
        for kernel in sorted({r.kernel for r in rows if r.family == family}):
            choice = choose_best(family, rows, grid, copy_gbps, kernel)
            if choice and family in ("activation", "norm"):  # families of several kernels
                per_kernel[kernel] = choice
                print(
                    f"best for {kernel} alone: {choice['variant']} ({choice['label']}): "
                    f"min {choice['min_ratio_vs_best_peer']:.3f}x vs the faster peer, "
                    f"min {choice['min_copy_fraction']:.1%} of copy"
                )
    for family, grid in chosen.items():
        choice = choose_best(family, rows, grid, copy_gbps)
        if choice is None:
            print(f"BEST {family}: none (no variant was timed on every shape)")
            continue
        best[family] = choice
        verdict = "meets the targets" if choice["meets_targets"] else "MISSES the targets"
        print(
            f"BEST {family}: {' '.join(choice['flags'])}  # {choice['variant']}: "
            f"min {choice['min_ratio_vs_best_peer']:.3f}x vs the faster peer, min "
            f"{choice['min_copy_fraction']:.1%} of copy over {len(choice['shapes'])} shapes; {verdict}"
        )
    print(f"\n{elapsed()} done")

    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "device": device,
                    "arch": arch,
                    "budget_s": budget,
                    "elapsed_s": time.perf_counter() - start,
                    "copy_gbps": copy_gbps,
                    "copy_gbps_by_timer": copies,
                    "variants": [
                        {
                            **asdict(v),
                            "flags": v.flags(),
                            "label": v.label(),
                            "status": status.get(v.name, ""),
                        }
                        for v in all_variants.values()
                    ],
                    "builds": {name: asdict(o) for name, o in build_results.items()},
                    "checks": checks,
                    "notes": notes,
                    "rows": [asdict(r) for r in rows],
                    "best": best,
                    "best_per_kernel": per_kernel,
                },
                indent=2,
                default=str,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
