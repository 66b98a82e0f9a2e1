"""rmsnorm(input, weight, eps=1e-6, out=None) against a float32 torch reference.

Every launch plan (4/8/16/32 lanes x 2 packs, 32 lanes x 4 packs, one CTA of 64..512 threads x 4
packs), N = 1, odd N, large N, strided and offset row views, out= and in place, guard regions,
N * D beyond 2^31, CUDA-graph capture, and every bad input (each followed by a good call).

Tolerance: the kernel computes ``(x * rsqrt(mean(x^2) + eps)) * w`` in fp32 and rounds once;
its fp32 value differs from the reference's only by summation order and rsqrtf (about 1e-6
relative), so the output is within half an ulp of the output type of the exact fp32 result plus
that: rtol = 1 ulp (2^-7 for bfloat16, 2^-10 for float16) covers it with margin; atol = 1e-5
only matters for values near zero (float16 subnormals).
"""

import re
import sys

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)
import torch
from helpers_norm import ATOL, DIMS, DTYPES, EPS, NUM_ROWS, RTOL, randn, weight_for

from ci_runner import register_cuda_ci
from jit_kernel.env import get_ci_test_range
from testing.skip import skip_module_unless

register_cuda_ci(est_time=11, suite="base-b-kernel-unit-1-gpu-large")
register_cuda_ci(est_time=12, suite="nightly-kernel-1-gpu", nightly=True)

skip_module_unless(torch.cuda.is_available(), "rmsnorm tests need a CUDA GPU")

from jit_kernel.rmsnorm import (  # noqa: E402
    MAX_HIDDEN_SIZE,
    _jit_rmsnorm_module,
    can_use_rmsnorm,
    rmsnorm,
)
from testing import references  # noqa: E402
from testing.replay import run_once  # noqa: E402


def assert_matches(actual: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, what: str) -> None:
    expected = references.rmsnorm(x, weight)
    context = f"rmsnorm {what}: shape={tuple(x.shape)} strides={x.stride()} dtype={x.dtype}"
    torch.testing.assert_close(
        actual.float(),
        expected,
        rtol=RTOL[x.dtype],
        atol=ATOL,
        msg=lambda message: f"{context}\n{message}",
    )


# ---------------------------------------------------------------- correctness


# Batches of at most 64 rows take the decode plan (RowConfig): one CTA per row, one pack per
# thread up to 256 packs (2048 elements), two above; a CTA covering the row exactly (256, 768,
# 1024, 2048, 3584, 4096, 5120, 16384) has no bounds checks. CTAs of up to 8 warps sum with
# WarpSums (1, 2, 4, 8 warps at compile time; 3, 5 and 7 warps zero the missing warps' sums:
# 520, 768, 2056, 3584), larger ones with cta_sum (4104, 5120, 16384). Rows 64 and 65 sit on both
# sides; dims 8 and 16384 at the ends of the row sizes, 2048 / 2056 on both sides of the
# two-pack step, 8, 264, 520, 2056 and 4104 guarded.
@pytest.mark.parametrize(
    "dim", [8, 256, 264, 520, 768, 1024, 2048, 2056, 3584, 4096, 4104, 5120, 16384]
)
@pytest.mark.parametrize("num_rows", [64, 65])
def test_rmsnorm_on_both_sides_of_the_decode_plan(num_rows: int, dim: int) -> None:
    x = randn(num_rows, dim, dtype=torch.bfloat16)
    weight = weight_for(dim, torch.bfloat16)
    assert_matches(rmsnorm(x, weight), x, weight, "decode plan boundary")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("num_rows", NUM_ROWS)
def test_rmsnorm_matches_reference(dtype: torch.dtype, dim: int, num_rows: int) -> None:
    x = randn(num_rows, dim, dtype=dtype)
    weight = weight_for(dim, dtype)
    x_before = x.clone()
    out = rmsnorm(x, weight)
    assert out.shape == x.shape and out.dtype == dtype and out.device == x.device
    assert out.data_ptr() != x.data_ptr(), "without out=, rmsnorm must return a new tensor"
    assert torch.equal(x, x_before), "rmsnorm modified its input"
    assert_matches(out, x, weight, "out-of-place")
    poisoned = torch.full_like(x, float("nan"))  # every element must be overwritten
    assert rmsnorm(x, weight, out=poisoned) is poisoned
    assert_matches(poisoned, x, weight, "out= (NaN-poisoned)")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [64, 1024, 4096])
def test_rmsnorm_out_param_and_in_place(dtype: torch.dtype, dim: int) -> None:
    x = randn(37, dim, dtype=dtype)
    weight = weight_for(dim, dtype)
    out = torch.full_like(x, float("nan"))  # poisoned: every element must be written
    assert rmsnorm(x, weight, out=out) is out
    assert_matches(out, x, weight, "out=")
    expected_input = x.clone()
    assert rmsnorm(x, weight, out=x) is x
    assert_matches(x, expected_input, weight, "in place (out=input)")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [64, 256, 1024, 2048, 8192])
def test_rmsnorm_strided_and_offset_views_with_guards(dtype: torch.dtype, dim: int) -> None:
    num_rows, pad = 19, 24  # row stride dim + 24 elements: 16-byte multiple, not dense
    sentinel = 7.0
    base = randn(num_rows + 2, dim + pad, dtype=dtype)
    x = base[1 : num_rows + 1, 8 : 8 + dim]  # storage offset of one row + 16 bytes
    weight = weight_for(dim, dtype)
    out_base = torch.full((num_rows + 2, dim + pad), sentinel, dtype=dtype, device="cuda")
    out = out_base[1 : num_rows + 1, 16 : 16 + dim]
    x_before = base.clone()
    rmsnorm(x, weight, out=out)
    assert_matches(out, x, weight, "strided view")
    assert torch.equal(base, x_before), "rmsnorm wrote into its input's storage"
    guard = out_base.clone()
    guard[1 : num_rows + 1, 16 : 16 + dim] = sentinel
    assert torch.all(guard == sentinel), "rmsnorm wrote outside out's elements"
    # The new tensor returned for a strided input is contiguous and equal.
    fresh = rmsnorm(x, weight)
    assert fresh.is_contiguous()
    assert_matches(fresh, x, weight, "strided view, new output")


@pytest.mark.parametrize("dtype", DTYPES)
def test_rmsnorm_single_row_any_stride(dtype: torch.dtype) -> None:
    base = randn(3, 4096 + 40, dtype=dtype)
    x = base[2:3, 40:]  # one row: its stride is never used
    weight = weight_for(4096, dtype)
    assert_matches(rmsnorm(x, weight), x, weight, "one row of a view")


@pytest.mark.parametrize(
    ("num_rows", "dim"),
    get_ci_test_range(
        [(100003, 64), (65536, 256), (40000, 1024), (16384, 4096), (4099, 16384)],
        [(100003, 64), (16384, 4096)],
    ),
)
def test_rmsnorm_large_num_rows(num_rows: int, dim: int) -> None:
    x = randn(num_rows, dim, dtype=torch.bfloat16)
    weight = weight_for(dim, torch.bfloat16)
    assert_matches(rmsnorm(x, weight), x, weight, "large N")


@pytest.mark.parametrize("dtype", DTYPES)
def test_rmsnorm_large_values_and_eps(dtype: torch.dtype) -> None:
    big = 200.0 if dtype == torch.float16 else 1e4  # float16: x^2 overflows fp16, not fp32
    x = (big * torch.randn(65, 2048, device="cuda")).to(dtype)
    weight = weight_for(2048, dtype)
    assert_matches(rmsnorm(x, weight), x, weight, "large values")
    tiny = (1e-3 * torch.randn(5, 512, device="cuda")).to(dtype)
    out = rmsnorm(tiny, weight[:512].contiguous(), eps=0.5)
    expected = references.rmsnorm(tiny, weight[:512], eps=0.5)
    torch.testing.assert_close(out.float(), expected, rtol=RTOL[dtype], atol=ATOL)


def test_rmsnorm_empty_rows() -> None:
    x = torch.empty(0, 4096, dtype=torch.bfloat16, device="cuda")
    out = rmsnorm(x, weight_for(4096, torch.bfloat16))
    assert out.shape == (0, 4096)
    torch.cuda.synchronize()


def test_rmsnorm_uses_the_current_stream() -> None:
    stream = torch.cuda.Stream()
    x = randn(4096, 4096, dtype=torch.bfloat16)
    weight = weight_for(4096, torch.bfloat16)
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        out = rmsnorm(x, weight)
    stream.synchronize()
    assert_matches(out, x, weight, "side stream")


def test_rmsnorm_cuda_graph_capture_and_replay() -> None:
    dtype = torch.bfloat16
    x = randn(33, 4096, dtype=dtype)
    weight = weight_for(4096, dtype)
    rmsnorm(x, weight)  # warm-up: the module is loaded before capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = rmsnorm(x, weight)
    for _ in range(2):
        x.copy_(randn(33, 4096, dtype=dtype))
        graph.replay()
        torch.cuda.synchronize()
        assert_matches(out, x, weight, "graph replay")


# Decode CTAs of one warp (rows of at most 256 elements) release the next kernel before their PDL
# wait, larger ones after their stores; CTAs that cover the row exactly (dims 256, 1024, 4096) skip
# every bounds check, others (264, 4104) keep them; 4096 and 4104 hold two packs per thread.
# Whichever, a call that reads the previous call's output must see all of it; 65 rows take the
# row plan.
@pytest.mark.parametrize("dim", [256, 264, 1024, 4096, 4104])
@pytest.mark.parametrize("num_rows", [1, 16, 64, 65])
@pytest.mark.parametrize("capture", [False, True], ids=["eager", "graph"])
def test_rmsnorm_dependent_calls_back_to_back(num_rows: int, dim: int, capture: bool) -> None:
    """Each call normalises the previous call's output, with no host sync in between."""
    dtype, calls = torch.bfloat16, 12
    weight = weight_for(dim, dtype)
    outs = [randn(num_rows, dim, dtype=dtype)] + [
        torch.full((num_rows, dim), float("nan"), dtype=dtype, device="cuda") for _ in range(calls)
    ]

    def run() -> None:
        for i in range(calls):
            rmsnorm(outs[i], weight, out=outs[i + 1])

    rmsnorm(outs[0], weight)  # warm-up: the module is loaded before capture
    torch.cuda.synchronize()
    run_once(run, in_graph=capture)
    for i in range(calls):
        assert_matches(outs[i + 1], outs[i], weight, f"call {i + 1} of a chain of {calls}")


def test_rmsnorm_beyond_2_pow_31_elements() -> None:
    dim = 16384
    num_rows = 2**31 // dim + 3  # the last rows start past element 2^31
    need = 2 * num_rows * dim * 2 + (1 << 30)
    if torch.cuda.mem_get_info()[0] < need:
        pytest.skip(f"needs {need / 2**30:.1f} GiB of free GPU memory")
    x = torch.randn(num_rows, dim, dtype=torch.bfloat16, device="cuda")
    weight = weight_for(dim, torch.bfloat16)
    out = rmsnorm(x, weight)
    rows = [0, 1, num_rows // 2, 2**31 // dim - 1, 2**31 // dim, num_rows - 2, num_rows - 1]
    index = torch.tensor(rows, device="cuda")
    assert_matches(out[index], x[index], weight, f"rows {rows} of N*D > 2^31")
    del x, out
    torch.cuda.empty_cache()


# ---------------------------------------------------------------- can_use


def test_can_use_rmsnorm() -> None:
    for dim in (8, 64, 1000, 4096, 5120, MAX_HIDDEN_SIZE):
        assert can_use_rmsnorm(dim, torch.bfloat16) and can_use_rmsnorm(dim, torch.float16)
    for dim in (0, 4, 12, 1001, MAX_HIDDEN_SIZE + 8, -8):
        assert not can_use_rmsnorm(dim, torch.bfloat16)
    assert not can_use_rmsnorm(4096, torch.float32)
    assert not can_use_rmsnorm(4096.0, torch.float16)  # type: ignore[arg-type]
    assert not can_use_rmsnorm("4096", torch.float16)  # type: ignore[arg-type]


# ---------------------------------------------------------------- errors


def good_call_still_works() -> None:
    x = randn(5, 1024, dtype=torch.bfloat16)
    weight = weight_for(1024, torch.bfloat16)
    assert_matches(rmsnorm(x, weight), x, weight, "good call after an error")


def make(num_rows: int = 4, dim: int = 1024, dtype: torch.dtype = torch.bfloat16):
    return randn(num_rows, dim, dtype=dtype), weight_for(dim, dtype)


def bad_inputs() -> list[tuple[str, object, str]]:
    """(case id, thunk, message regex) for every kind of bad input."""
    x, w = make()
    cases = [
        (
            "cpu input",
            lambda: rmsnorm(x.cpu(), w),
            r"rmsnorm: (input must be a CUDA tensor, got device cpu|tensor 'input' device mismatch: expected cuda but got cpu:0)",
        ),
        (
            "cpu weight",
            lambda: rmsnorm(x, w.cpu()),
            re.escape("rmsnorm: tensor 'weight' device mismatch: expected cuda but got cpu:0"),
        ),
        (
            "float32 input",
            lambda: rmsnorm(x.float(), w.float()),
            re.escape("rmsnorm: input has dtype float32; supported: float16, bfloat16"),
        ),
        (
            "weight dtype",
            lambda: rmsnorm(x, w.half()),
            re.escape("rmsnorm: tensor 'weight' dtype mismatch: expected bfloat16 but got float16"),
        ),
        (
            "out dtype",
            lambda: rmsnorm(x, w, out=torch.empty_like(x, dtype=torch.float16)),
            re.escape("rmsnorm: tensor 'out' dtype mismatch: expected bfloat16 but got float16"),
        ),
        (
            "1-D input",
            lambda: rmsnorm(x[0], w),
            re.escape(
                "rmsnorm: tensor 'input' rank mismatch: expected 2 dims [num_rows, row_size] but got 1"
            ),
        ),
        (
            "3-D input",
            lambda: rmsnorm(x.view(2, 2, 1024), w),
            re.escape("rmsnorm: tensor 'input' rank mismatch: expected 2 dims"),
        ),
        (
            "weight length",
            lambda: rmsnorm(x, w[:512]),
            re.escape(
                "rmsnorm: tensor 'weight' shape mismatch at dim 0 ('row_size'): expected 1024 (bound by 'input') but got 512"
            ),
        ),
        (
            "non-contiguous weight",
            lambda: rmsnorm(x, torch.cat([w, w])[::2]),
            re.escape("rmsnorm: tensor 'weight' must be contiguous but has strides [2]"),
        ),
        (
            "out rows",
            lambda: rmsnorm(x, w, out=torch.empty(5, 1024, dtype=x.dtype, device="cuda")),
            re.escape(
                "rmsnorm: tensor 'out' shape mismatch at dim 0 ('num_rows'): expected 4 (bound by 'input') but got 5"
            ),
        ),
        (
            "transposed input",
            lambda: rmsnorm(randn(1024, 4, dtype=x.dtype).t(), w),
            re.escape("rmsnorm: tensor 'input' stride mismatch at dim 1: expected 1 but got 4"),
        ),
        (
            "hidden size not a multiple of 8",
            lambda: rmsnorm(randn(4, 12, dtype=x.dtype), weight_for(12, x.dtype)),
            re.escape(
                "rmsnorm: row size 12 (input.size(1)) is not supported: it must be a multiple of 8 in [8, 16384]"
            ),
        ),
        (
            "hidden size too large",
            lambda: rmsnorm(randn(2, 16392, dtype=x.dtype), weight_for(16392, x.dtype)),
            re.escape("rmsnorm: row size 16392 (input.size(1)) is not supported"),
        ),
        (
            "misaligned input view",
            lambda: rmsnorm(randn(4, 1032, dtype=x.dtype)[:, 1:1025], w),
            re.escape(
                "rmsnorm: tensor 'input' is not 16-byte aligned: its data address is 2 bytes past a 16-byte boundary"
            ),
        ),
        (
            "misaligned row stride",
            lambda: rmsnorm(randn(4, 1028, dtype=x.dtype)[:, :1024], w),
            re.escape(
                "rmsnorm: tensor 'input' is not 16-byte aligned: the stride of dim 0 is 1028 elements (2056 bytes), not a multiple of 16 bytes"
            ),
        ),
        (
            "misaligned weight",
            lambda: rmsnorm(x, weight_for(1025, x.dtype)[1:]),
            re.escape("rmsnorm: tensor 'weight' is not 16-byte aligned"),
        ),
        (
            "misaligned out",
            lambda: rmsnorm(
                x, w, out=torch.empty(4, 1032, dtype=x.dtype, device="cuda")[:, 4:1028]
            ),
            re.escape(
                "rmsnorm: tensor 'out' is not 16-byte aligned: its data address is 8 bytes past"
            ),
        ),
        (
            "overlapping out rows",
            lambda: rmsnorm(
                x, w, out=torch.empty(1, 1024, dtype=x.dtype, device="cuda").expand(4, 1024)
            ),
            re.escape("rmsnorm: tensor 'out' has internal overlap (dim 0 of size 4 has stride 0"),
        ),
    ]
    return cases


BAD_INPUT_IDS = [case[0] for case in bad_inputs()]


@pytest.mark.parametrize("case", BAD_INPUT_IDS)
def test_rmsnorm_bad_input_raises_and_context_survives(case: str) -> None:
    _, thunk, message = next(c for c in bad_inputs() if c[0] == case)
    with pytest.raises(RuntimeError, match=message):
        thunk()
    good_call_still_works()


def test_rmsnorm_module_rejects_bad_input_directly() -> None:
    # Whatever reaches the C++ entry point is checked there too (no Python in between).
    module = _jit_rmsnorm_module()
    x, w = make(dtype=torch.float16)
    with pytest.raises(
        RuntimeError,
        match=re.escape("tensor 'weight' dtype mismatch: expected bfloat16 but got float16"),
    ):  # the export takes input's dtype and checks weight and out against it
        module.rmsnorm(torch.empty_like(x), x.bfloat16(), w, EPS)
    with pytest.raises(
        RuntimeError, match=re.escape("rmsnorm: input has dtype float32; supported: ")
    ):
        module.rmsnorm(torch.empty_like(x), x.float(), w, EPS)
    with pytest.raises(
        RuntimeError, match=re.escape("tensor 'out' device mismatch: expected cuda but got cpu:0")
    ):
        module.rmsnorm(torch.empty(4, 1024, dtype=torch.float16), x, w, EPS)
    good_call_still_works()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda x, w: rmsnorm([1.0], w), "rmsnorm: input must be a torch.Tensor, got list"),
        (lambda x, w: rmsnorm(None, w), "rmsnorm: input must be a torch.Tensor, got NoneType"),
        (lambda x, w: rmsnorm(x, [1.0] * 1024), "rmsnorm: weight must be a torch.Tensor, got list"),
        (
            lambda x, w: rmsnorm(x, w, out=[0.0]),
            "rmsnorm: out must be a torch.Tensor or None, got list",
        ),
        (lambda x, w: rmsnorm(x, w, eps="1e-6"), "rmsnorm: eps must be a number, got str"),
        (lambda x, w: rmsnorm(x, w, eps=None), "rmsnorm: eps must be a number, got NoneType"),
    ],
)
def test_rmsnorm_rejects_non_tensor_arguments(call, message: str) -> None:
    x, w = make()
    with pytest.raises(TypeError, match=re.escape(message)):
        call(x, w)
    good_call_still_works()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
