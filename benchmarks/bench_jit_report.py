"""The rows of ``benchmarks/bench_jit_kernels.py``, its targets and its tables (no GPU needed).

Targets (``--check``):

* memory-bound rows: >= 90% of the copy bandwidth and no slower than any peer that ran, torch
  eager and upstream SGLang included (2% noise allowed);
* decode rows: no slower than the best of upstream SGLang, FlashInfer and torch.compile that
  ran (2% noise allowed; torch eager is shown but not a target);
* every row: a built peer (upstream SGLang) that was asked for must build and compute the
  right result, else the row fails (a mis-wired peer is never reported as fast);
* host time per call: every wrapper <= 1.05x the bare call and below torch eager;
* warm load < 30 ms (when measured).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

BW_TARGET = 0.90
PEER_NOISE = 0.98  # "no slower than a peer" allows 2% noise
DECODE_PEERS = ("upstream", "flashinfer", "torch_compile")
OVERHEAD_TARGET = 1.05
WARM_LOAD_TARGET_MS = 30.0


@dataclass
class BandwidthRow:
    """One kernel at one size: microseconds per call of ours and each peer.

    ``copy_ratio`` is None where the copy was not measured (``--decode-only``). ``peer_errors``:
    built peers that failed to build, to load or their check (each also N/A in ``peers_na``).
    ``rounds_us``: where timed in interleaved rounds (decode rows), every round's figure.
    """

    kernel: str
    shape: str
    bytes_moved: int
    ours_us: float
    ours_gbps: float
    copy_ratio: float | None
    decode: bool = False
    peers_us: dict[str, float] = field(default_factory=dict)
    peers_na: dict[str, str] = field(default_factory=dict)
    peer_errors: dict[str, str] = field(default_factory=dict)
    rounds_us: dict[str, list[float]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.kernel} {self.shape}"


@dataclass
class OverheadRow:
    """Host microseconds per call (medians): wrapper, bare tvm-ffi call, torch eager; and the
    medians of the per-round ratios wrapper / bare and wrapper / torch (paired within a round,
    so that drift of the host's speed between rounds cancels)."""

    name: str
    wrapper_us: float
    bare_us: float
    torch_us: float
    vs_bare: float
    vs_torch: float


def best_decode_peer(row: BandwidthRow) -> tuple[str, float] | None:
    """The fastest of upstream, FlashInfer and torch.compile that ran on ``row``, if any."""
    ran = [(row.peers_us[name], name) for name in DECODE_PEERS if name in row.peers_us]
    if not ran:
        return None
    us, name = min(ran)
    return name, us


def row_failures(row: BandwidthRow) -> list[str]:
    """What ``row`` misses of its targets (decode or memory-bound), and its broken peers."""
    failures = [f"{row.label}: peer {name} failed: {why}" for name, why in row.peer_errors.items()]
    if row.decode:
        best = best_decode_peer(row)
        if best is not None and best[1] / row.ours_us < PEER_NOISE:
            failures.append(
                f"{row.label} (decode): {row.ours_us:.2f} us, slower than {best[0]} "
                f"({best[1]:.2f} us, {best[1] / row.ours_us:.2f}x)"
            )
        return failures
    if row.copy_ratio is not None and row.copy_ratio < BW_TARGET:
        failures.append(f"{row.label}: {row.copy_ratio:.1%} of copy bandwidth < {BW_TARGET:.0%}")
    for name, us in row.peers_us.items():
        if us / row.ours_us < PEER_NOISE:
            failures.append(f"{row.label}: slower than {name} ({us / row.ours_us:.2f}x)")
    return failures


def overhead_failures(row: OverheadRow) -> list[str]:
    failures = []
    if row.vs_bare > OVERHEAD_TARGET:
        failures.append(
            f"host overhead {row.name}: wrapper {row.vs_bare:.3f}x the bare call "
            f"> {OVERHEAD_TARGET:.2f}x"
        )
    if row.vs_torch >= 1.0:
        failures.append(
            f"host overhead {row.name}: wrapper {row.vs_torch:.3f}x torch eager (not below it)"
        )
    return failures


def check_targets(
    rows: Sequence[BandwidthRow], overheads: Sequence[OverheadRow], load_ms: float | None
) -> list[str]:
    """Every missed target, one line each (empty: all met)."""
    failures = [failure for row in rows for failure in row_failures(row)]
    failures += [failure for row in overheads for failure in overhead_failures(row)]
    if load_ms is not None and load_ms >= WARM_LOAD_TARGET_MS:
        failures.append(f"warm load {load_ms:.1f} ms >= {WARM_LOAD_TARGET_MS} ms")
    return failures


def peer_names(rows: Sequence[BandwidthRow]) -> list[str]:
    """Every peer of ``rows``, in first-seen order (the tables' columns)."""
    names: list[str] = []
    for row in rows:
        for name in [*row.peers_us, *row.peers_na]:
            if name not in names:
                names.append(name)
    return names


def _peer_cells(row: BandwidthRow, peers: Sequence[str], digits: int) -> str:
    cells = ""
    for name in peers:
        if name in row.peers_us:
            us = row.peers_us[name]
            cells += f"{us:>18.{digits}f}{us / row.ours_us:>5.2f}x"
        else:
            cells += f"{'N/A':>18}{'':>6}"
    return cells


def _na_reasons(rows: Sequence[BandwidthRow]) -> list[str]:
    reasons = {(name, why) for row in rows for name, why in row.peers_na.items()}
    return [f"  N/A {name}: {why}" for name, why in sorted(reasons)]


def bandwidth_table(rows: Sequence[BandwidthRow]) -> list[str]:
    """The memory-bound table: ours (us, GB/s, share of the copy), each peer (us, peer/ours)."""
    peers = peer_names(rows)
    header = f"{'kernel':<20}{'shape':<24}{'ours us':>9}{'GB/s':>7}{'/copy':>7}"
    header += "".join(f"{name + ' us':>18}{'x':>6}" for name in peers)
    lines = [header, "-" * len(header)]
    for row in rows:
        share = f"{row.copy_ratio:>7.1%}" if row.copy_ratio is not None else f"{'':>7}"
        line = f"{row.kernel:<20}{row.shape:<24}{row.ours_us:>9.1f}{row.ours_gbps:>7.0f}{share}"
        lines.append(line + _peer_cells(row, peers, 1))
    return lines + _na_reasons(rows)


def decode_table(rows: Sequence[BandwidthRow], floor_us: dict[str, float]) -> list[str]:
    """The decode table: ours (us, us above the launch floor), each peer (us, peer/ours)."""
    floor = min(floor_us.values()) if floor_us else None
    lines = [
        "decode rows (latency; target: ours <= the best of "
        f"{', '.join(DECODE_PEERS)}, {1 - PEER_NOISE:.0%} noise; torch eager not a target)",
        "launch floor: "
        + (", ".join(f"{label} {us:.2f} us" for label, us in floor_us.items()) or "not measured"),
    ]
    peers = peer_names(rows)
    header = f"{'kernel':<20}{'shape':<24}{'ours us':>9}{'+floor':>8}"
    header += "".join(f"{name + ' us':>18}{'x':>6}" for name in peers)
    lines += [header, "-" * len(header)]
    for row in rows:
        above = f"{row.ours_us - floor:>8.2f}" if floor is not None else f"{'':>8}"
        line = f"{row.kernel:<20}{row.shape:<24}{row.ours_us:>9.2f}{above}"
        lines.append(line + _peer_cells(row, peers, 2))
    return lines + _na_reasons(rows)


def overhead_table(rows: Sequence[OverheadRow], rounds: int) -> list[str]:
    """The host-overhead table: wrapper, bare call and torch eager, and the two ratios."""
    lines = [
        f"host time per call (eager loop of 200 written-out calls; medians of {rounds} rounds, "
        "order rotated; ratios: medians of the per-round ratios):",
        f"  {'case':<34}{'wrapper us':>11}{'bare us':>9}{'torch us':>10}{'vs bare':>9}"
        f"{'vs torch':>10}",
    ]
    for row in rows:
        lines.append(
            f"  {row.name:<34}{row.wrapper_us:>11.2f}{row.bare_us:>9.2f}{row.torch_us:>10.2f}"
            f"{row.vs_bare:>8.3f}x{row.vs_torch:>9.3f}x"
        )
    return lines
