"""Planning the measurements within the budget, and choosing and printing the best variants."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from tools.tune.shapes import Shape
from tools.tune.variants import Variant

GB = 1e9
BW_TARGET = 0.90
PEER_NOISE = 0.98
CALLS_PER_MEASUREMENT = 1110  # do_bench graph mode: 10 warm-up + 1 warm replay + 10 replays of 100
MEASUREMENT_OVERHEAD_S = 0.2  # capture, clones, synchronisation


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
        "config": variant.config_type(),
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
