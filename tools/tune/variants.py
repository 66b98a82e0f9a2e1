"""The variant table (``variants.toml``, data) and the JIT modules a variant is built as.

A variant is a Config type of its family's header (``ActConfig<256, 2>``, ...), instantiated
through ``load_jit``'s ``cuda_wrappers``: the library's own entry points with the Config as their
last template argument, exported under names that carry the dtype (``silu_and_mul_bf16``).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

TABLE = Path(__file__).resolve().parent / "variants.toml"
FAMILIES = ("activation", "norm", "qknorm", "rope", "store_cache")
ACT_OPS = ("silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul")
EXPORT_NAMES = {"qknorm": "fused_inplace_qknorm", "rope": "apply_rope_inplace"}  # kernel -> export
SHORT_DTYPE = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
CPP_DTYPE = {torch.bfloat16: "bf16_t", torch.float16: "fp16_t", torch.float32: "fp32_t"}


@dataclass(frozen=True)
class Family:
    """A family's Config template and its parameters: (label, C++ name, shipped default)."""

    name: str
    config: str
    params: tuple[tuple[str, str, int], ...]


@dataclass(frozen=True)
class Variant:
    """One point of a family's grid: the parameters that differ from the shipped ones, and why."""

    family: Family
    name: str
    changes: tuple[tuple[str, int], ...]  # (label, value)
    why: str

    def values(self) -> list[int]:
        """Every parameter's value, in the template's order."""
        changed = dict(self.changes)
        return [changed.get(label, default) for label, _, default in self.family.params]

    def config_type(self) -> str:
        """E.g. ``ActConfig<256, 2>`` (every argument explicit)."""
        return f"{self.family.config}<{', '.join(map(str, self.values()))}>"

    def label(self) -> str:
        """E.g. ``B256 U2``."""
        pairs = zip(self.family.params, self.values(), strict=True)
        return " ".join(f"{label}{value}" for (label, _, _), value in pairs)


def load_table(path: Path = TABLE) -> dict[str, list[Variant]]:
    """Family name -> its variants, the shipped configuration first; errors name the entry."""
    raw = tomllib.loads(path.read_text())
    table: dict[str, list[Variant]] = {}
    for name in FAMILIES:
        entry = raw[name]
        family = Family(
            name, entry["config"], tuple((p[0], p[1], int(p[2])) for p in entry["params"])
        )
        labels = {label for label, _, _ in family.params}
        grid = []
        for variant_name, changes, why in entry["variants"]:
            pairs = tuple((item[0], int(item[1:])) for item in changes.split())
            unknown = [label for label, _ in pairs if label not in labels]
            if unknown:
                raise ValueError(
                    f"{path.name}: [{name}] {variant_name}: unknown label(s) {unknown}"
                )
            grid.append(Variant(family, variant_name, pairs, why))
        if grid[0].changes:
            raise ValueError(f"{path.name}: [{name}] the first variant must be the shipped one")
        table[name] = grid
    return table


VARIANTS = load_table()


@dataclass(frozen=True)
class ModuleSpec:
    """The ``load_jit`` arguments of one module (the same in the build child and here)."""

    markers: tuple[str, ...]
    cuda_files: tuple[str, ...]
    wrappers: tuple[tuple[str, str], ...]

    @property
    def name(self) -> str:
        from jit_kernel.compiler.plan import module_name

        return module_name(self.markers)

    def as_json(self) -> dict[str, Any]:
        return {
            "markers": list(self.markers),
            "cuda_files": list(self.cuda_files),
            "wrappers": [list(w) for w in self.wrappers],
        }


def variant_module(variant: Variant, pdl: bool) -> ModuleSpec:
    """The module of ``variant``: every dtype's exports of its family, named with the dtype."""
    flag = "true" if pdl else "false"
    config = variant.config_type()
    family = variant.family.name
    if family == "activation":
        files: tuple[str, ...] = ("elementwise/activation.cuh",)
        wrappers = tuple(
            (f"{op}_{short}", f"{op}<{CPP_DTYPE[dt]}, {flag}, {config}>")
            for dt, short in SHORT_DTYPE.items()
            for op in ACT_OPS
        )
    elif family == "norm":
        files = ("elementwise/rmsnorm.cuh", "elementwise/fused_add_rmsnorm.cuh")
        wrappers = (
            ("rmsnorm_bf16", f"rmsnorm<bf16_t, {flag}, {config}>"),
            ("fused_add_rmsnorm_bf16", f"fused_add_rmsnorm<bf16_t, {flag}, {config}>"),
        )
    elif family == "qknorm":
        files = ("elementwise/qknorm.cuh",)
        wrappers = tuple(
            (
                f"fused_inplace_qknorm_{SHORT_DTYPE[dt]}",
                f"fused_inplace_qknorm<{CPP_DTYPE[dt]}, {flag}, {config}>",
            )
            for dt in (torch.bfloat16, torch.float16)
        )
    elif family == "rope":
        files = ("elementwise/rope.cuh",)
        wrappers = tuple(
            (
                f"apply_rope_inplace_{short}",
                f"apply_rope_inplace<{CPP_DTYPE[dt]}, {flag}, {config}>",
            )
            for dt, short in SHORT_DTYPE.items()
        )
    else:
        files = ("elementwise/store_cache.cuh",)
        wrappers = (("store_cache_bf16", f"store_cache<{flag}, {config}>"),)
    markers = (f"tune_{family}", *variant.label().split())
    return ModuleSpec(markers, files, wrappers)


def load_module(spec: ModuleSpec, arch: str) -> Any:
    """The built module (warm path: the child built it into the same cache)."""
    from jit_kernel.compiler import load_jit, override_arch

    with override_arch(arch):
        return load_jit(
            *spec.markers,
            cuda_files=list(spec.cuda_files),
            cuda_wrappers=[tuple(w) for w in spec.wrappers],
        )
