"""Which upstream kernel serves a case, with which template arguments, called how.

Each public function mirrors one of upstream's Python wrappers (``sglang/kernels/ops/...``):
the module and template arguments are chosen as that wrapper chooses them, and the returned
peer takes the case's inputs as ours does. Where upstream has no kernel for the dtype or size,
the function returns the reason instead (a str, shown as N/A). The call semantics are ours:

* ``rmsnorm`` returns a new tensor (upstream's wrapper writes in place unless ``out`` is given:
  we give it a fresh ``out``, as ours allocates one);
* ``store_cache`` writes every in-range slot (upstream skips slot 0, its CUDA-graph padding
  slot, unless ``reserved_skip_index=-1``: we pass -1) and is given the cache's row count as
  ``size_limit`` (upstream asserts on an index outside it; ours skips such a row);
* ``apply_rope_inplace`` is upstream's ``FusedRopeKernel::run`` (no position bounds check; ours
  leaves a token with an out-of-range position unchanged: the cases' positions are in range).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from jit_kernel.compiler import get_jit_cuda_arch, is_arch_support_pdl, make_cpp_args
from testing.upstream_sglang.build import (
    ModuleSpec,
    UpstreamBuildError,
    build_all,
    load,
)
from testing.upstream_sglang.source import NOT_GIVEN, UpstreamSource, current

Fn = Callable[..., Any]
HALF_TYPES = (torch.float16, torch.bfloat16)


@dataclass(frozen=True)
class UpstreamPeer:
    """An upstream kernel as a peer: built (with every other one, in parallel) before timing.

    ``module(pdl)`` is the module to build, PDL on or off as upstream decides
    (``is_arch_support_pdl()``); ``call(module)`` the callable over the case's inputs. The
    case's ``check`` verifies the callable before it is timed.
    """

    module: Callable[[bool], ModuleSpec]
    call: Callable[[Any], Fn]
    source: UpstreamSource

    def spec(self) -> ModuleSpec:
        return self.module(is_arch_support_pdl())

    def load(self) -> Fn:
        """The callable; builds the module first if :func:`build_peers` did not."""
        return self.call(load(self.spec(), self.source, get_jit_cuda_arch()))


def build_peers(
    peers: Iterable[UpstreamPeer], jobs: int | None = None
) -> dict[str, Path | UpstreamBuildError]:
    """Build every distinct module of ``peers`` in parallel; the library or error by module."""
    chosen = list(peers)
    if not chosen:
        return {}
    return build_all([peer.spec() for peer in chosen], chosen[0].source, get_jit_cuda_arch(), jobs)


def _peer(module: Callable[[bool], ModuleSpec], call: Callable[[Any], Fn]) -> UpstreamPeer | str:
    source = current()
    return NOT_GIVEN if source is None else UpstreamPeer(module, call, source)


def _elementwise(name: str, args: list[str], exports: list[tuple[str, str]]) -> ModuleSpec:
    return ModuleSpec((name, *args), f"elementwise/{name}.cuh", tuple(exports))


# --------------------------------------------------------------------------- norms

RMSNORM_WARP_SIZES = (64, 128, 256)


def rmsnorm_supports(hidden: int) -> bool:
    """Upstream's ``_is_supported_rmsnorm_hidden_size``."""
    return hidden in RMSNORM_WARP_SIZES or (
        (256 < hidden <= 8192 and hidden % 256 == 0)
        or (8192 <= hidden <= 16384 and hidden % 512 == 0)
    )


def rmsnorm_kernel_class(hidden: int) -> str:
    """Upstream's ``_rmsnorm_kernel_class``: a warp, half a CTA (two rows) or a CTA per row."""
    if hidden in RMSNORM_WARP_SIZES:
        return "RMSNormWarpKernel"
    if hidden == 512 or (hidden >= 2048 and hidden % 512 == 0):
        return "RMSNormHalfKernel"
    return "RMSNormKernel"


def rmsnorm(hidden: int, dtype: torch.dtype, eps: float) -> UpstreamPeer | str:
    """``rmsnorm(input, weight, out, eps)``, out of place: ``fn(x, w)`` returns a new tensor."""
    if not rmsnorm_supports(hidden):
        return (
            "upstream's rmsnorm takes hidden sizes 64, 128, 256 and multiples of 256 up to "
            f"8192 (of 512 up to 16384), not {hidden}"
        )

    def module(pdl: bool) -> ModuleSpec:
        args = make_cpp_args(hidden, pdl, dtype)
        run = f"{rmsnorm_kernel_class(hidden)}<{args}>::run"
        return _elementwise("rmsnorm", args, [("rmsnorm", run)])

    def call(mod: Any) -> Fn:
        def fn(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
            out = torch.empty_like(x)
            mod.rmsnorm(x, weight, out, eps)
            return out

        return fn

    return _peer(module, call)


FUSED_ADD_RMSNORM_MAX_HIDDEN = 8192  # on sm_90 (16-byte vectors); 12288 with 32-byte ones


def fused_add_rmsnorm(hidden: int, dtype: torch.dtype, eps: float) -> UpstreamPeer | str:
    """``fused_add_rmsnorm(x, residual, weight, eps)`` in place (``cast_x_before_out_mul=False``)."""
    if not (0 < hidden <= FUSED_ADD_RMSNORM_MAX_HIDDEN and hidden % 16 == 0):
        return (
            "upstream's fused_add_rmsnorm takes hidden sizes <= "
            f"{FUSED_ADD_RMSNORM_MAX_HIDDEN} (multiples of 16) on sm_90, not {hidden}"
        )

    def module(pdl: bool) -> ModuleSpec:  # upstream launches it without PDL
        args = make_cpp_args(False, dtype)
        run = f"FusedAddRMSNormKernel<{args}>::run"
        return _elementwise("fused_add_rmsnorm", args, [("fused_add_rmsnorm", run)])

    def call(mod: Any) -> Fn:
        def fn(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor) -> None:
            mod.fused_add_rmsnorm(x, residual, weight, eps)

        return fn

    return _peer(module, call)


QKNORM_HEAD_DIMS = (64, 128, 256, 512, 1024)


def qknorm(head_dim: int, dtype: torch.dtype, eps: float) -> UpstreamPeer | str:
    """``fused_inplace_qknorm(q, k, q_weight, k_weight, eps)`` (half-warp rows allowed)."""
    if head_dim not in QKNORM_HEAD_DIMS:
        return f"upstream's qknorm takes head_dim {QKNORM_HEAD_DIMS}, not {head_dim}"
    if dtype not in HALF_TYPES:
        return "upstream's qknorm takes float16/bfloat16 only"

    def module(pdl: bool) -> ModuleSpec:
        args = make_cpp_args(head_dim, pdl, dtype, True)
        return _elementwise("qknorm", args, [("qknorm", f"QKNormKernel<{args}>::run")])

    def call(mod: Any) -> Fn:
        def fn(q, k, q_weight, k_weight) -> None:
            mod.qknorm(q, k, q_weight, k_weight, eps)

        return fn

    return _peer(module, call)


# --------------------------------------------------------------------------- rope


def rope(is_neox: bool, rope_dim: int, dtype: torch.dtype) -> UpstreamPeer | str:
    """``apply_rope_inplace(q, k, cos_sin_cache, positions, is_neox=...)``: ``run_rope``.

    Upstream rotates heads of exactly ``rope_dim`` elements (a partial rotary passes views of
    the first ``rope_dim``); the cases rotate whole heads, so ``head_dim == rope_dim``.
    """

    def module(pdl: bool) -> ModuleSpec:
        args = make_cpp_args(is_neox, rope_dim, pdl, dtype, dtype)
        run = f"FusedRopeKernel<{args}>::run"
        return ModuleSpec(("fused_rope", *args), "elementwise/rope.cuh", (("run_rope", run),))

    def call(mod: Any) -> Fn:
        def fn(q, k, cos_sin_cache, positions) -> None:
            mod.run_rope(q, k, cos_sin_cache, positions)

        return fn

    return _peer(module, call)


# --------------------------------------------------------------------------- store_cache

WARP_THREADS = 32


def store_cache_threads(k_row_bytes: int, v_row_bytes: int) -> int:
    """Upstream's heuristic (``_jit_kvcache_module`` with ``num_threads=0``): threads per row.

    One warp, doubled while each thread's share of k and of v stays a multiple of 8 bytes and
    the two shares together are at least 64 bytes.
    """
    threads = WARP_THREADS
    if k_row_bytes % threads or v_row_bytes % threads:
        return threads
    k_share, v_share = k_row_bytes // threads, v_row_bytes // threads
    while k_share % 8 == 0 and v_share % 8 == 0 and k_share + v_share >= 64:
        threads, k_share, v_share = threads * 2, k_share // 2, v_share // 2
    return threads


def store_cache(k_row_bytes: int, v_row_bytes: int) -> UpstreamPeer | str:
    """``store_cache(k, v, k_cache, v_cache, indices)`` with every slot writable (see above)."""

    def module(pdl: bool) -> ModuleSpec:
        threads = store_cache_threads(k_row_bytes, v_row_bytes)
        args = make_cpp_args(k_row_bytes, v_row_bytes, threads, pdl)
        run = f"StoreKVCacheKernel<{args}>::run"
        return ModuleSpec(("kvcache", *args), "elementwise/kvcache.cuh", (("store_cache", run),))

    def call(mod: Any) -> Fn:
        def fn(k, v, k_cache, v_cache, indices) -> None:
            mod.store_cache(k, v, k_cache, v_cache, indices, k_cache.shape[0], -1)

        return fn

    return _peer(module, call)


# --------------------------------------------------------------------------- activations

ACTIVATION_NAMES = {
    "silu_and_mul": "silu",
    "gelu_and_mul": "gelu",
    "gelu_tanh_and_mul": "gelu_tanh",
}


def activation(op: str, dtype: torch.dtype) -> UpstreamPeer | str:
    """``silu_and_mul`` / ``gelu_and_mul`` / ``gelu_tanh_and_mul(input)``: ``run_activation``.

    Built with ``--use_fast_math`` as upstream builds it (approximate exp/erf/tanh; ours uses
    the accurate functions).
    """
    name = ACTIVATION_NAMES[op]

    def module(pdl: bool) -> ModuleSpec:
        args = make_cpp_args(dtype, pdl)
        run = f"ActivationKernel<{args}>::run_activation"
        return ModuleSpec(
            ("activation", *args),
            "elementwise/activation.cuh",
            (("run_activation", run),),
            fast_math=True,
        )

    def call(mod: Any) -> Fn:
        def fn(x: torch.Tensor) -> torch.Tensor:
            out = x.new_empty((*x.shape[:-1], x.shape[-1] // 2))
            mod.run_activation(x, out, name)
            return out

        return fn

    return _peer(module, call)


# --------------------------------------------------------------------------- add_constant


def add_constant(constant: int) -> UpstreamPeer | str:
    """Upstream's reference kernel ``add_constant(src, constant)`` into our ``out``."""

    def module(pdl: bool) -> ModuleSpec:
        args = make_cpp_args(constant)
        return _elementwise("add_constant", args, [("add_constant", f"add_constant<{args}>")])

    def call(mod: Any) -> Fn:
        def fn(src: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
            mod.add_constant(out, src)
            return out

        return fn

    return _peer(module, call)


# --------------------------------------------------------------------------- add3


def add3(dtype: torch.dtype) -> UpstreamPeer | str:
    """Upstream's ``add3(a, b, c, out=out)``: bf16 only, contiguous, numel a multiple of 16.

    Built with ``-O3 --use_fast_math`` as upstream builds it; it adds in bf16 twice (two
    roundings) where ours adds in fp32 and rounds once.
    """
    if dtype != torch.bfloat16:
        return "upstream SGLang's add3 takes bfloat16 only"

    def module(pdl: bool) -> ModuleSpec:
        args = make_cpp_args(pdl)
        return ModuleSpec(
            ("add3_bf16", *args),
            "elementwise/add3.cuh",
            (("run", f"Add3Kernel<{args}>::launch"),),
            fast_math=True,
        )

    def call(mod: Any) -> Fn:
        def fn(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, out: torch.Tensor):
            mod.run(a, b, c, out, False)
            return out

        return fn

    return _peer(module, call)
