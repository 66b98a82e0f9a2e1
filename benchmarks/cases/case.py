"""What a kernel family contributes to ``benchmarks/bench_jit_kernels.py``.

Each other module in ``benchmarks/cases/`` is one kernel family and defines two functions:

* ``bandwidth_cases() -> list[BandwidthCase]``: the kernel at memory-bound sizes, timed side by
  side with its peers and with a device-to-device copy of the same bytes, and at decode sizes
  (``decode=True``: at most 64 rows or tokens), timed side by side with its peers and with an
  empty kernel (the launch floor);
* ``overhead_cases() -> list[OverheadCase]``: host time per call of the public wrapper against
  a bare tvm-ffi call doing the same work and against torch eager.

The driver times every callable the same way (CUDA-graph replay through our ``do_bench``, input
sets rotated so the working set never sits in L2) and checks the targets. Peers that cannot run
here are given as a string: the reason the column shows N/A. Upstream SGLang's kernels are given
as an :class:`~benchmarks.upstream_sglang.kernels.UpstreamPeer` (built before timing, and
verified with the case's ``check`` before it is timed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchmarks.upstream_sglang.kernels import UpstreamPeer

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
    otherwise the row is memory-bound (>= 90% of copy, >= every peer).
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
