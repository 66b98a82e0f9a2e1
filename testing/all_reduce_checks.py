"""Correctness checks of the custom all-reduce, executed on every rank of a process group.

:func:`run_checks` is the worker function: ``run_on_gpus(world_size, run_checks, plan)``
(``registered/jit/test_custom_all_reduce.py``), ``python -m testing.all_reduce_selftest``
and ``verification/memcheck_all_reduce.py`` all run it. Each rank executes the same sequence of
collective calls and returns a list of :class:`CheckResult`; the caller asserts on them, so one
spawn of the ranks runs every check.

Inputs are deterministic per (seed, case, rank), so each rank regenerates every rank's input and
computes the exact sum in float64 itself. Tolerances, with u the unit roundoff of the dtype
(2^-11 float16, 2^-8 bfloat16, 0 float32: the kernel accumulates in fp32 and rounds once) and
S = sum over ranks of |x_q| per element:

* against the exact sum: |out - exact| <= u |exact| + 2 W 2^-24 S + 1e-7, i.e. the final
  rounding (half an ulp) plus the fp32 accumulation error of W terms (at most (W - 1) 2^-24 S,
  doubled for margin) plus an absolute slack below the fp16 subnormal step;
* against NCCL (``dist.all_reduce``), which may round after every hop of its ring/tree in the
  tensor's dtype (up to W - 1 roundings of partial sums, each at most u S) in another order:
  |out - nccl| <= u |exact| + W u S + 4 W 2^-24 S + 1e-6.

Every output is NaN-poisoned before the call (every element must be written) and sits between
guard regions (nothing outside it may be written); the input must come back unchanged; the
result must be bit-identical on every rank (SHA-1 of the bytes, gathered).
"""

from __future__ import annotations

import hashlib
import traceback
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from jit_kernel.all_reduce import (
    ALGORITHMS,
    DEFAULT_MAX_BYTES,
    MAX_BYTES_LIMIT,
    CustomAllReduce,
)

__all__ = ["GROUPS", "CheckPlan", "CheckResult", "run_checks", "size_grid"]

GROUPS = (
    "sizes-float16",
    "sizes-bfloat16",
    "sizes-float32",
    "in_place",
    "shapes",
    "empty",
    "repeat",
    "mixed",
    "graph",
    "second_communicator",
    "largest_communicator",
    "epoch",
    "bad_inputs",
    "close",
)
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
UNIT_ROUNDOFF = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8, torch.float32: 0.0}
PAD = 64  # guard elements on each side of an output (128..256 bytes: keeps 16-byte alignment)
SENTINEL = 7.0
THREADS = 512  # kThreads of the kernel: one block covers THREADS packs per pass
MAX_REPORTED = 5


@dataclass(frozen=True)
class CheckResult:
    """One check on one rank: ``group`` (a test), ``name`` (the case), ok, and what was seen."""

    group: str
    name: str
    rank: int
    ok: bool
    detail: str = ""

    def describe(self) -> str:
        return f"[rank {self.rank}] {self.group} / {self.name}: {self.detail}"


@dataclass(frozen=True)
class CheckPlan:
    """What :func:`run_checks` runs. ``full``: the nightly size grid. ``max_bytes`` and
    ``one_shot_max_bytes``: the communicator's. ``groups``: a subset of
    :data:`GROUPS` (default all). ``compare_nccl``: also compare with ``dist.all_reduce`` (needs
    the NCCL backend). ``skew``: delay some ranks' calls (``torch.cuda._sleep``) so fast ranks
    run ahead into the next call while slow ranks still read the previous one."""

    full: bool = False
    groups: tuple[str, ...] = GROUPS
    dtypes: tuple[str, ...] = ("float16", "bfloat16", "float32")
    max_bytes: int = DEFAULT_MAX_BYTES
    one_shot_max_bytes: int | None = None
    repeat_calls: int = 300
    graph_replays: int = 8
    compare_nccl: bool = True
    skew: bool = True
    seed: int = 20240611
    extra_sizes: tuple[int, ...] = field(default_factory=tuple)


def size_grid(
    dtype: torch.dtype, one_shot_max_bytes: int, max_bytes: int, world: int, full: bool
) -> list[int]:
    """Element counts to test for ``dtype``: 1, odd sizes, partial 16-byte packs, sizes around
    the one-shot/two-shot threshold, block and chunk boundaries, and max_bytes."""
    elem = torch.empty((), dtype=dtype).element_size()
    vec = 16 // elem
    threshold = one_shot_max_bytes // elem
    largest = max_bytes // elem
    block = THREADS * vec  # elements one block covers per pass
    sizes = {1, 3, vec - 1, vec, vec + 1, 1000, 4099, block * world + vec + 1}
    sizes |= {threshold - 1, threshold, threshold + 1, threshold + vec, 300_007}
    sizes |= {largest - 1, largest}
    if full:
        sizes |= {2**k for k in range(23)} | {2**k + 1 for k in range(1, 23)}
        sizes |= {3 * 2**k - 1 for k in range(1, 21)}
        sizes |= {block * c + d for c in (1, 2, world, 64, 64 * world + 1) for d in (-1, 0, vec)}
        sizes |= {vec * (world * c) + d for c in (1, 7, 513) for d in (-1, 0, 1)}
        sizes |= {threshold + d for d in (-vec - 1, 2 * vec, 1000)}
    return sorted(size for size in sizes if 1 <= size <= largest)


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.view(torch.int32 if tensor.element_size() == 4 else torch.int16)


class _Runner:
    """Per-rank state of one :func:`run_checks` run."""

    def __init__(self, plan: CheckPlan) -> None:
        import torch.distributed as dist

        self.dist = dist
        self.plan = plan
        self.rank = dist.get_rank()
        self.world = dist.get_world_size()
        self.device = torch.device("cuda", torch.cuda.current_device())
        self.results: list[CheckResult] = []
        self.car: CustomAllReduce | None = None

    # -- bookkeeping -----------------------------------------------------------------------

    def record(self, group: str, name: str, problems: list[str], detail: str = "ok") -> None:
        ok = not problems
        self.results.append(
            CheckResult(group, name, self.rank, ok, detail if ok else "; ".join(problems))
        )

    def gather(self, value: Any) -> list[Any]:
        gathered: list[Any] = [None] * self.world
        self.dist.all_gather_object(gathered, value)
        return gathered

    # -- data ------------------------------------------------------------------------------

    def seed_of(self, key: str, rank: int) -> int:
        return (zlib.crc32(key.encode()) * 131 + self.plan.seed * 17 + rank) % (2**63)

    def inputs(self, n: int, dtype: torch.dtype, key: str) -> list[torch.Tensor]:
        """Every rank's input for case ``key`` (the same tensors on every rank)."""
        tensors = []
        for rank in range(self.world):
            gen = torch.Generator(device=self.device)
            gen.manual_seed(self.seed_of(key, rank))
            values = torch.randn(n, generator=gen, device=self.device, dtype=torch.float32)
            tensors.append(values.to(dtype))
        return tensors

    @staticmethod
    def exact(inputs: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """The exact sum (float64) and the sum of magnitudes over ranks."""
        total = torch.zeros(inputs[0].shape, dtype=torch.float64, device=inputs[0].device)
        magnitude = torch.zeros_like(total)
        for tensor in inputs:
            total += tensor.double()
            magnitude += tensor.double().abs()
        return total, magnitude

    def guarded(self, n: int, dtype: torch.dtype, shape: tuple[int, ...] | None = None):
        """A NaN-poisoned output of n elements between SENTINEL guard regions."""
        base = torch.full((n + 2 * PAD,), SENTINEL, dtype=dtype, device=self.device)
        base[PAD : PAD + n] = float("nan")
        out = base[PAD : PAD + n]
        return base, (out.view(shape) if shape is not None else out)

    @staticmethod
    def guard_problems(base: torch.Tensor, n: int) -> list[str]:
        outside = torch.cat([base[:PAD], base[PAD + n :]])
        bad = (outside != SENTINEL).nonzero()
        if len(bad) == 0:
            return []
        return [f"wrote {len(bad)} element(s) outside out (guard regions of {PAD} elements)"]

    # -- comparisons -----------------------------------------------------------------------

    def compare(
        self, got: torch.Tensor, inputs: list[torch.Tensor], nccl: torch.Tensor | None = None
    ) -> list[str]:
        """Problems of ``got`` against the exact sum (and NCCL's result); [] when it matches."""
        dtype = got.dtype
        exact, magnitude = self.exact([x.reshape(-1) for x in inputs])
        got64 = got.reshape(-1).double()
        u = UNIT_ROUNDOFF[dtype]
        w = self.world
        problems = []
        bound = u * exact.abs() + 2 * w * 2.0**-24 * magnitude + 1e-7
        problems += self._outside("exact fp64 sum", got64, exact, bound, dtype)
        if nccl is not None:
            bound = u * exact.abs() + (w * u + 4 * w * 2.0**-24) * magnitude + 1e-6
            problems += self._outside(
                "NCCL all_reduce", got64, nccl.reshape(-1).double(), bound, dtype
            )
        return problems

    @staticmethod
    def _outside(
        what: str,
        got: torch.Tensor,
        expected: torch.Tensor,
        bound: torch.Tensor,
        dtype: torch.dtype,
    ) -> list[str]:
        error = (got - expected).abs()
        bad = ~(error <= bound)  # NaN (an element never written) counts as bad
        count = int(bad.sum())
        if count == 0:
            return []
        first = int(bad.nonzero()[0])
        excess = torch.where(bad, torch.nan_to_num(error, nan=float("inf")) - bound, -1.0)
        worst = int(excess.argmax())
        return [
            f"{count} of {got.numel()} elements differ from the {what} beyond the tolerance; "
            f"first bad index {first} (got {got[first].item():.6g}, expected "
            f"{expected[first].item():.6g}); worst index {worst} (got {got[worst].item():.6g}, "
            f"expected {expected[worst].item():.6g}, error {error[worst].item():.3g}, bound "
            f"{bound[worst].item():.3g}); dtype {str(dtype).replace('torch.', '')}, "
            f"max error {torch.nan_to_num(error, nan=float('inf')).max().item():.3g}"
        ]

    def identical_problems(self, out: torch.Tensor) -> list[str]:
        """Problems if ``out`` differs (bitwise) between ranks."""
        digest = hashlib.sha1(_bits(out.contiguous()).cpu().numpy().tobytes()).hexdigest()
        digests = self.gather(digest)
        if len(set(digests)) == 1:
            return []
        differing = [rank for rank, other in enumerate(digests) if other != digests[0]]
        return [f"result differs bitwise from rank 0's on ranks {differing}"]

    def nccl_sum(self, tensor: torch.Tensor) -> torch.Tensor | None:
        if not self.plan.compare_nccl:
            return None
        result = tensor.clone()
        self.dist.all_reduce(result)
        return result

    def skew(self, call: int) -> None:
        """Delay this rank on some calls (a different pattern per rank)."""
        if self.plan.skew and (call + self.rank) % 3 == 0:
            torch.cuda._sleep(4000 * (self.rank + 1))

    def checked_call(
        self,
        group: str,
        name: str,
        n: int,
        dtype: torch.dtype,
        algo: str = "auto",
        *,
        car: CustomAllReduce | None = None,
        shape: tuple[int, ...] | None = None,
        nccl: bool = True,
        identical: bool = True,
    ) -> None:
        """One guarded, poisoned call compared with the exact sum (and NCCL), recorded."""
        car = car or self.car
        inputs = self.inputs(n, dtype, f"{group}/{name}")
        mine = inputs[self.rank] if shape is None else inputs[self.rank].view(shape)
        before = mine.clone()
        base, out = self.guarded(n, dtype, shape)
        result = car.all_reduce(mine, out=out, algo=algo)
        reference = self.nccl_sum(mine) if nccl else None
        torch.cuda.synchronize()
        problems = [] if result is out else ["all_reduce did not return out"]
        problems += self.compare(out, inputs, reference)
        problems += self.guard_problems(base, n)
        if not torch.equal(_bits(mine), _bits(before)):
            problems.append("the input was modified")
        if identical:
            problems += self.identical_problems(out)
        self.record(group, name, problems)


def _past_threshold(car: CustomAllReduce, dtype: torch.dtype, extra: int) -> int:
    """Elements of ``dtype`` ``extra`` past the ``algo="auto"`` threshold (two-shot there), at
    most ``max_bytes``: with 2 GPUs the threshold is ``max_bytes`` itself, and this is the
    largest message (one-shot)."""
    elem = dtype.itemsize
    return min(car.one_shot_max_bytes // elem + extra, car.max_bytes // elem)


# ----------------------------------------------------------------------------------- groups


def _sizes(runner: _Runner, dtype_name: str) -> None:
    dtype = DTYPES[dtype_name]
    if dtype_name not in runner.plan.dtypes:
        runner.record(f"sizes-{dtype_name}", "not in plan", [], "skipped by the plan")
        return
    car = runner.car
    grid = size_grid(dtype, car.one_shot_max_bytes, car.max_bytes, runner.world, runner.plan.full)
    grid = sorted(
        set(grid) | {n for n in runner.plan.extra_sizes if n * dtype.itemsize <= car.max_bytes}
    )
    for n in grid:
        for algo in ALGORITHMS:
            runner.checked_call(f"sizes-{dtype_name}", f"numel={n} algo={algo}", n, dtype, algo)
    # Without out=: a new tensor of the input's shape.
    inputs = runner.inputs(4099, dtype, "sizes/new-out")
    result = car.all_reduce(inputs[runner.rank])
    torch.cuda.synchronize()
    problems = (
        []
        if result.shape == (4099,) and result.dtype == dtype
        else [f"got {result.shape} {result.dtype}"]
    )
    problems += runner.compare(result, inputs)
    runner.record(f"sizes-{dtype_name}", "numel=4099 without out=", problems)


def _in_place(runner: _Runner) -> None:
    for dtype in (torch.bfloat16, torch.float32):
        for n, algo in (
            (1, "auto"),
            (4099, "one_shot"),
            (4099, "two_shot"),
            (_past_threshold(runner.car, dtype, 9), "auto"),
        ):
            inputs = runner.inputs(n, dtype, f"in_place/{dtype}/{n}/{algo}")
            x = inputs[runner.rank].clone()
            result = runner.car.all_reduce(x, out=x, algo=algo)
            torch.cuda.synchronize()
            problems = [] if result is x else ["did not return input"]
            problems += runner.compare(x, inputs)
            problems += runner.identical_problems(x)
            runner.record("in_place", f"{str(dtype)[6:]} numel={n} algo={algo}", problems)


def _shapes(runner: _Runner) -> None:
    for shape, dtype in (
        ((3, 5, 7), torch.float16),
        ((2, 4096), torch.bfloat16),
        ((), torch.float32),
        ((1, 1, 9), torch.bfloat16),
    ):
        n = 1
        for dim in shape:
            n *= dim
        runner.checked_call("shapes", f"shape={shape} {str(dtype)[6:]}", n, dtype, shape=shape)


def _empty(runner: _Runner) -> None:
    car = runner.car
    before = car.epoch()
    for shape in ((0,), (0, 5)):
        x = torch.empty(shape, dtype=torch.bfloat16, device=runner.device)
        result = car.all_reduce(x)
        problems = [] if result.shape == shape else [f"result shape {tuple(result.shape)}"]
        runner.record("empty", f"shape={shape}", problems)
    after = car.epoch()
    runner.record(
        "empty", "launches nothing", [] if after == before else [f"epoch moved {before} -> {after}"]
    )
    runner.checked_call("empty", "good call after empty ones", 4099, torch.bfloat16)


def _repeat(runner: _Runner) -> None:
    """Hundreds of back-to-back calls (no host sync), inputs cycling through 5 data sets, some
    ranks delayed: a stale read of the previous call's or the call-before's staging data, or a
    flag mix-up, shows as a wrong sum."""
    car = runner.car
    calls = runner.plan.repeat_calls
    sets = 5
    configs = [
        ("one-shot bf16", torch.bfloat16, 1000, "auto"),
        ("past-threshold bf16", torch.bfloat16, _past_threshold(car, torch.bfloat16, 8), "auto"),
        ("alternating fp16", torch.float16, 4096 + 8, "alternate"),
        ("alternating fp32 odd", torch.float32, 12_345, "alternate"),
    ]
    for label, dtype, n, mode in configs:
        elem = dtype.itemsize
        stride = -(-n * elem // 16) * 16 // elem  # 16-byte aligned rows
        data = [runner.inputs(n, dtype, f"repeat/{label}/{k}") for k in range(sets)]
        outs = torch.full((calls, stride), float("nan"), dtype=dtype, device=runner.device)
        start_epoch = car.epoch()
        for call in range(calls):
            runner.skew(call)
            algo = mode if mode != "alternate" else ("one_shot" if call % 2 == 0 else "two_shot")
            car.all_reduce(data[call % sets][runner.rank], out=outs[call, :n], algo=algo)
        torch.cuda.synchronize()
        problems = []
        bad_calls = []
        for call in range(calls):
            found = runner.compare(outs[call, :n], data[call % sets])
            if found:
                bad_calls.append(call)
                if len(problems) < MAX_REPORTED:
                    problems.append(f"call {call}: {found[0]}")
        if bad_calls:
            problems.insert(0, f"{len(bad_calls)} of {calls} calls wrong (first {bad_calls[:10]})")
        epochs = car.epoch() - start_epoch
        if epochs != calls:
            problems.append(f"the device epoch advanced by {epochs}, expected {calls}")
        problems += runner.identical_problems(outs[:, :n])
        runner.record("repeat", f"{label} numel={n} x {calls} calls", problems)


def _mixed(runner: _Runner) -> None:
    """Back-to-back calls of different sizes, dtypes and algorithms, checked after one sync."""
    car = runner.car
    largest = car.max_bytes
    sequence = [
        (torch.bfloat16, 1, "auto"),
        (torch.float32, largest // 4, "auto"),
        (torch.float16, 7, "one_shot"),
        (torch.bfloat16, min(300_007, largest // 2), "two_shot"),
        (torch.bfloat16, _past_threshold(car, torch.bfloat16, 1), "auto"),
        (torch.bfloat16, 0, "auto"),
        (torch.float32, 4096, "two_shot"),
        (torch.float16, min(65_536 + 3, largest // 2), "auto"),
        (torch.bfloat16, 5, "two_shot"),
        (torch.float16, largest // 2, "one_shot"),
    ]
    pending = []
    for round_ in range(3):
        for index, (dtype, n, algo) in enumerate(sequence):
            runner.skew(index + round_)
            inputs = runner.inputs(n, dtype, f"mixed/{round_}/{index}")
            base, out = runner.guarded(n, dtype)
            car.all_reduce(inputs[runner.rank], out=out, algo=algo)
            pending.append(
                (
                    f"round {round_} call {index}: {str(dtype)[6:]} numel={n} {algo}",
                    inputs,
                    base,
                    out,
                    n,
                )
            )
    torch.cuda.synchronize()
    for name, inputs, base, out, n in pending:
        problems = runner.compare(out, inputs) + runner.guard_problems(base, n)
        runner.record("mixed", name, problems)


def _graph(runner: _Runner) -> None:
    """Capture several calls in a CUDA graph, replay with new data (and eager calls between)."""
    car = runner.car
    specs = [
        (torch.bfloat16, 4099, "auto", False),
        (torch.bfloat16, _past_threshold(car, torch.bfloat16, 8), "auto", False),
        (torch.float32, 1001, "two_shot", False),
        (torch.float16, min(300_007, car.max_bytes // 2), "one_shot", False),
        (torch.bfloat16, 2048, "auto", True),  # in place
    ]
    static = [torch.zeros(n, dtype=dtype, device=runner.device) for dtype, n, _, _ in specs]
    outs = [
        s if inplace else torch.empty_like(s)
        for s, (_, _, _, inplace) in zip(static, specs, strict=True)
    ]

    def load(tag: str) -> list[list[torch.Tensor]]:
        all_inputs = []
        for k, (dtype, n, _, inplace) in enumerate(specs):
            inputs = runner.inputs(n, dtype, f"graph/{tag}/{k}")
            static[k].copy_(inputs[runner.rank])
            if not inplace:
                outs[k].fill_(float("nan"))
            all_inputs.append(inputs)
        return all_inputs

    load("warmup")
    for k, (_, _, algo, _) in enumerate(specs):  # eager warm-up of the same calls
        car.all_reduce(static[k], out=outs[k], algo=algo)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream(device=runner.device)
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.graph(graph, stream=stream, capture_error_mode="thread_local"):
        for k, (_, _, algo, _) in enumerate(specs):
            car.all_reduce(static[k], out=outs[k], algo=algo)
    torch.cuda.synchronize()
    start_epoch = car.epoch()
    eager_calls = 0
    for replay in range(runner.plan.graph_replays):
        all_inputs = load(f"replay{replay}")
        if replay % 3 == 1:  # an eager call between replays shares the epoch sequence
            runner.checked_call("graph", f"eager call before replay {replay}", 777, torch.float16)
            eager_calls += 1
        runner.skew(replay)
        graph.replay()
        torch.cuda.synchronize()
        for k, (dtype, n, algo, inplace) in enumerate(specs):
            problems = runner.compare(outs[k], all_inputs[k])
            runner.record(
                "graph",
                f"replay {replay} call {k}: {str(dtype)[6:]} numel={n} {algo}{' in place' if inplace else ''}",
                problems,
            )
    epochs = car.epoch() - start_epoch
    expected = runner.plan.graph_replays * len(specs) + eager_calls
    runner.record(
        "graph",
        "device epoch after replays",
        [] if epochs == expected else [f"advanced by {epochs}, expected {expected}"],
    )
    del graph


def _second_communicator(runner: _Runner) -> None:
    """A second communicator (3 blocks at most, always two-shot under auto) interleaved with the
    first: independent buffers and epochs; small grids loop over many packs per thread."""
    other = CustomAllReduce(max_bytes=1 << 20, one_shot_max_bytes=0, max_blocks=3)
    try:
        for index, (dtype, n, algo) in enumerate(
            [
                (torch.bfloat16, 3 * THREADS * 8 * 5 + 3, "auto"),
                (torch.float32, 3 * THREADS * 4 * 7 + 1, "one_shot"),
                (torch.float16, (1 << 20) // 2, "auto"),
                (torch.bfloat16, 17, "auto"),
            ]
        ):
            runner.checked_call(
                "second_communicator",
                f"second: {str(dtype)[6:]} numel={n} {algo}",
                n,
                dtype,
                algo,
                car=other,
            )
            runner.checked_call(
                "second_communicator",
                f"first, after second call {index}",
                4099 + index,
                torch.bfloat16,
            )
    finally:
        other.close()
    runner.record("second_communicator", "closed", [] if other.closed else ["still open"])


def _largest_communicator(runner: _Runner) -> None:
    """A communicator at the largest ``max_bytes`` (``MAX_BYTES_LIMIT``: 2 x 1 GiB of buffers
    per rank) is accepted by both the Python and the C++ check, and reduces."""
    largest = CustomAllReduce(max_bytes=MAX_BYTES_LIMIT)
    try:
        for algo in ("one_shot", "two_shot"):
            runner.checked_call(
                "largest_communicator",
                f"max_bytes={MAX_BYTES_LIMIT}: bfloat16 numel=4099 {algo}",
                4099,
                torch.bfloat16,
                algo,
                car=largest,
            )
    finally:
        largest.close()


def _epoch(runner: _Runner) -> None:
    car = runner.car
    before = car.epoch()
    x = runner.inputs(1024, torch.float32, "epoch")[runner.rank]
    for algo in ("one_shot", "two_shot", "auto", "one_shot", "two_shot"):
        car.all_reduce(x, algo=algo)
    after = car.epoch()
    epochs = runner.gather(after)
    problems = [] if after - before == 5 else [f"advanced by {after - before}, expected 5"]
    if len(set(epochs)) != 1:
        problems.append(f"epochs differ between ranks: {epochs}")
    runner.record("epoch", "5 calls advance the device epoch by 5 on every rank", problems)


def _expect_error(
    runner: _Runner,
    name: str,
    call: Callable[[], Any],
    error_type: type[BaseException],
    fragment: str,
    probe: Any = None,
) -> None:
    problems = []
    try:
        call()
    except error_type as error:
        if fragment not in str(error):
            problems.append(f"{type(error).__name__} without {fragment!r}: {error}")
    except Exception as error:
        problems.append(f"raised {type(error).__name__} instead of {error_type.__name__}: {error}")
    else:
        problems.append(f"did not raise (expected {error_type.__name__} with {fragment!r})")
    if probe is not None and runner.car.can_use(probe):
        problems.append("can_use(...) is True for this input")
    runner.record("bad_inputs", name, problems)
    # The next good call still works (nothing was launched, the CUDA context is fine).
    runner.checked_call("bad_inputs", f"good call after: {name}", 4099, torch.bfloat16, nccl=False)


def _bad_inputs(runner: _Runner) -> None:
    car = runner.car
    dev = runner.device
    good = torch.randn(4096, device=dev, dtype=torch.bfloat16)
    too_large = torch.zeros(car.max_bytes // 2 + 8, device=dev, dtype=torch.float16)
    strided = torch.randn(2 * 4096, device=dev, dtype=torch.bfloat16)[::2]
    misaligned = torch.randn(4097, device=dev, dtype=torch.float16)[1:]
    cpu = torch.randn(4096, dtype=torch.bfloat16)
    other_index = (dev.index + 1) % torch.cuda.device_count()
    other_gpu = torch.randn(4096, device=torch.device("cuda", other_index), dtype=torch.bfloat16)
    overlapping = torch.randn(8192, device=dev, dtype=torch.bfloat16)
    cases: list[tuple[str, Callable[[], Any], type[BaseException], str, Any]] = [
        (
            "int32 input",
            lambda: car.all_reduce(torch.ones(64, dtype=torch.int32, device=dev)),
            RuntimeError,
            "dtype mismatch",
            torch.ones(64, dtype=torch.int32, device=dev),
        ),
        (
            "float64 input",
            lambda: car.all_reduce(torch.ones(64, dtype=torch.float64, device=dev)),
            RuntimeError,
            "dtype mismatch",
            torch.ones(64, dtype=torch.float64, device=dev),
        ),
        (
            "larger than max_bytes",
            lambda: car.all_reduce(too_large),
            RuntimeError,
            "max_bytes",
            too_large,
        ),
        (
            "non-contiguous input",
            lambda: car.all_reduce(strided),
            RuntimeError,
            "contiguous",
            strided,
        ),
        (
            "input not 16-byte aligned",
            lambda: car.all_reduce(misaligned),
            RuntimeError,
            "16-byte aligned",
            misaligned,
        ),
        ("CPU input", lambda: car.all_reduce(cpu), RuntimeError, "device mismatch", cpu),
        (
            "input on another GPU",
            lambda: car.all_reduce(other_gpu),
            RuntimeError,
            f"but this communicator (rank {runner.rank}) uses cuda:{dev.index}",
            other_gpu,
        ),
        (
            "list input",
            lambda: car.all_reduce([1.0, 2.0]),
            TypeError,
            "input must be a torch.Tensor, got list",
            [1.0, 2.0],
        ),
        (
            "None input",
            lambda: car.all_reduce(None),
            TypeError,
            "input must be a torch.Tensor, got NoneType",
            None,
        ),
        (
            "list out",
            lambda: car.all_reduce(good, out=[0.0]),
            TypeError,
            "out must be a torch.Tensor or None, got list",
            None,
        ),
        (
            "out of another shape",
            lambda: car.all_reduce(good, out=torch.empty(4095, dtype=good.dtype, device=dev)),
            RuntimeError,
            "shape mismatch",
            None,
        ),
        (
            "out of another dtype",
            lambda: car.all_reduce(good, out=torch.empty(4096, dtype=torch.float16, device=dev)),
            RuntimeError,
            "dtype mismatch",
            None,
        ),
        (
            "non-contiguous out",
            lambda: car.all_reduce(good, out=torch.empty(8192, dtype=good.dtype, device=dev)[::2]),
            RuntimeError,
            "contiguous",
            None,
        ),
        (
            "out partially overlapping input",
            lambda: car.all_reduce(overlapping[:4096], out=overlapping[8:4104]),
            RuntimeError,
            "partially overlaps",
            None,
        ),
        (
            "unknown algo",
            lambda: car.all_reduce(good, algo="three_shot"),
            ValueError,
            "algo must be one of",
            None,
        ),
        (
            "algo None",
            lambda: car.all_reduce(good, algo=None),
            ValueError,
            "algo must be one of",
            None,
        ),
    ]
    for name, call, error_type, fragment, probe in cases:
        _expect_error(runner, name, call, error_type, fragment, probe)
    runner.record(
        "bad_inputs", "can_use(good input)", [] if car.can_use(good) else ["can_use is False"]
    )


def _close(runner: _Runner) -> None:
    car = runner.car
    x = torch.randn(64, device=runner.device, dtype=torch.float32)
    car.close()
    problems = [] if car.closed else ["closed is False after close()"]
    try:
        car.all_reduce(x)
        problems.append("all_reduce did not raise after close()")
    except RuntimeError as error:
        if "closed" not in str(error):
            problems.append(f"unexpected message: {error}")
    if car.can_use(x):
        problems.append("can_use is True after close()")
    car.close()  # a second close does nothing
    runner.record("close", "close, then calls raise 'closed'", problems)


_GROUP_FUNCTIONS: dict[str, Callable[[_Runner], None]] = {
    "sizes-float16": lambda runner: _sizes(runner, "float16"),
    "sizes-bfloat16": lambda runner: _sizes(runner, "bfloat16"),
    "sizes-float32": lambda runner: _sizes(runner, "float32"),
    "in_place": _in_place,
    "shapes": _shapes,
    "empty": _empty,
    "repeat": _repeat,
    "mixed": _mixed,
    "graph": _graph,
    "second_communicator": _second_communicator,
    "largest_communicator": _largest_communicator,
    "epoch": _epoch,
    "bad_inputs": _bad_inputs,
    "close": _close,
}


def run_checks(plan: CheckPlan) -> list[CheckResult]:
    """Run ``plan`` on this rank (inside an initialized process group, its GPU selected).

    Every rank must run the same plan. A check that finds a wrong result records a failed
    :class:`CheckResult` and the run goes on; an unexpected exception propagates (the launcher
    reports it with the traceback), because the ranks' sequences of collective calls may no
    longer agree after it.
    """
    unknown = [group for group in plan.groups if group not in _GROUP_FUNCTIONS]
    if unknown:
        raise ValueError(f"run_checks: unknown groups {unknown}; known: {list(GROUPS)}")
    runner = _Runner(plan)
    runner.car = CustomAllReduce(
        max_bytes=plan.max_bytes, one_shot_max_bytes=plan.one_shot_max_bytes
    )
    try:
        for group in GROUPS:
            if group in plan.groups:
                _GROUP_FUNCTIONS[group](runner)
    except BaseException:
        # Name the rank and the last passing check: the traceback alone does not say where.
        last = runner.results[-1].describe() if runner.results else "none"
        raise RuntimeError(
            f"rank {runner.rank}: run_checks stopped with an exception after {len(runner.results)} "
            f"checks (last: {last}):\n{traceback.format_exc()}"
        ) from None
    if not runner.car.closed:
        runner.car.close()
    return runner.results
