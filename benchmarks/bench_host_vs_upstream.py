"""Host time per call of our public wrappers against upstream SGLang's, side by side.

For every kernel both projects have, one small (decode-size) call of

* **ours**: the public wrapper, called as user code calls it (``testing/bench``'s overhead
  cases: the same inputs and constants);
* **upstream**: upstream's exported function plus the per-call logic of its Python wrapper
  (``sglang/kernels/ops/...`` of the 0.5.23 wheel): the sizes it reads, its ``cache_once``
  module lookup keyed as upstream keys it, the output it allocates, then the export. The
  export is upstream's own module, built from its wheel (:mod:`testing.upstream_sglang`).
  Upstream's ``register_custom_op`` layer is left out (it is torch.compile plumbing): this is
  the cheapest path upstream's code takes.

Both are timed the same way as ``bench_jit_kernels.py``'s host-overhead table: eager loops of
200 written-out calls (no sync inside), ``--rounds`` interleaved rounds with the order rotated,
medians; the ratio is the median of the per-round ratios upstream / ours (> 1: ours is faster).
Each export alone (ours: the case's bare call; upstream: the module fetched once beforehand) is
timed in the same rounds, so a difference can be placed in the Python layer or in C++.
Needs a GPU and the upstream sources (``--sglang-src DIR`` or ``$BENCH_SGLANG_SRC``)::

    BENCH_SGLANG_SRC=.peers python -m benchmarks.bench_host_vs_upstream  # gpu-only
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from benchmarks.bench_jit_kernels import family_modules, load_family, rotated_samples
from jit_kernel.compiler import get_jit_cuda_arch
from testing.bench.case import Call, CallLoop, OverheadCase
from testing.upstream_sglang import kernels as upstream
from testing.upstream_sglang import source as upstream_source
from testing.upstream_sglang.build import load

Fn = Callable[..., Any]
EPS = 1e-6


def _cache_once(make: Callable[..., Any]) -> Callable[..., Any]:
    """Upstream's ``cache_once``: a dict keyed by ``(args, sorted kwargs)``; a miss loads the
    module of the peer ``make(*args)`` returns."""
    results: dict[Any, Any] = {}

    def getter(*args: Any, **kwargs: Any) -> Any:
        key = (args, tuple(sorted(kwargs.items())))
        if key not in results:
            peer = make(*args, **kwargs)
            if isinstance(peer, str):
                raise RuntimeError(peer)
            results[key] = load(peer.spec(), peer.source, get_jit_cuda_arch())
        return results[key]

    return getter


def _activation(op: str) -> Fn:
    """``run_activation`` with ``out=None`` and the body of ``_run_activation_inplace``."""
    module_of = _cache_once(lambda dtype: upstream.activation(f"{op}_and_mul", dtype))
    name = upstream.ACTIVATION_NAMES[f"{op}_and_mul"]

    def run_activation(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        assert name in upstream.ACTIVATION_NAMES.values()
        hidden_size = input.shape[-1] // 2
        if out is None:
            out = input.new_empty(*input.shape[:-1], hidden_size)
        module = module_of(input.dtype)
        module.run_activation(input.view(-1, hidden_size * 2), out.view(-1, hidden_size), name)
        return out

    return run_activation


def _add3() -> Fn:
    module_of = _cache_once(lambda: upstream.add3(torch.bfloat16))

    def add3(a, b, c, *, out=None, prefetch_bc=False):
        if out is None:
            out = torch.empty_like(a)
        module = module_of()
        module.run(a.view(-1), b.view(-1), c.view(-1), out.view(-1), prefetch_bc)
        return out

    return add3


def _rmsnorm() -> Fn:
    """Upstream's ``rmsnorm(input, weight, out, eps)`` given a fresh ``out`` (ours returns a
    new tensor): the allocation is the caller's, counted here."""
    module_of = _cache_once(lambda hidden, dtype: upstream.rmsnorm(hidden, dtype, EPS))

    def rmsnorm(input, weight, eps=1e-6):
        out = torch.empty_like(input)
        hidden_size = input.size(-1)
        if not upstream.rmsnorm_supports(hidden_size):
            raise RuntimeError(f"jit rmsnorm: unsupported hidden_size={hidden_size}")
        module = module_of(hidden_size, input.dtype)
        module.rmsnorm(input, weight, out, eps)
        return out

    return rmsnorm


def _fused_add_rmsnorm() -> Fn:
    module_of = _cache_once(
        lambda dtype, cast: upstream.fused_add_rmsnorm(4096, dtype, EPS)  # one module per dtype
    )

    def fused_add_rmsnorm(input, residual, weight, eps=1e-6, *, cast_x_before_out_mul=False):
        module = module_of(input.dtype, cast_x_before_out_mul)
        module.fused_add_rmsnorm(input, residual, weight, eps)

    return fused_add_rmsnorm


def _qknorm() -> Fn:
    module_of = _cache_once(lambda head_dim, dtype: upstream.qknorm(head_dim, dtype, EPS))

    def fused_inplace_qknorm(q, k, q_weight, k_weight, eps=1e-6, *, head_dim=0):
        head_dim = head_dim or q.size(-1)
        module = module_of(head_dim, q.dtype)
        module.qknorm(q, k, q_weight, k_weight, eps)

    return fused_inplace_qknorm


def _rope() -> Fn:
    module_of = _cache_once(
        lambda is_neox, rope_dim, k_dtype, q_dtype: upstream.rope(is_neox, rope_dim, q_dtype)
    )

    def apply_rope_inplace(q, k, cos_sin_cache, positions, *, is_neox, rope_dim=0):
        rope_dim = rope_dim or cos_sin_cache.size(-1)
        module = module_of(is_neox, rope_dim, k.dtype, q.dtype)
        module.run_rope(q, k, cos_sin_cache, positions)

    return apply_rope_inplace


def _store_cache() -> Fn:
    module_of = _cache_once(
        lambda k_bytes, v_bytes, threads: upstream.store_cache(k_bytes, v_bytes)
    )

    def store_cache(
        k, v, k_cache, v_cache, indices, *, row_bytes=0, v_row_bytes=0, num_split=0,
        size_limit=0, reserved_skip_index=-1,
    ):  # fmt: skip
        row_bytes = row_bytes or k.shape[-1] * k.element_size()
        v_row_bytes = v_row_bytes or v.shape[-1] * v.element_size()
        module = module_of(row_bytes, v_row_bytes, num_split * 32)
        if size_limit <= 0:
            size_limit = k_cache.shape[0]
        module.store_cache(k, v, k_cache, v_cache, indices, size_limit, reserved_skip_index)

    return store_cache


#: Overhead case name (``testing/bench``) -> upstream's wrapper, called as ours is.
UPSTREAM_WRAPPERS: dict[str, Callable[[], Fn]] = {
    "silu_and_mul 16x4096 bf16": lambda: _activation("silu"),
    "gelu_and_mul 16x4096 bf16": lambda: _activation("gelu"),
    "gelu_tanh_and_mul 16x4096 bf16": lambda: _activation("gelu_tanh"),
    "add3 bf16 4096": _add3,
    "rmsnorm 16x4096 bf16": _rmsnorm,
    "fused_add_rmsnorm 16x4096 bf16": _fused_add_rmsnorm,
    "qknorm 16x(32+8)x128 bf16": _qknorm,
    "rope 16x(32+8)x128 bf16": _rope,
    "store_cache 16x(8x128) bf16": _store_cache,
}


def _peers_built_first() -> list[upstream.UpstreamPeer]:
    """The upstream modules the cases load, built in parallel before timing."""
    bf16 = torch.bfloat16
    found = [upstream.activation(f"{op}_and_mul", bf16) for op in ("silu", "gelu", "gelu_tanh")]
    found += [
        upstream.add3(bf16),
        upstream.rmsnorm(4096, bf16, EPS),
        upstream.fused_add_rmsnorm(4096, bf16, EPS),
        upstream.qknorm(128, bf16, EPS),
        upstream.rope(True, 128, bf16),
        upstream.store_cache(2048, 2048),
    ]
    return [peer for peer in found if not isinstance(peer, str)]


def _bare(peer: Callable[[], upstream.UpstreamPeer | str]) -> Callable[[], Fn]:
    """Upstream's export alone (the peer's callable: the module fetched once beforehand)."""

    def make() -> Fn:
        found = peer()
        if isinstance(found, str):
            raise RuntimeError(found)
        return found.load()

    return make


BF16 = torch.bfloat16
#: Overhead case name -> upstream's bare export call over the same inputs (ours: case.bare).
UPSTREAM_BARE: dict[str, Callable[[], Fn]] = {
    "silu_and_mul 16x4096 bf16": _bare(lambda: upstream.activation("silu_and_mul", BF16)),
    "gelu_and_mul 16x4096 bf16": _bare(lambda: upstream.activation("gelu_and_mul", BF16)),
    "gelu_tanh_and_mul 16x4096 bf16": _bare(lambda: upstream.activation("gelu_tanh_and_mul", BF16)),
    "rmsnorm 16x4096 bf16": _bare(lambda: upstream.rmsnorm(4096, BF16, EPS)),
    "fused_add_rmsnorm 16x4096 bf16": _bare(lambda: upstream.fused_add_rmsnorm(4096, BF16, EPS)),
    "qknorm 16x(32+8)x128 bf16": _bare(lambda: upstream.qknorm(128, BF16, EPS)),
    "rope 16x(32+8)x128 bf16": _bare(lambda: upstream.rope(True, 128, BF16)),
    "store_cache 16x(8x128) bf16": _bare(lambda: upstream.store_cache(2048, 2048)),
}


@dataclass(frozen=True)
class HostRow:
    name: str
    ours_us: float
    upstream_us: float
    upstream_over_ours: float  # median of per-round ratios; > 1: ours is faster
    bare_us: dict[str, float]  # the exports alone: "ours", "upstream" (where known)


def _as_call(spec: Fn | Call) -> Call:
    return spec if isinstance(spec, Call) else Call(spec)


def bench_pair(case: OverheadCase, theirs: Fn, rounds: int, calls: int = 200) -> HostRow:
    """Interleaved rounds of ours and upstream's wrapper (and each bare export), the order
    rotating."""
    inputs = case.make_inputs()
    ours_call = _as_call(case.wrapper)
    loops = {
        "ours": CallLoop(ours_call, inputs),
        "upstream": CallLoop(Call(theirs, ours_call.extra, ours_call.keywords), inputs),
        "ours bare": CallLoop(case.bare, inputs),
    }
    if case.name in UPSTREAM_BARE:  # the peer's callable takes the inputs alone
        loops["upstream bare"] = CallLoop(UPSTREAM_BARE[case.name](), inputs)
    samples = rotated_samples(loops, rounds, calls)
    ratios = [u / o for o, u in zip(samples["ours"], samples["upstream"], strict=True)]
    return HostRow(
        case.name,
        statistics.median(samples["ours"]),
        statistics.median(samples["upstream"]),
        statistics.median(ratios),
        {
            name.split()[0]: statistics.median(samples[name])
            for name in samples
            if name.endswith("bare")
        },
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sglang-src", help="upstream's unpacked wheel (default $BENCH_SGLANG_SRC)"
    )
    parser.add_argument("--rounds", type=int, default=31, help="interleaved rounds (default 31)")
    parser.add_argument("--only", nargs="+", help="case names starting with these kernel names")
    args = parser.parse_args(argv)
    try:
        if upstream_source.configure(args.sglang_src) is None:
            print(f"bench_host_vs_upstream: {upstream_source.NOT_GIVEN}", file=sys.stderr)
            return 2
    except upstream_source.UpstreamSourceError as error:
        print(f"bench_host_vs_upstream: {error}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("bench_host_vs_upstream: needs a CUDA GPU", file=sys.stderr)
        return 2
    cases = [c for stem in family_modules() for c in load_family(stem).overhead_cases()]
    cases = [c for c in cases if c.name in UPSTREAM_WRAPPERS]
    if args.only:
        cases = [c for c in cases if c.name.split()[0] in args.only]
    upstream.build_peers(_peers_built_first())
    rows = []
    failed = []
    for case in cases:
        try:
            rows.append(bench_pair(case, UPSTREAM_WRAPPERS[case.name](), args.rounds))
        except Exception as error:  # one kernel's failure must not hide the others' figures
            failed.append(f"  {case.name}: {type(error).__name__}: {error}")
    print(
        f"host time per call, ours vs upstream SGLang's wrapper logic + export (eager loops of "
        f"200 written-out calls; medians of {args.rounds} rounds, order rotating; ratio: "
        "median of per-round upstream/ours, > 1: ours faster):"
    )
    print(
        f"  {'case':34s} {'ours us':>8s} {'upstream us':>12s} {'upstream/ours':>14s}"
        f"  {'bare: ours':>10s} {'upstream':>9s}"
    )
    for row in rows:
        theirs_bare = row.bare_us.get("upstream")
        print(
            f"  {row.name:34s} {row.ours_us:8.2f} {row.upstream_us:12.2f} "
            f"{row.upstream_over_ours:13.3f}x  {row.bare_us['ours']:10.2f} "
            + (f"{theirs_bare:9.2f}" if theirs_bare is not None else f"{'N/A':>9s}")
        )
    if failed:
        print("not measured:", *failed, sep="\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
