"""What one kernel's definition holds, and how the harnesses read it.

Each other module in ``testing/bench/`` (except :mod:`.peers`, and ``_`` modules that several
definitions share) defines one kernel (``activation.py``: the three gated activations), in one
place, for every harness that measures it:

* ``SWEEPS: dict[str, Sweep]``: the registered benchmark of each kernel
  (``registered/jit/benchmark/bench_<kernel>.py`` declares itself with ``SWEEPS[kernel]``):
  its axes (full sweep and CI values), its implementations and how one cell is measured;
* ``bandwidth_cases() -> list[BandwidthCase]``: the kernel at memory-bound sizes, timed side by
  side with its peers and with a device-to-device copy of the same bytes, and at decode sizes
  (``decode=True``: at most 64 rows or tokens), timed side by side with its peers and with an
  empty kernel (the launch floor), by ``benchmarks/bench_jit_kernels.py``; the tuner
  (``tools/tune_kernels.py``) times the memory-bound ones of its families;
* ``overhead_cases() -> list[OverheadCase]``: host time per call of the public wrapper against
  a bare tvm-ffi call doing the same work and against torch eager.

Peers come from :mod:`testing.bench.peers`. Peers that cannot run here are given as a string:
the reason the column shows N/A. Upstream SGLang's kernels are given as an
:class:`~testing.upstream_sglang.kernels.UpstreamPeer` (built before timing, and verified with
the case's ``check`` before it is timed). Importing a definition needs no GPU.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jit_kernel.benchmark import marker

if TYPE_CHECKING:
    from testing.upstream_sglang.kernels import UpstreamPeer

Fn = Callable[..., Any]


@dataclass(frozen=True)
class BandwidthCase:
    """One kernel at one size: ours, its peers and the bytes a call must move.

    ``make_inputs()`` returns the positional arguments every callable takes. ``rotate_args``
    names the inputs that are read (do_bench clones them to defeat L2); leave out large
    outputs such as caches. ``bytes_moved`` is the fewest bytes a call reads plus writes.
    ``check(fn, inputs)`` asserts (AssertionError) that ``fn``, ours or a peer that must prove
    itself, computes the right result from those inputs (against ``testing/references``), on
    copies where ``fn`` writes in place. ``decode``: a decode-size row (<= 64 rows or tokens),
    whose target is latency <= the best of upstream SGLang, FlashInfer and torch.compile;
    otherwise the row is memory-bound (>= 90% of copy, >= every peer). ``dtype`` (the data's)
    and ``keywords`` (constants ours takes besides the tensors, e.g. ``is_neox``) let the tuner
    call a variant's export on the same inputs.
    """

    kernel: str
    shape: str
    make_inputs: Callable[[], tuple[Any, ...]]
    ours: Fn
    bytes_moved: int
    peers: dict[str, Fn | str | UpstreamPeer] = field(default_factory=dict)
    rotate_args: tuple[int, ...] | str = "all"
    check: Callable[[Fn, tuple[Any, ...]], None] | None = None
    decode: bool = False
    dtype: Any = None
    keywords: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """``kernel shape``, as the tables print a row."""
        return f"{self.kernel} {self.shape}"


@dataclass(frozen=True)
class Call:
    """How the host-overhead loop calls one callable: ``fn(*inputs, *extra, **keywords)``.

    The loop writes the call out (``fn(a0, a1, eps)``, ``fn(q, k, c, p, is_neox=True)``), as
    user code does, so no helper frame (a lambda binding the constants) and no ``fn(*args)``
    unpacking is timed with it.
    """

    fn: Fn
    extra: tuple[Any, ...] = ()
    keywords: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class OverheadCase:
    """Host time of one call at a small size: wrapper vs bare tvm-ffi call vs torch eager.

    ``make_inputs()`` returns the tensors every callable takes first. ``wrapper`` is the public
    function itself; ``bare`` is the module's export itself where the call is the whole work
    (in-place kernels), else a function that allocates the output and calls the export, with
    the module fetched once beforehand: exactly the work the wrapper cannot avoid; ``torch_eager``
    the same computation in torch. A plain callable is called with the inputs alone, a
    :class:`Call` with its constants too. Target: wrapper <= 1.05 x bare and wrapper < torch eager.
    """

    name: str
    make_inputs: Callable[[], tuple[Any, ...]]
    wrapper: Fn | Call
    bare: Fn | Call
    torch_eager: Fn | Call


class CallLoop:
    """``calls`` calls of one callable, written out: ``fn(a0, a1, a2, a3, is_neox=kw_is_neox)``.

    A call as user code makes it: the interpreter's fast paths for plain Python calls apply to
    a wrapper as they would there, and a bare export builds its argument tuple as it would
    there (``fn(*args)`` hands it a ready-made tuple and calls a Python wrapper through the slow
    generic path). Each instance compiles its own loop, so each callable has a call site of its
    own (a shared one would keep re-specializing between a wrapper and an export).
    """

    def __init__(self, spec: Fn | Call, inputs: tuple[Any, ...]) -> None:
        call = spec if isinstance(spec, Call) else Call(spec)  # a plain callable: inputs alone
        self.call = call
        self.args = (*inputs, *call.extra)
        params = [f"a{i}" for i in range(len(self.args))]
        passed = params + [f"{name}=kw_{name}" for name in call.keywords]
        lines = ["def loop(fn, args, kwargs, calls):"]
        if params:
            lines.append(f"    {', '.join(params)}, = args")
        lines += [f"    kw_{name} = kwargs[{name!r}]" for name in call.keywords]
        lines += ["    for _ in range(calls):", f"        fn({', '.join(passed)})"]
        namespace: dict[str, Any] = {}
        exec(compile("\n".join(lines) + "\n", "<overhead call loop>", "exec"), namespace)
        self._loop = namespace["loop"]

    def run(self, calls: int) -> None:
        self._loop(self.call.fn, self.args, self.call.keywords, calls)


# --------------------------------------------------------------------------- registered sweeps


@dataclass(frozen=True)
class Axis:
    """One row axis of a registered benchmark: ``@marker.parametrize(names, vals, ci_vals)``."""

    names: str
    vals: Sequence[Any]
    ci_vals: Sequence[Any] | None = None


@dataclass(frozen=True)
class Sweep:
    """A registered benchmark: row axes (top one varies slowest), implementations, one cell.

    ``cell(impl, **row)`` builds the row's inputs, picks the implementation (a peer that cannot
    run skips the cell: N/A with the reason) and returns ``marker.do_bench(...)``.
    """

    axes: tuple[Axis, ...]
    impls: tuple[str, ...]
    cell: Callable[..., marker.BenchResult]

    def declare(self, fn: Fn) -> marker.Benchmark:
        """Decorate the registered file's ``benchmark(impl, **row)`` with the axes.

        The function stays in the registered file, so the sweep keeps that file's name.
        """
        bench: Any = marker.benchmark("impl", list(self.impls))(fn)
        for axis in reversed(self.axes):
            bench = marker.parametrize(axis.names, axis.vals, ci_vals=axis.ci_vals)(bench)
        return bench


def implementation(
    impl: str,
    ours: Fn,
    eager: Fn,
    *,
    compiled: Fn | None = None,
    flashinfer: Fn | str | None = None,
    inputs: tuple[Any, ...] = (),
) -> Fn:
    """The callable a registered sweep's column ``impl`` times.

    ``jit``: ours; ``torch``: the eager formula; ``torch_compile``: ``compiled`` (default:
    ``peers.compiled(eager)``); ``flashinfer``: the adapter once it ran on copies of ``inputs``
    (:func:`runnable`; a reason string skips the cell).
    """
    from testing.bench import peers

    if impl == "jit":
        return ours
    if impl == "torch":
        return eager
    if impl == "torch_compile":
        return compiled if compiled is not None else peers.compiled(eager)
    if impl == "flashinfer" and flashinfer is not None:
        return runnable(flashinfer, *inputs)
    raise ValueError(f"no implementation {impl!r} (jit, torch, torch_compile, flashinfer)")


def runnable(peer: Fn | str, *inputs: Any) -> Fn:
    """``peer`` once it ran on copies of ``inputs``; else the cell is skipped with the reason.

    An optional peer (FlashInfer) may lack a shape or dtype: its cells are N/A, not errors.
    """
    import torch

    if isinstance(peer, str):
        marker.skip(peer)
    try:
        peer(*(t.clone() if isinstance(t, torch.Tensor) else t for t in inputs))
        torch.cuda.synchronize()
    except Exception as error:
        marker.skip(f"FlashInfer failed: {type(error).__name__}: {error}"[:200])
    return peer
