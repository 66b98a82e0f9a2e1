"""store_cache(k, v, k_cache, v_cache, indices): exact row scatter, guards, layouts and errors.

The reference is torch indexing on byte views (``cache.view(uint8)[indices] = k.view(uint8)``):
the kernel copies bytes, so every comparison is exact equality of bytes, over the WHOLE cache
buffer (rows that no index names, and padding between strided rows, are guards that must keep
their random bytes).
"""

import re
import sys

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)
import torch

from ci_runner import register_cuda_ci
from jit_kernel.env import get_ci_test_range
from testing.skip import skip_module_unless

register_cuda_ci(est_time=12, suite="base-b-kernel-unit-1-gpu-large")
register_cuda_ci(est_time=15, suite="nightly-kernel-1-gpu", nightly=True)

skip_module_unless(torch.cuda.is_available(), "store_cache tests need a CUDA GPU")

from jit_kernel.store_cache import (  # noqa: E402
    _jit_store_cache_module,
    can_use_store_cache,
    store_cache,
)

DTYPES = get_ci_test_range(
    [torch.float16, torch.bfloat16, torch.float32, torch.int8, torch.float8_e4m3fn, torch.uint8],
    [torch.float16, torch.bfloat16, torch.float32, torch.int8, torch.float8_e4m3fn],
)
# Rows 1, odd, around a block of 256 threads (8 warps), and large.
NUM_ROWS = get_ci_test_range(
    [1, 2, 7, 31, 32, 33, 255, 256, 1023, 4099, 16384 + 7], [1, 9, 256, 4099]
)
# Row elements: 16-byte multiples for 2-byte dtypes (64..1024), 98 (196 B at fp16: 4-byte
# vectors), 100 (8-byte vectors), 96, and odd sizes (1, 3, 33: 1- or 2-byte vectors).
ROW_ELEMS = get_ci_test_range([1, 3, 33, 64, 96, 98, 100, 128, 512, 1024], [3, 64, 98, 512, 1024])
INDEX_DTYPES = [torch.int32, torch.int64]


def random_bytes(*shape: int, dtype: torch.dtype) -> torch.Tensor:
    """A tensor of ``shape`` and ``dtype`` filled with random bytes (NaN patterns included)."""
    size = torch.empty(0, dtype=dtype).element_size()
    raw = torch.randint(0, 256, (*shape[:-1], shape[-1] * size), dtype=torch.uint8, device="cuda")
    return raw.view(dtype)


def as_bytes(t: torch.Tensor) -> torch.Tensor:
    """A contiguous tensor's bytes, shape [rows, row_bytes]."""
    assert t.is_contiguous()
    return t.reshape(t.shape[0], -1).view(torch.uint8)


def reference(cache: torch.Tensor, rows: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    """A copy of the contiguous ``cache`` with ``cache[i] = rows[j]`` for in-range unique i."""
    expected = as_bytes(cache).clone()
    idx = indices.to(torch.int64)
    keep = (idx >= 0) & (idx < cache.shape[0])
    expected[idx[keep]] = rows.reshape(rows.shape[0], -1).contiguous().view(torch.uint8)[keep]
    return expected


def assert_bytes_equal(actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    """Exact equality; on failure name the first differing row and byte."""
    if torch.equal(actual, expected):
        return
    diff = (actual != expected).nonzero()
    row, col = diff[0].tolist()[:2] if diff.shape[1] >= 2 else (diff[0].item(), 0)
    raise AssertionError(
        f"{what}: {diff.shape[0]} bytes differ; first at row {row} byte {col}: "
        f"got {actual[row].flatten()[col].item()}, expected {expected[row].flatten()[col].item()}"
    )


def make_case(num_rows, k_elems, v_elems, dtype, num_slots, index_dtype, v_dtype=None):
    v_dtype = dtype if v_dtype is None else v_dtype
    k = random_bytes(num_rows, k_elems, dtype=dtype)
    v = random_bytes(num_rows, v_elems, dtype=v_dtype)
    k_cache = random_bytes(num_slots, k_elems, dtype=dtype)
    v_cache = random_bytes(num_slots, v_elems, dtype=v_dtype)
    indices = torch.randperm(num_slots, device="cuda")[:num_rows].to(index_dtype)
    return k, v, k_cache, v_cache, indices


def run_and_check(k, v, k_cache, v_cache, indices, **kwargs) -> None:
    expected_k = reference(k_cache, k, indices)
    expected_v = reference(v_cache, v, indices)
    store_cache(k, v, k_cache, v_cache, indices, **kwargs)
    assert_bytes_equal(as_bytes(k_cache), expected_k, f"k_cache (k {tuple(k.shape)} {k.dtype})")
    assert_bytes_equal(as_bytes(v_cache), expected_v, f"v_cache (v {tuple(v.shape)} {v.dtype})")


# ---------------------------------------------------------------- results


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("row_elems", ROW_ELEMS)
@pytest.mark.parametrize("num_rows", NUM_ROWS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_store_cache_matches_reference(dtype, num_rows, row_elems, index_dtype) -> None:
    # The cache has more than twice as many rows as are written: the others are guards.
    case = make_case(num_rows, row_elems, row_elems, dtype, 2 * num_rows + 5, index_dtype)
    run_and_check(*case)


# 16-byte copies of at most 2^15 vectors take the decode plan (StoreCacheConfig): 128 rows of
# 1024 fp16 elements (k + v: 256 vectors a row) is the last such batch, 129 rows the first not.
@pytest.mark.parametrize("num_rows", [127, 128, 129])
@pytest.mark.parametrize("checked", [False, True])
def test_store_cache_on_both_sides_of_the_decode_plan(num_rows, checked) -> None:
    case = make_case(num_rows, 1024, 1024, torch.float16, 2 * num_rows + 5, torch.int64)
    run_and_check(*case, checked=checked)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_store_cache_strided_rows_keep_the_padding(index_dtype) -> None:
    """k/v rows of a wider buffer; caches whose row stride leaves a padded gap between rows."""
    num_rows, num_slots, elems = 37, 101, 96
    k_buf = random_bytes(num_rows, elems + 8, dtype=torch.bfloat16)
    v_buf = random_bytes(num_rows, elems + 24, dtype=torch.bfloat16)
    kc_buf = random_bytes(num_slots, elems + 40, dtype=torch.bfloat16)
    vc_buf = random_bytes(num_slots, elems + 8, dtype=torch.bfloat16)
    k, v = k_buf[:, :elems], v_buf[:, 8 : 8 + elems]
    k_cache, v_cache = kc_buf[:, 16 : 16 + elems], vc_buf[:, :elems]
    indices = torch.randperm(num_slots, device="cuda")[:num_rows].to(index_dtype)
    expected_kc = as_bytes(kc_buf).clone().view(num_slots, -1, 2)
    expected_vc = as_bytes(vc_buf).clone().view(num_slots, -1, 2)
    expected_kc[indices.long(), 16 : 16 + elems] = (
        k.contiguous().view(torch.uint8).view(num_rows, elems, 2)
    )
    expected_vc[indices.long(), :elems] = v.contiguous().view(torch.uint8).view(num_rows, elems, 2)
    store_cache(k, v, k_cache, v_cache, indices)
    assert_bytes_equal(as_bytes(kc_buf), expected_kc.view(num_slots, -1), "k_cache buffer")
    assert_bytes_equal(as_bytes(vc_buf), expected_vc.view(num_slots, -1), "v_cache buffer")


def test_store_cache_three_dim_rows() -> None:
    """k [rows, heads, head_dim] into a cache [slots, heads, head_dim]."""
    k, v, k_cache, v_cache, indices = make_case(
        65, 8 * 128, 8 * 128, torch.float16, 300, torch.int64
    )
    k3, v3 = k.view(65, 8, 128), v.view(65, 8, 128)
    kc3, vc3 = k_cache.view(300, 8, 128), v_cache.view(300, 8, 128)
    expected_k = reference(k_cache, k, indices)
    expected_v = reference(v_cache, v, indices)
    store_cache(k3, v3, kc3, vc3, indices)
    assert_bytes_equal(as_bytes(k_cache), expected_k, "k_cache")
    assert_bytes_equal(as_bytes(v_cache), expected_v, "v_cache")


@pytest.mark.parametrize("offset", [1, 2, 3])
def test_store_cache_misaligned_views(offset: int) -> None:
    """Views at an element offset force narrow vectors; results stay exact, neighbours intact."""
    num_rows, num_slots, elems = 19, 61, 128
    k_flat = random_bytes(num_rows * elems + offset, dtype=torch.float16)
    kc_flat = random_bytes(num_slots * elems + offset + 1, dtype=torch.float16)
    v = random_bytes(num_rows, elems, dtype=torch.float16)
    v_cache = random_bytes(num_slots, elems, dtype=torch.float16)
    k = k_flat[offset:].view(num_rows, elems)
    k_cache = kc_flat[offset : offset + num_slots * elems].view(num_slots, elems)
    indices = torch.randperm(num_slots, device="cuda")[:num_rows]
    expected = kc_flat.view(torch.uint8).clone()
    start = offset * 2
    body = expected[start : start + num_slots * elems * 2].view(num_slots, elems * 2)
    body[indices] = k.contiguous().view(torch.uint8)
    expected_v = reference(v_cache, v, indices)
    store_cache(k, v, k_cache, v_cache, indices)
    assert_bytes_equal(kc_flat.view(torch.uint8).view(1, -1), expected.view(1, -1), "k_cache")
    assert_bytes_equal(as_bytes(v_cache), expected_v, "v_cache")


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_store_cache_strided_indices(index_dtype) -> None:
    k, v, k_cache, v_cache, _ = make_case(50, 64, 64, torch.bfloat16, 400, index_dtype)
    spread = torch.randperm(400, device="cuda")[:150].to(index_dtype)
    indices = spread[::3]
    assert indices.stride(0) == 3
    run_and_check(k, v, k_cache, v_cache, indices)


def test_store_cache_different_k_and_v_dtypes_and_sizes() -> None:
    """An fp8 k of 576 elements with a bf16 v of 512 (MLA-like asymmetric rows)."""
    case = make_case(129, 576, 512, torch.float8_e4m3fn, 1000, torch.int64, v_dtype=torch.bfloat16)
    run_and_check(*case)


def test_store_cache_out_of_range_rows_are_skipped() -> None:
    num_rows, num_slots = 8, 50
    k, v, k_cache, v_cache, indices = make_case(
        num_rows, 64, 64, torch.float16, num_slots, torch.int64
    )
    indices[1] = -1
    indices[4] = num_slots
    indices[6] = -num_slots
    indices[7] = 2**40
    run_and_check(k, v, k_cache, v_cache, indices)  # the reference skips the same rows


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_store_cache_checked_raises_naming_the_first_bad_index(index_dtype) -> None:
    num_rows, num_slots = 10, 1000
    k, v, k_cache, v_cache, indices = make_case(
        num_rows, 128, 128, torch.bfloat16, num_slots, index_dtype
    )
    indices[7] = -5
    indices[3] = num_slots  # the first bad row
    expected_k = reference(k_cache, k, indices)
    expected_v = reference(v_cache, v, indices)
    message = (
        "store_cache: indices[3] = 1000 is out of range for k_cache/v_cache with 1000 rows "
        "(valid: 0 <= index < 1000) and 1 more out-of-range indices; rows with in-range "
        "indices were stored, the others were skipped"
    )
    with pytest.raises(RuntimeError, match=re.escape(message)):
        store_cache(k, v, k_cache, v_cache, indices, checked=True)
    # The in-range rows were stored and nothing else changed.
    assert_bytes_equal(as_bytes(k_cache), expected_k, "k_cache after the error")
    assert_bytes_equal(as_bytes(v_cache), expected_v, "v_cache after the error")
    # The context is still usable.
    good = make_case(5, 64, 64, torch.float16, 20, index_dtype)
    run_and_check(*good, checked=True)


def test_store_cache_checked_single_bad_index_message() -> None:
    k, v, k_cache, v_cache, indices = make_case(4, 32, 32, torch.float32, 7, torch.int32)
    indices[2] = -1
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "store_cache: indices[2] = -1 is out of range for k_cache/v_cache with 7 rows "
            "(valid: 0 <= index < 7); rows"
        ),
    ):
        store_cache(k, v, k_cache, v_cache, indices, checked=True)


@pytest.mark.parametrize(
    ("num_rows", "elems", "dtype"),
    [
        (1, 1024, torch.float32),  # 8 KiB k + v: 512 lanes, 4 blocks for one row
        (3, 4096, torch.float32),  # 32 KiB: 1024 lanes (the most), 2 vectors each
        (2, 20000, torch.float32),  # 160 KiB: 1024 lanes, two passes of 8 vectors
        (16, 1024, torch.bfloat16),  # a decode batch of 8 x 128 heads
        (64, 1024, torch.bfloat16),
        (5, 98, torch.float16),  # 4-byte vectors, 98 per row
    ],
)
def test_store_cache_decode_batches_spread_rows_over_blocks(num_rows, elems, dtype) -> None:
    """Few rows: each row is spread over more lanes (a group may span several blocks); every
    byte lands, an out-of-range row is skipped, and checked mode counts each bad row once."""
    case = make_case(num_rows, elems, elems, dtype, 4 * num_rows + 8, torch.int64)
    case[4][num_rows // 2] = -1
    run_and_check(*case)
    k, v, k_cache, v_cache, indices = make_case(
        num_rows + 1, elems, elems, dtype, 4 * num_rows + 8, torch.int64
    )
    indices[0] = -1
    indices[num_rows] = 10**6
    with pytest.raises(RuntimeError, match=r"indices\[0\] = -1 .* and 1 more out-of-range"):
        store_cache(k, v, k_cache, v_cache, indices, checked=True)


@pytest.mark.parametrize("num_rows", [1, 300])
def test_store_cache_checked_passes_good_input(num_rows: int) -> None:
    run_and_check(*make_case(num_rows, 256, 256, torch.bfloat16, 1000, torch.int64), checked=True)


def test_store_cache_duplicate_indices_take_each_element_from_one_writer() -> None:
    """Documented: a duplicated slot gets each element from one of the rows that name it."""
    num_rows, num_slots, elems = 64, 40, 512
    k, v, k_cache, v_cache, _ = make_case(
        num_rows, elems, elems, torch.int16, num_slots, torch.int64
    )
    indices = torch.arange(num_rows, device="cuda") % 8  # 8 writers per slot 0..7
    untouched_k = k_cache[8:].clone()
    untouched_v = v_cache[8:].clone()
    store_cache(k, v, k_cache, v_cache, indices)
    for slot in range(8):
        writers = (indices == slot).nonzero().flatten()
        for cache, src in ((k_cache, k), (v_cache, v)):
            from_a_writer = (cache[slot].unsqueeze(0) == src[writers]).any(dim=0)
            assert bool(from_a_writer.all()), f"slot {slot}: an element matches no writer row"
    assert torch.equal(k_cache[8:], untouched_k) and torch.equal(v_cache[8:], untouched_v)
    # A stride-0 index tensor (every row to one slot) behaves the same way.
    one = torch.tensor([5], device="cuda").expand(num_rows)
    store_cache(k, v, k_cache, v_cache, one)
    assert bool((k_cache[5].unsqueeze(0) == k).any(dim=0).all())


def test_store_cache_empty_inputs() -> None:
    k, v, k_cache, v_cache, indices = make_case(0, 64, 64, torch.float16, 10, torch.int64)
    before = k_cache.clone()
    store_cache(k, v, k_cache, v_cache, indices)
    store_cache(k, v, k_cache, v_cache, indices, checked=True)
    torch.cuda.synchronize()
    assert torch.equal(k_cache.view(torch.uint8), before.view(torch.uint8))


def test_store_cache_uses_the_current_stream() -> None:
    case = make_case(4096, 512, 512, torch.bfloat16, 10000, torch.int64)
    expected_k = reference(case[2], case[0], case[4])
    stream = torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        store_cache(*case)
    stream.synchronize()
    assert_bytes_equal(as_bytes(case[2]), expected_k, "k_cache")


def test_store_cache_cuda_graph_replay() -> None:
    num_rows, num_slots = 33, 500
    k, v, k_cache, v_cache, indices = make_case(
        num_rows, 1024, 1024, torch.bfloat16, num_slots, torch.int32
    )
    store_cache(k, v, k_cache, v_cache, indices)  # warm-up: the module exists before capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        store_cache(k, v, k_cache, v_cache, indices)
    for _ in range(3):
        new = make_case(num_rows, 1024, 1024, torch.bfloat16, num_slots, torch.int32)
        k.copy_(new[0])
        v.copy_(new[1])
        indices.copy_(new[4])
        expected_k = reference(k_cache, k, indices)
        expected_v = reference(v_cache, v, indices)
        graph.replay()
        torch.cuda.synchronize()
        assert_bytes_equal(as_bytes(k_cache), expected_k, "k_cache after replay")
        assert_bytes_equal(as_bytes(v_cache), expected_v, "v_cache after replay")


def test_store_cache_checked_refuses_graph_capture() -> None:
    k, v, k_cache, v_cache, indices = make_case(4, 64, 64, torch.float16, 10, torch.int64)
    store_cache(k, v, k_cache, v_cache, indices, checked=True)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with (
        pytest.raises(RuntimeError, match=r"checked=True .* cannot run inside CUDA graph capture"),
        torch.cuda.graph(graph),
    ):
        store_cache(k, v, k_cache, v_cache, indices, checked=True)
    torch.cuda.synchronize()
    run_and_check(*make_case(4, 64, 64, torch.float16, 10, torch.int64))


def test_store_cache_cache_larger_than_4_gib() -> None:
    """Byte offsets slot * row_stride past 2**32: 64-bit addressing (k_cache ~4.3 GB)."""
    num_slots, k_bytes, v_bytes = (1 << 22) + 9, 1024, 16
    k_cache = torch.empty(num_slots, k_bytes, dtype=torch.uint8, device="cuda")
    v_cache = torch.empty(num_slots, v_bytes, dtype=torch.uint8, device="cuda")
    slots = [num_slots - 1, num_slots - 2, (1 << 21) + 3, (1 << 22) + 1, 5, 0]
    guards = [num_slots - 3, (1 << 21) + 2, (1 << 21) + 4, (1 << 22), 4, 1]
    k_cache[guards] = 7
    v_cache[guards] = 7
    indices = torch.tensor(slots, dtype=torch.int64, device="cuda")
    k = random_bytes(len(slots), k_bytes, dtype=torch.uint8)
    v = random_bytes(len(slots), v_bytes, dtype=torch.uint8)
    store_cache(k, v, k_cache, v_cache, indices)
    assert torch.equal(k_cache[slots], k) and torch.equal(v_cache[slots], v)
    assert bool((k_cache[guards] == 7).all()) and bool((v_cache[guards] == 7).all())


def test_can_use_store_cache() -> None:
    assert can_use_store_cache(128) and can_use_store_cache(196) and can_use_store_cache(1)
    assert can_use_store_cache(1152, 1024) and can_use_store_cache(0, 16)
    assert not can_use_store_cache(0) and not can_use_store_cache(2**30)
    assert not can_use_store_cache(2**31 - 16, 16) and not can_use_store_cache(-1, 8)
    assert not can_use_store_cache(64.0) and not can_use_store_cache(True)


# ---------------------------------------------------------------- errors


CPU_K_ERROR = (
    r"store_cache: (k must be a CUDA tensor, got device cpu|"
    r"tensor 'k' device mismatch: expected cuda but got cpu)"
)


def test_store_cache_cpu_tensor_error() -> None:
    k, v, k_cache, v_cache, indices = make_case(4, 64, 64, torch.float16, 10, torch.int64)
    with pytest.raises(RuntimeError, match=CPU_K_ERROR):
        store_cache(k.cpu(), v, k_cache, v_cache, indices)
    with pytest.raises(
        RuntimeError,
        match=re.escape("store_cache: tensor 'v_cache' device mismatch: expected cuda:0"),
    ):
        store_cache(k, v, k_cache, v_cache.cpu(), indices)
    run_and_check(k, v, k_cache, v_cache, indices)


def _bad_inputs():
    """(name, arguments, message) for every malformed input the C++ checks catch."""
    f16 = torch.float16

    def base():
        return list(make_case(4, 64, 64, f16, 10, torch.int64))

    cases = []
    args = base()
    args[2] = random_bytes(10, 64, dtype=torch.bfloat16)
    cases.append(
        ("k_cache dtype", args, "tensor 'k_cache' dtype mismatch: expected float16 (bound by 'k')")
    )
    args = base()
    args[3] = random_bytes(10, 64, dtype=torch.float32)
    cases.append(
        ("v_cache dtype", args, "tensor 'v_cache' dtype mismatch: expected float16 (bound by 'v')")
    )
    args = base()
    args[2] = random_bytes(10, 32, dtype=f16)
    cases.append(
        (
            "k row size",
            args,
            "tensor 'k_cache' row size mismatch of dims 1.. ('k_row_elems'): expected 64 (bound by "
            "'k') but got 32",
        )
    )
    args = base()
    args[3] = random_bytes(10, 65, dtype=f16)
    cases.append(
        (
            "v row size",
            args,
            "tensor 'v_cache' row size mismatch of dims 1.. ('v_row_elems'): expected 64",
        )
    )
    args = base()
    args[1] = random_bytes(5, 64, dtype=f16)
    cases.append(
        (
            "v rows",
            args,
            "tensor 'v' shape mismatch at dim 0 ('num_rows'): expected 4 (bound by 'k')",
        )
    )
    args = base()
    args[3] = random_bytes(11, 64, dtype=f16)
    cases.append(
        (
            "cache rows",
            args,
            "tensor 'v_cache' shape mismatch at dim 0 ('num_slots'): expected 10 (bound by 'k_cache')",
        )
    )
    args = base()
    args[0] = random_bytes(4, 128, dtype=f16)[:, ::2]
    cases.append(
        (
            "k not dense",
            args,
            "tensor 'k' must have dense rows (dims 1.. contiguous) but dim 1 has stride 2",
        )
    )
    args = base()
    args[0] = random_bytes(4 * 64, dtype=f16)
    cases.append(
        (
            "k rank",
            args,
            "tensor 'k' rank mismatch: expected at least 2 dims [num_rows, ...] but got 1",
        )
    )
    args = base()
    args[4] = args[4].float()
    cases.append(
        (
            "indices dtype",
            args,
            "tensor 'indices' dtype mismatch: expected one of [int32, int64] but got float32",
        )
    )
    args = base()
    args[4] = args[4].view(2, 2)
    cases.append(("indices rank", args, "tensor 'indices' rank mismatch: expected 1 dims"))
    args = base()
    args[4] = args[4][:3]
    cases.append(
        (
            "indices length",
            args,
            "tensor 'indices' shape mismatch at dim 0 ('num_rows'): expected 4 (bound by 'k') "
            "but got 3",
        )
    )
    args = base()
    args[4] = args[4].cpu()
    cases.append(
        ("indices device", args, "tensor 'indices' device mismatch: expected cuda:0 (bound by 'k')")
    )
    return cases


@pytest.mark.parametrize("checked", [False, True])
def test_store_cache_bad_inputs_raise_clear_errors(checked: bool) -> None:
    for name, args, message in _bad_inputs():
        try:
            with pytest.raises(RuntimeError, match=re.escape("store_cache: " + message)):
                store_cache(*args, checked=checked)
        except (AssertionError, pytest.fail.Exception) as failure:
            raise AssertionError(f"bad input {name!r}: {failure}") from None
        # A good call right after the error still works.
        run_and_check(*make_case(3, 64, 64, torch.float16, 9, torch.int64))


@pytest.mark.parametrize(
    "position,name", [(0, "k"), (1, "v"), (2, "k_cache"), (3, "v_cache"), (4, "indices")]
)
@pytest.mark.parametrize("bad", [[1, 2], None, 3.0])
def test_store_cache_rejects_non_tensor_arguments(position: int, name: str, bad) -> None:
    args = list(make_case(4, 64, 64, torch.float16, 10, torch.int64))
    args[position] = bad
    with pytest.raises(
        TypeError,
        match=re.escape(f"store_cache: {name} must be a torch.Tensor, got {type(bad).__name__}"),
    ):
        store_cache(*args)
    run_and_check(*make_case(4, 64, 64, torch.float16, 10, torch.int64))


def test_module_checked_error_buffer_is_validated() -> None:
    module = _jit_store_cache_module()
    k, v, k_cache, v_cache, indices = make_case(4, 64, 64, torch.float16, 10, torch.int64)
    with pytest.raises(
        RuntimeError, match="tensor 'error' shape mismatch at dim 0: expected 2 but got 3"
    ):
        module.store_cache_checked(
            k, v, k_cache, v_cache, indices, torch.empty(3, dtype=torch.int64, device="cuda")
        )


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
