"""Benchmark of the custom all-reduce against NCCL, run on every rank of a process group.

:func:`bench_worker` is the worker function (``run_on_gpus(world_size, bench_worker, config)``);
:func:`run_benchmark` spawns the ranks for each world size and combines their rows;
:func:`format_tables` prints them. ``benchmarks/bench_all_reduce.py`` (full sweep, CLI) and
``registered/jit/benchmark/bench_custom_all_reduce.py`` (short sweep, CI) use them.

How a cell is timed: the operation (ours with ``algo`` one_shot / two_shot / auto into a
preallocated ``out``, or ``dist.all_reduce`` in place) is called ``calls`` times back to back,
either captured in one CUDA graph and replayed (``graph``) or launched eagerly (``eager``,
host launch cost included), between two CUDA events; the time per call is the elapsed time /
``calls``. Before each timed repetition the ranks meet at a gloo barrier and then at a tiny
custom all-reduce, so every rank starts within a microsecond or two of the others and no rank
times its wait for a late peer. The cell is the median over ``repeats`` repetitions on each
rank, then the maximum over ranks. Algorithm bandwidth = message bytes / time per call (1e9
bytes/s = GB/s). Before timing, each (dtype, size) is checked once against NCCL.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch

from jit_kernel.all_reduce import CustomAllReduce

__all__ = [
    "IMPLS",
    "MODES",
    "BenchConfig",
    "bench_worker",
    "combine_rows",
    "default_sizes",
    "format_tables",
    "run_benchmark",
]

IMPLS = ("one_shot", "two_shot", "auto", "nccl")
MODES = ("graph", "eager")
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def default_sizes(min_bytes: int = 1024, max_bytes: int = 8 * 1024 * 1024) -> tuple[int, ...]:
    """Powers of two from ``min_bytes`` to ``max_bytes`` (message sizes in bytes)."""
    sizes = []
    size = min_bytes
    while size <= max_bytes:
        sizes.append(size)
        size *= 2
    return tuple(sizes)


@dataclass(frozen=True)
class BenchConfig:
    """One sweep: message ``sizes`` in bytes, dtypes (names), implementations, timing modes."""

    sizes: tuple[int, ...] = default_sizes()
    dtypes: tuple[str, ...] = ("bfloat16", "float16", "float32")
    impls: tuple[str, ...] = IMPLS
    modes: tuple[str, ...] = MODES
    calls: int = 50
    repeats: int = 15
    warmup: int = 5
    one_shot_max_bytes: int | None = None
    verify: bool = True


def _format_bytes(size: int) -> str:
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


class _Timer:
    def __init__(self, car: CustomAllReduce, config: BenchConfig) -> None:
        import torch.distributed as dist

        self.dist = dist
        self.car = car
        self.config = config
        self.cpu_group = dist.new_group(backend="gloo")
        device = car.device
        self.align_in = torch.zeros(8, dtype=torch.float32, device=device)
        self.align_out = torch.empty_like(self.align_in)

    def align(self) -> None:
        """Host barrier, then a tiny all-reduce: every rank leaves it together."""
        torch.cuda.synchronize()
        self.dist.barrier(group=self.cpu_group)
        self.car.all_reduce(self.align_in, out=self.align_out, algo="one_shot")

    def time(self, fn: Callable[[], Any], mode: str) -> list[float]:
        """Microseconds per call, one value per repetition."""
        config = self.config
        for _ in range(config.warmup):
            fn()
        torch.cuda.synchronize()
        graph = None
        if mode == "graph":
            graph = torch.cuda.CUDAGraph()
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.graph(graph, stream=stream, capture_error_mode="thread_local"):
                for _ in range(config.calls):
                    fn()
            self.align()
            graph.replay()  # warm replay
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(config.repeats):
            self.align()
            start.record()
            if graph is not None:
                graph.replay()
            else:
                for _ in range(config.calls):
                    fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3 / config.calls)
        torch.cuda.synchronize()
        del graph
        return times


def _verify(car: CustomAllReduce, x: torch.Tensor) -> str:
    """One call of each algorithm against NCCL. Both may round differently (NCCL after each hop
    in the tensor's dtype), so the bound is (W + 1) u sum_q |x_q| per element (u: the dtype's
    unit roundoff, 2^-22 for fp32 as margin); the tests check against the exact sum."""
    import torch.distributed as dist

    world = dist.get_world_size()
    expected = x.clone()
    dist.all_reduce(expected)
    magnitude = x.float().abs()
    dist.all_reduce(magnitude)
    unit = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}.get(x.dtype, 2.0**-22)
    bound = (world + 1) * unit * magnitude + 1e-6
    problems = []
    for algo in ("one_shot", "two_shot", "auto"):
        got = car.all_reduce(x, algo=algo)
        error = (got.float() - expected.float()).abs()
        bad = int((~(error <= bound)).sum())
        if bad:
            problems.append(f"{algo}: {bad} elements off NCCL, max error {error.max().item():.3g}")
    return "; ".join(problems) or "ok"


def _operations(
    car: CustomAllReduce, x: torch.Tensor, out: torch.Tensor, y: torch.Tensor
) -> dict[str, Callable[[], Any]]:
    """The timed call of each implementation (ours out of place, NCCL in place on ``y``)."""
    import torch.distributed as dist

    return {
        "one_shot": lambda: car.all_reduce(x, out=out, algo="one_shot"),
        "two_shot": lambda: car.all_reduce(x, out=out, algo="two_shot"),
        "auto": lambda: car.all_reduce(x, out=out, algo="auto"),
        "nccl": lambda: dist.all_reduce(y),
    }


def bench_worker(config: BenchConfig) -> list[dict[str, Any]]:
    """Run ``config`` on this rank; one row per (dtype, size, impl, mode)."""
    import torch.distributed as dist

    rank = dist.get_rank()
    world = dist.get_world_size()
    device = torch.device("cuda", torch.cuda.current_device())
    car = CustomAllReduce(
        max_bytes=max(max(config.sizes), 1024), one_shot_max_bytes=config.one_shot_max_bytes
    )
    timer = _Timer(car, config)
    rows = []
    try:
        for dtype_name in config.dtypes:
            dtype = DTYPES[dtype_name]
            for size in config.sizes:
                n = size // dtype.itemsize
                if n == 0:
                    continue
                x = torch.randn(n, dtype=dtype, device=device)
                out = torch.empty_like(x)
                y = x.clone()  # NCCL reduces in place: its own buffer
                check = _verify(car, x) if config.verify else "not checked"
                calls = _operations(car, x, out, y)
                for impl in config.impls:
                    for mode in config.modes:
                        try:
                            times = timer.time(calls[impl], mode)
                            error = ""
                        except Exception as exc:  # e.g. a capture the backend refuses
                            times, error = [float("nan")], f"{type(exc).__name__}: {exc}"
                        nbytes = n * dtype.itemsize
                        rows.append(
                            {
                                "world_size": world,
                                "rank": rank,
                                "dtype": dtype_name,
                                "bytes": nbytes,
                                "impl": impl,
                                "mode": mode,
                                "us": statistics.median(times),
                                "min_us": min(times),
                                "max_us": max(times),
                                "check": check if not error else f"{check}; timing failed: {error}",
                                "auto_algo": "one_shot"
                                if nbytes <= car.one_shot_max_bytes
                                else "two_shot",
                            }
                        )
    finally:
        car.close()
    return rows


def combine_rows(per_rank: Sequence[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per cell: the median per call is the maximum over ranks (``us``), with the
    fastest rank's median (``us_fastest_rank``), algorithm bandwidth (GB/s) and every rank's
    check."""
    cells: dict[tuple[Any, ...], dict[str, Any]] = {}
    for rows in per_rank:
        for row in rows:
            key = (row["world_size"], row["dtype"], row["bytes"], row["impl"], row["mode"])
            cell = cells.get(key)
            if cell is None:
                cell = cells[key] = {
                    k: v for k, v in row.items() if k not in ("rank", "min_us", "max_us")
                }
                cell["us_fastest_rank"] = row["us"]
                cell["checks"] = {}
            cell["us"] = max(cell["us"], row["us"])
            cell["us_fastest_rank"] = min(cell["us_fastest_rank"], row["us"])
            cell["checks"][row["rank"]] = row["check"]
    combined = []
    for cell in cells.values():
        bad = {rank: check for rank, check in cell.pop("checks").items() if check != "ok"}
        cell["check"] = (
            "ok" if not bad else "; ".join(f"rank {r}: {c}" for r, c in sorted(bad.items()))
        )
        cell["algbw_gbps"] = cell["bytes"] / cell["us"] / 1e3
        combined.append(cell)
    return combined


def format_tables(rows: Sequence[dict[str, Any]]) -> str:
    """One table per (world size, mode, dtype): sizes down, implementations across, the
    speed-up of ours (auto) over NCCL, and the algorithm bandwidth."""
    lines = []
    index = {(r["world_size"], r["mode"], r["dtype"], r["bytes"], r["impl"]): r for r in rows}
    groups = sorted({(r["world_size"], r["mode"], r["dtype"]) for r in rows}, key=str)
    impls = [impl for impl in IMPLS if any(r["impl"] == impl for r in rows)]
    for world, mode, dtype in groups:
        sizes = sorted(
            {
                r["bytes"]
                for r in rows
                if (r["world_size"], r["mode"], r["dtype"]) == (world, mode, dtype)
            }
        )
        header = f"{'size':>9} | " + " ".join(f"{impl + '(us)':>13}" for impl in impls)
        header += f" | {'nccl/auto':>9} | {'auto(GB/s)':>10} {'nccl(GB/s)':>10} | auto uses"
        rule = "=" * len(header)
        lines += [
            f"world_size={world} mode={mode} dtype={dtype}: median us per call (max over ranks); "
            "nccl/auto > 1 means ours is faster; GB/s = message bytes / time (1e9)",
            rule,
            header,
            "-" * len(header),
        ]
        notes = []
        for size in sizes:
            cells = {impl: index.get((world, mode, dtype, size, impl)) for impl in impls}
            line = f"{_format_bytes(size):>9} | " + " ".join(
                f"{cells[impl]['us']:>13.2f}" if cells[impl] else f"{'-':>13}" for impl in impls
            )
            auto, nccl = cells.get("auto"), cells.get("nccl")
            ratio = f"{nccl['us'] / auto['us']:>9.2f}" if auto and nccl else f"{'-':>9}"
            auto_bw = f"{auto['algbw_gbps']:>10.2f}" if auto else f"{'-':>10}"
            nccl_bw = f"{nccl['algbw_gbps']:>10.2f}" if nccl else f"{'-':>10}"
            used = auto["auto_algo"] if auto else "-"
            lines.append(f"{line} | {ratio} | {auto_bw} {nccl_bw} | {used}")
            for cell in cells.values():
                if cell and cell["check"] != "ok":
                    notes.append(f"CHECK FAILED [{_format_bytes(size)}]: {cell['check']}")
        lines.append(rule)
        lines += sorted(set(notes))
        lines.append("")
    return "\n".join(lines)


def run_benchmark(
    world_sizes: Sequence[int], config: BenchConfig, *, timeout: float = 1200.0
) -> tuple[list[dict[str, Any]], list[str]]:
    """Spawn the ranks for each world size; returns (combined rows, skip notes)."""
    from jit_kernel.all_reduce import p2p_problems, precompile_custom_all_reduce
    from jit_kernel.distributed.launch import run_on_gpus

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    rows: list[dict[str, Any]] = []
    notes = []
    precompiled = False
    for world in world_sizes:
        if world > count:
            notes.append(f"world_size={world}: skipped, only {count} GPU(s) visible")
            continue
        problems = p2p_problems(list(range(world)))
        if problems:
            notes.append(f"world_size={world}: skipped, {'; '.join(problems)}")
            continue
        if not precompiled:
            precompile_custom_all_reduce()
            precompiled = True
        per_rank = run_on_gpus(world, bench_worker, config, timeout=timeout)
        rows += combine_rows(per_rank)
    return rows, notes


def config_as_dict(config: BenchConfig) -> dict[str, Any]:
    """The config as JSON-friendly values."""
    return asdict(config)
