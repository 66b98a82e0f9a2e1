"""apply_rope_inplace(q, k, cos_sin_cache, positions, *, is_neox, rope_dim): against float32 torch.

Reference: an independent float32 torch implementation (positions gather the cos/sin rows, the
pairs are rotated with ``x1 * cos - x2 * sin`` and ``x2 * cos + x1 * sin`` as separate float32
ops, rounded once to the dtype). The kernel does the same float32 operations without FMA
contraction, so results are expected to be bit-identical; the tolerance allows one unit in the
last place of the dtype (fp16 2e-3, bf16 1e-2 relative; fp32 1e-5) in case a library rounds
differently. q and k are views of a fused qkv buffer: the v part is a guard that must not change,
as must every element past rope_dim.
"""

import math
import re
import sys

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)
import torch

from ci_runner import register_cuda_ci
from jit_kernel.env import get_ci_test_range
from testing.skip import skip_module_unless

register_cuda_ci(est_time=18, suite="base-b-kernel-unit-1-gpu-large")
register_cuda_ci(est_time=32, suite="nightly-kernel-1-gpu", nightly=True)

skip_module_unless(torch.cuda.is_available(), "rope tests need a CUDA GPU")

from jit_kernel.rope import (  # noqa: E402
    _jit_rope_module,
    apply_rope_inplace,
    can_use_apply_rope_inplace,
)
from testing import references  # noqa: E402
from testing.replay import run_once  # noqa: E402

DTYPES = [torch.float16, torch.bfloat16, torch.float32]
NUM_TOKENS = get_ci_test_range([1, 2, 7, 128, 129, 2048, 2049, 8191], [1, 129, 2049])
HEADS = get_ci_test_range([(1, 1), (4, 1), (8, 2), (16, 8), (32, 8), (64, 8)], [(8, 1), (32, 8)])
# (head_dim, rope_dim): full rotary, partial rotary, odd chunk counts (80: 5 chunks of 16 B at
# fp16), small and large dims, and rope_dim with narrow vectors (34: 2-byte NeoX chunks).
DIMS = get_ci_test_range(
    [
        (64, 64),
        (128, 128),
        (256, 256),
        (512, 512),
        (128, 64),
        (128, 96),
        (80, 80),
        (64, 32),
        (256, 64),
        (128, 34),
        (96, 2),
    ],
    [(128, 128), (64, 64), (128, 64), (80, 80), (128, 34)],
)
MAX_POSITION = 4096
TOLERANCES = references.ROUNDED_TOL
make_cos_sin_cache = references.make_cos_sin_cache


def reference(x: torch.Tensor, cache: torch.Tensor, positions: torch.Tensor, is_neox: bool):
    """Rotated copy of x [T, H, D] (its dtype); tokens with out-of-range positions unchanged."""
    return references.rope(x, cache, positions, is_neox).to(x.dtype)


def assert_close(actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    torch.testing.assert_close(
        actual, expected, **TOLERANCES[actual.dtype], msg=lambda m: f"{what}: {m}"
    )


def fused_qkv(num_tokens, hq, hk, head_dim, dtype):
    """A [T, (hq + 2 hk) * D] buffer and its q, k, v views (the common serving layout)."""
    qkv = torch.randn(num_tokens, (hq + 2 * hk) * head_dim, dtype=dtype, device="cuda")
    q = qkv[:, : hq * head_dim].view(num_tokens, hq, head_dim)
    k = qkv[:, hq * head_dim : (hq + hk) * head_dim].view(num_tokens, hk, head_dim)
    v = qkv[:, (hq + hk) * head_dim :]
    return qkv, q, k, v


def run_and_check(q, k, cache, positions, is_neox, what, v=None, **kwargs) -> None:
    expected_q = reference(q, cache, positions, is_neox)
    expected_k = reference(k, cache, positions, is_neox)
    v_before = None if v is None else v.clone()
    assert apply_rope_inplace(q, k, cache, positions, is_neox=is_neox, **kwargs) is None
    assert_close(q, expected_q, f"q {what}")
    assert_close(k, expected_k, f"k {what}")
    if v is not None:
        assert torch.equal(v, v_before), f"v (guard) changed: {what}"


# ---------------------------------------------------------------- results


@pytest.mark.parametrize("is_neox", [True, False])
@pytest.mark.parametrize("head_dim,rope_dim", DIMS)
@pytest.mark.parametrize("hq,hk", HEADS)
@pytest.mark.parametrize("num_tokens", NUM_TOKENS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_rope_matches_reference(dtype, num_tokens, hq, hk, head_dim, rope_dim, is_neox) -> None:
    _, q, k, v = fused_qkv(num_tokens, hq, hk, head_dim, dtype)
    cache = make_cos_sin_cache(MAX_POSITION, rope_dim)
    positions = torch.randint(0, MAX_POSITION, (num_tokens,), device="cuda")
    what = f"{dtype} T={num_tokens} hq={hq} hk={hk} D={head_dim} rope={rope_dim} neox={is_neox}"
    run_and_check(q, k, cache, positions, is_neox, what, v=v)


# Launch plans (docs/kernels/rope.md): the lean plan (one thread per chunk, head and token; block
# (chunks, heads), grid (tokens, head blocks)) takes GPT-J and NeoX below 2**21 (token, head)
# pairs, the looping plan NeoX at or above it and any call whose lean grid would have more than
# 65535 head blocks. NeoX calls of at most 8192 pairs take 8-byte vectors, larger ones 16-byte;
# lean calls of at most 8192 pairs load cos/sin plainly, larger ones evict-last in L2.
# At fp32, 128 chunks per head (NeoX head_dim 1024, GPT-J 512) fill a lean block, so the grid's
# limit is 65535 heads. The other tests are mostly lean.
PLAN_CASES = [
    # (tokens, hq, hk, head_dim, is_neox, dtype): NeoX at exactly 2**21 pairs, more tokens than
    # one wave of the persistent grid
    (65536, 24, 8, 16, True, torch.bfloat16),
    (1, 60000, 5536, 1024, True, torch.float32),  # 65536 head blocks: beyond the lean grid
    (1, 65535, 0, 1024, True, torch.float32),  # 65535 head blocks: the largest lean grid
    (1, 65536, 0, 512, False, torch.float32),
    (1, 65000, 535, 512, False, torch.float32),
    (2, 60000, 10000, 8, True, torch.bfloat16),  # 70000 small heads: 547 lean head blocks
    (256, 24, 8, 128, True, torch.bfloat16),  # 8192 pairs: 8-byte vectors
    (257, 24, 8, 128, True, torch.bfloat16),  # 8224 pairs: 16-byte vectors
    (256, 24, 8, 128, False, torch.bfloat16),  # 8192 pairs: plain cos/sin loads
    (257, 24, 8, 128, False, torch.bfloat16),  # 8224 pairs: evict-last cos/sin loads
    (5, 18, 0, 128, True, torch.float16),  # 18 heads over 3 head blocks of 6
]


@pytest.mark.parametrize("tokens,hq,hk,head_dim,is_neox,dtype", PLAN_CASES)
def test_rope_plan_boundaries(tokens, hq, hk, head_dim, is_neox, dtype) -> None:
    _, q, k, v = fused_qkv(tokens, hq, hk, head_dim, dtype)
    cache = make_cos_sin_cache(MAX_POSITION, head_dim)
    positions = torch.randint(0, MAX_POSITION, (tokens,), device="cuda")
    what = f"{dtype} T={tokens} hq={hq} hk={hk} D={head_dim} neox={is_neox}"
    run_and_check(q, k, cache, positions, is_neox, what, v=v)


@pytest.mark.parametrize("is_neox", [True, False])
@pytest.mark.parametrize("pos_dtype", [torch.int32, torch.int64])
def test_rope_position_dtypes_and_strides(pos_dtype, is_neox) -> None:
    _, q, k, v = fused_qkv(300, 16, 4, 128, torch.bfloat16)
    cache = make_cos_sin_cache(MAX_POSITION, 128)
    spread = torch.randint(0, MAX_POSITION, (600,), dtype=pos_dtype, device="cuda")
    positions = spread[::2]
    assert positions.stride(0) == 2
    run_and_check(q, k, cache, positions, is_neox, f"{pos_dtype} strided positions", v=v)


@pytest.mark.parametrize("is_neox", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
def test_rope_padded_head_stride(dtype, is_neox) -> None:
    """Heads of a [T, H, D + 16] buffer: head stride != D; the padding must stay unchanged."""
    buf = torch.randn(65, 12, 128 + 16, dtype=dtype, device="cuda")
    q = buf[:, :8, :128]
    k = buf[:, 8:, :128]
    pad = buf[..., 128:].clone()
    cache = make_cos_sin_cache(MAX_POSITION, 64)
    positions = torch.randint(0, MAX_POSITION, (65,), device="cuda")
    run_and_check(q, k, cache, positions, is_neox, f"{dtype} padded heads")
    assert torch.equal(buf[..., 128:], pad), "the padding after each head changed"


@pytest.mark.parametrize(
    "dtype,offset,is_neox",
    [
        (torch.float16, 1, True),  # 2-byte vectors
        (torch.bfloat16, 2, False),  # 4-byte vectors: one (even, odd) pair each
        (torch.float16, 4, True),  # 8-byte vectors
        (torch.float32, 1, True),  # 4-byte vectors
        (torch.float32, 2, False),  # 8-byte vectors: one pair each
    ],
)
def test_rope_misaligned_views(dtype, offset: int, is_neox: bool) -> None:
    num_tokens, hq, hk, head_dim = 33, 4, 2, 64
    flat = torch.randn(num_tokens * (hq + hk) * head_dim + offset + 8, dtype=dtype, device="cuda")
    body = flat[offset : offset + num_tokens * (hq + hk) * head_dim].view(num_tokens, hq + hk, -1)
    q, k = body[:, :hq], body[:, hq:]
    guard_before = flat[:offset].clone()
    guard_after = flat[offset + body.numel() :].clone()
    cache = make_cos_sin_cache(MAX_POSITION, head_dim)
    positions = torch.randint(0, MAX_POSITION, (num_tokens,), device="cuda")
    run_and_check(q, k, cache, positions, is_neox, f"{dtype} offset {offset}")
    assert torch.equal(flat[:offset], guard_before) and torch.equal(
        flat[offset + body.numel() :], guard_after
    ), "elements outside the views changed"


# Decode calls (at most 8192 (token, head) pairs) with rope_dim 64 or 128 take the decode kernel
# (compile-time rotary size), other rope_dims the lean kernel; both check positions.
@pytest.mark.parametrize("is_neox", [True, False])
@pytest.mark.parametrize("pos_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("head_dim,rope_dim", [(128, 128), (128, 64), (96, 96)])
def test_rope_out_of_range_positions_leave_tokens_unchanged(
    head_dim, rope_dim, pos_dtype, is_neox
) -> None:
    _, q, k, v = fused_qkv(10, 8, 2, head_dim, torch.float16)
    cache = make_cos_sin_cache(100, rope_dim)
    positions = torch.randint(0, 100, (10,), dtype=pos_dtype, device="cuda")
    outside = [-1, 100, 2**31 - 1, -(2**31)]
    if pos_dtype == torch.int64:
        outside[2:] = [2**40, -(2**40)]
    positions[[1, 4, 7, 9]] = torch.tensor(outside, dtype=pos_dtype, device="cuda")
    positions[2] = 99  # the last row of the cache
    q_before, k_before = q.clone(), k.clone()
    what = f"out-of-range {pos_dtype} positions, rope_dim {rope_dim}, neox={is_neox}"
    run_and_check(q, k, cache, positions, is_neox, what, v=v)
    for t in (1, 4, 7, 9):
        assert torch.equal(q[t], q_before[t]) and torch.equal(k[t], k_before[t])


@pytest.mark.parametrize("is_neox", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("offset", [1, 2])
def test_rope_cos_sin_cache_at_an_offset(offset: int, dtype, is_neox: bool) -> None:
    """A cache view 4 or 8 bytes past a 16-byte boundary: narrower cos/sin loads. Decode calls
    whose chunks need 16-byte loads leave the decode kernel for the lean one (fp32 chunks of 8
    bytes stay at offset 2)."""
    rope_dim = 128
    flat = torch.zeros(MAX_POSITION * rope_dim + offset, device="cuda")
    flat[offset:] = make_cos_sin_cache(MAX_POSITION, rope_dim).flatten()
    cache = flat[offset:].view(MAX_POSITION, rope_dim)
    assert cache.data_ptr() % 16 == 4 * offset
    _, q, k, v = fused_qkv(16, 32, 8, rope_dim, dtype)
    positions = torch.randint(0, MAX_POSITION, (16,), device="cuda")
    run_and_check(q, k, cache, positions, is_neox, f"{dtype} cache offset {offset}", v=v)


def test_rope_explicit_rope_dim_and_empty_inputs() -> None:
    _, q, k, v = fused_qkv(17, 4, 4, 128, torch.bfloat16)
    cache = make_cos_sin_cache(MAX_POSITION, 64)
    positions = torch.randint(0, MAX_POSITION, (17,), device="cuda")
    run_and_check(q, k, cache, positions, False, "rope_dim=64", v=v, rope_dim=64)
    run_and_check(q, k, cache, positions, False, "rope_dim=0", v=v, rope_dim=0)
    # No tokens, and no k heads: nothing to do, nothing launched.
    _, q0, k0, _ = fused_qkv(0, 4, 4, 128, torch.bfloat16)
    apply_rope_inplace(q0, k0, cache, positions[:0], is_neox=True)
    _, q1, k1, _ = fused_qkv(5, 4, 0, 128, torch.bfloat16)
    run_and_check(q1, k1, cache, positions[:5], True, "no k heads")
    torch.cuda.synchronize()


def test_rope_uses_the_current_stream() -> None:
    _, q, k, _ = fused_qkv(4096, 32, 8, 128, torch.bfloat16)
    cache = make_cos_sin_cache(MAX_POSITION, 128)
    positions = torch.randint(0, MAX_POSITION, (4096,), device="cuda")
    expected_q = reference(q, cache, positions, True)
    stream = torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        apply_rope_inplace(q, k, cache, positions, is_neox=True)
    stream.synchronize()
    assert_close(q, expected_q, "q on a side stream")


@pytest.mark.parametrize("is_neox", [True, False])
def test_rope_cuda_graph_replay(is_neox: bool) -> None:
    qkv, q, k, v = fused_qkv(64, 16, 4, 128, torch.bfloat16)
    cache = make_cos_sin_cache(MAX_POSITION, 128)
    positions = torch.randint(0, MAX_POSITION, (64,), device="cuda")
    apply_rope_inplace(q, k, cache, positions, is_neox=is_neox)  # warm-up before capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        apply_rope_inplace(q, k, cache, positions, is_neox=is_neox)
    for _ in range(3):
        qkv.copy_(torch.randn_like(qkv))
        positions.copy_(torch.randint(0, MAX_POSITION, (64,), device="cuda"))
        expected_q = reference(q, cache, positions, is_neox)
        expected_k = reference(k, cache, positions, is_neox)
        v_before = v.clone()
        graph.replay()
        torch.cuda.synchronize()
        assert_close(q, expected_q, "q after replay")
        assert_close(k, expected_k, "k after replay")
        assert torch.equal(v, v_before)


@pytest.mark.parametrize("is_neox", [True, False])
@pytest.mark.parametrize("capture", [False, True], ids=["eager", "graph"])
def test_rope_dependent_calls_back_to_back(capture: bool, is_neox: bool) -> None:
    """Calls that rotate the previous call's output again, with no host sync in between (the lean
    plan releases the next kernel before its PDL wait): each must see all of its predecessor."""
    calls = 8
    _, q, k, _ = fused_qkv(16, 32, 8, 128, torch.bfloat16)
    cache = make_cos_sin_cache(MAX_POSITION, 128)
    positions = torch.randint(0, MAX_POSITION, (16,), device="cuda")
    expected = {"q": q.clone(), "k": k.clone()}
    for _ in range(calls):
        expected = {name: reference(x, cache, positions, is_neox) for name, x in expected.items()}
    apply_rope_inplace(q.clone(), k.clone(), cache, positions, is_neox=is_neox)  # load the module
    torch.cuda.synchronize()

    def run() -> None:
        for _ in range(calls):
            apply_rope_inplace(q, k, cache, positions, is_neox=is_neox)

    run_once(run, in_graph=capture)
    tolerance = {name: calls * value for name, value in TOLERANCES[q.dtype].items()}
    for name, actual in (("q", q), ("k", k)):
        torch.testing.assert_close(
            actual,
            expected[name],
            **tolerance,
            msg=lambda m, name=name: f"{name} after {calls} dependent calls: {m}",
        )


def test_rope_more_than_2_pow_31_elements() -> None:
    """q of 2**31 + 3 * 2**14 elements (4.3 GB bf16): 64-bit token offsets."""
    hq, head_dim = 128, 128
    num_tokens = (1 << 31) // (hq * head_dim) + 3
    q = torch.empty(num_tokens, hq, head_dim, dtype=torch.bfloat16, device="cuda")
    k = torch.randn(num_tokens, 1, head_dim, dtype=torch.bfloat16, device="cuda")
    cache = make_cos_sin_cache(MAX_POSITION, head_dim)
    positions = torch.randint(0, MAX_POSITION, (num_tokens,), device="cuda")
    sample = [0, 1, num_tokens // 2, num_tokens - 4, num_tokens - 3, num_tokens - 2, num_tokens - 1]
    q[sample] = torch.randn(len(sample), hq, head_dim, dtype=torch.bfloat16, device="cuda")
    before_q, before_k = q[sample].clone(), k[sample].clone()
    apply_rope_inplace(q, k, cache, positions, is_neox=True)
    assert_close(q[sample], reference(before_q, cache, positions[sample], True), "q (large)")
    assert_close(k[sample], reference(before_k, cache, positions[sample], True), "k (large)")


def test_can_use_apply_rope_inplace() -> None:
    assert can_use_apply_rope_inplace(128, 128, torch.bfloat16)
    assert can_use_apply_rope_inplace(128, 64, torch.float32)
    assert can_use_apply_rope_inplace(2048, 1024, torch.float16)
    assert not can_use_apply_rope_inplace(128, 127, torch.float16)
    assert not can_use_apply_rope_inplace(64, 128, torch.float16)
    assert not can_use_apply_rope_inplace(2048, 1026, torch.float16)
    assert not can_use_apply_rope_inplace(128, 128, torch.float64)
    assert not can_use_apply_rope_inplace(128, 0, torch.float16)


# ---------------------------------------------------------------- errors


def good_args(dtype=torch.float16, num_tokens=8, hq=4, hk=2, head_dim=64, rope_dim=64):
    _, q, k, _ = fused_qkv(num_tokens, hq, hk, head_dim, dtype)
    cache = make_cos_sin_cache(64, rope_dim)
    positions = torch.randint(0, 64, (num_tokens,), device="cuda")
    return [q, k, cache, positions]


def assert_still_works() -> None:
    q, k, cache, positions = good_args()
    run_and_check(q, k, cache, positions, True, "after an error")


def _bad_inputs():
    """(name, arguments, keyword arguments, message) for each malformed input C++ rejects."""
    cases = []

    def with_arg(index, value, **kwargs):
        args = good_args(**kwargs)
        args[index] = value
        return args

    cases.append(
        (
            "k dtype",
            with_arg(1, torch.randn(8, 2, 64, dtype=torch.bfloat16, device="cuda")),
            {},
            "apply_rope_inplace: tensor 'k' dtype mismatch: expected float16 but got bfloat16",
        )
    )
    cases.append(
        (
            "cache dtype",
            with_arg(2, make_cos_sin_cache(64, 64).half()),
            {},
            "apply_rope_inplace: tensor 'cos_sin_cache' dtype mismatch: expected float32 but got "
            "float16",
        )
    )
    cases.append(
        (
            "cache not contiguous",
            with_arg(2, make_cos_sin_cache(64, 128)[:, :64]),
            {},
            "apply_rope_inplace: tensor 'cos_sin_cache' must be contiguous but has strides [128, 1]",
        )
    )
    cases.append(
        (
            "odd rope_dim",
            with_arg(2, torch.randn(64, 63, device="cuda")),
            {},
            "apply_rope_inplace: tensor 'cos_sin_cache' has rope_dim = size(1) = 63; it must be "
            "even and in [2, 1024]",
        )
    )
    cases.append(
        (
            "rope_dim > head_dim",
            with_arg(2, make_cos_sin_cache(64, 128)),
            {},
            "apply_rope_inplace: rope_dim 128 (cos_sin_cache.size(1)) exceeds head_dim 64",
        )
    )
    cases.append(
        (
            "rope_dim > 1024",
            [
                torch.randn(2, 1, 1030, dtype=torch.float16, device="cuda"),
                torch.randn(2, 1, 1030, dtype=torch.float16, device="cuda"),
                torch.randn(4, 1026, device="cuda"),
                torch.zeros(2, dtype=torch.int64, device="cuda"),
            ],
            {},
            "has rope_dim = size(1) = 1026; it must be even and in [2, 1024]",
        )
    )
    cases.append(
        (
            "rope_dim argument",
            good_args(),
            {"rope_dim": 32},
            "apply_rope_inplace: rope_dim=32 does not match cos_sin_cache.size(1) = 64",
        )
    )
    cases.append(
        (
            "positions length",
            with_arg(3, torch.zeros(9, dtype=torch.int64, device="cuda")),
            {},
            "apply_rope_inplace: tensor 'positions' shape mismatch at dim 0 ('num_tokens'): "
            "expected 8 (bound by 'q') but got 9",
        )
    )
    cases.append(
        (
            "positions dtype",
            with_arg(3, torch.zeros(8, dtype=torch.float32, device="cuda")),
            {},
            "apply_rope_inplace: tensor 'positions' dtype mismatch: expected one of [int32, "
            "int64] but got float32",
        )
    )
    cases.append(
        (
            "head_dim mismatch",
            with_arg(1, torch.randn(8, 2, 128, dtype=torch.float16, device="cuda")),
            {},
            "apply_rope_inplace: tensor 'k' shape mismatch at dim 2 ('head_dim'): expected 64 "
            "(bound by 'q') but got 128",
        )
    )
    cases.append(
        (
            "k rank",
            with_arg(1, torch.randn(8, 128, dtype=torch.float16, device="cuda")),
            {},
            "apply_rope_inplace: tensor 'k' rank mismatch: expected 3 dims",
        )
    )
    cases.append(
        (
            "last stride",
            with_arg(0, torch.randn(8, 4, 128, dtype=torch.float16, device="cuda")[..., ::2]),
            {},
            "apply_rope_inplace: tensor 'q' stride mismatch at dim 2: expected 1 but got 2",
        )
    )
    cases.append(
        (
            "q overlaps itself",
            with_arg(0, torch.randn(8, 1, 64, dtype=torch.float16, device="cuda").expand(8, 4, 64)),
            {},
            "apply_rope_inplace: tensor 'q' has internal overlap",
        )
    )
    cases.append(
        (
            "GPT-J at an odd offset",
            with_arg(
                0,
                torch.randn(8 * 4 * 64 + 1, dtype=torch.float16, device="cuda")[1:].view(8, 4, 64),
            ),
            {"is_neox": False},
            "apply_rope_inplace: GPT-J style (is_neox=False) rotates (even, odd) element pairs "
            "and needs the data addresses and strides of q and k in multiples of 4 bytes",
        )
    )
    cases.append(
        (
            "k on the CPU",
            with_arg(1, torch.randn(8, 2, 64, dtype=torch.float16)),
            {},
            "apply_rope_inplace: tensor 'k' device mismatch: expected cuda but got cpu:0",
        )
    )
    return cases


def test_rope_bad_inputs_raise_clear_errors() -> None:
    for name, args, kwargs, message in _bad_inputs():
        kwargs = {"is_neox": True, **kwargs}
        try:
            with pytest.raises(RuntimeError, match=re.escape(message)):
                apply_rope_inplace(*args, **kwargs)
        except (AssertionError, pytest.fail.Exception) as failure:
            raise AssertionError(f"bad input {name!r}: {failure}") from None
        assert_still_works()


def test_rope_cpu_and_unsupported_dtype_errors() -> None:
    q, k, cache, positions = good_args()
    with pytest.raises(
        RuntimeError,
        match=r"apply_rope_inplace: (q must be a CUDA tensor, got device cpu|"
        r"tensor 'q' device mismatch: expected cuda but got cpu)",
    ):
        apply_rope_inplace(q.cpu(), k, cache, positions, is_neox=True)
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "apply_rope_inplace: q has dtype float64; supported: float16, bfloat16, float32"
        ),
    ):
        apply_rope_inplace(q.double(), k.double(), cache, positions, is_neox=True)
    assert_still_works()


@pytest.mark.parametrize(
    "position,name", [(0, "q"), (1, "k"), (2, "cos_sin_cache"), (3, "positions")]
)
@pytest.mark.parametrize("bad", [[1, 2], None, 3.0])
def test_rope_rejects_non_tensor_arguments(position: int, name: str, bad) -> None:
    args = good_args()
    args[position] = bad
    with pytest.raises(
        TypeError,
        match=re.escape(
            f"apply_rope_inplace: {name} must be a torch.Tensor, got {type(bad).__name__}"
        ),
    ):
        apply_rope_inplace(*args, is_neox=True)
    assert_still_works()


def test_rope_rejects_bad_keyword_types() -> None:
    args = good_args()
    with pytest.raises(TypeError, match="apply_rope_inplace: is_neox must be a bool, got str"):
        apply_rope_inplace(*args, is_neox="yes")
    with pytest.raises(TypeError, match="apply_rope_inplace: is_neox must be a bool, got NoneType"):
        apply_rope_inplace(*args, is_neox=None)
    with pytest.raises(
        TypeError, match="apply_rope_inplace: rope_dim must be an int or None, got float"
    ):
        apply_rope_inplace(*args, is_neox=True, rope_dim=64.0)
    with pytest.raises(TypeError):
        apply_rope_inplace(*args)  # is_neox is required
    # tvm-ffi itself would read 1 as True and True as 1: the wrapper refuses both.
    for is_neox in (1, 0):
        with pytest.raises(
            TypeError,
            match=f"apply_rope_inplace: is_neox must be a bool, got {type(is_neox).__name__}",
        ):
            apply_rope_inplace(*args, is_neox=is_neox)
    for rope_dim in (True, False, 0.0):
        with pytest.raises(
            TypeError,
            match=f"apply_rope_inplace: rope_dim must be an int or None, got {type(rope_dim).__name__}",
        ):
            apply_rope_inplace(*args, is_neox=True, rope_dim=rope_dim)
    assert_still_works()


def test_module_direct_call_errors() -> None:
    module = _jit_rope_module()
    q, k, cache, positions = good_args(dtype=torch.float32)
    with pytest.raises(
        RuntimeError, match=re.escape("tensor 'k' dtype mismatch: expected float16 but got float32")
    ):  # the export takes q's dtype (float16) and checks every other tensor against it
        module.apply_rope_inplace(q.half(), k, cache, positions, True, 0)
    with pytest.raises(
        RuntimeError, match=re.escape("apply_rope_inplace: q has dtype float64; supported: ")
    ):
        module.apply_rope_inplace(q.double(), k.double(), cache, positions, True, 0)
    assert math.isfinite(float(q.sum()))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
