"""fused_add_rmsnorm(input, residual, weight, eps=1e-6) against a float32 torch reference.

In place: ``residual = round(input + residual)`` (checked bit-exactly: torch's half-precision
add also computes in fp32 and rounds once) and ``input = rmsnorm(residual) * weight`` computed
from those rounded values. Every launch plan, N = 1, odd N, large N, strided/offset views with
guard regions, N * D beyond 2^31, CUDA-graph capture and every bad input.

Tolerance of the normalised output: one rounding of an fp32 value that differs from the
reference's by about 1e-6 relative (summation order, rsqrtf): rtol = 1 ulp of the dtype
(2^-7 bfloat16, 2^-10 float16), atol = 1e-5 for values near zero.
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

skip_module_unless(torch.cuda.is_available(), "fused_add_rmsnorm tests need a CUDA GPU")

from jit_kernel.fused_add_rmsnorm import (  # noqa: E402
    MAX_HIDDEN_SIZE,
    _jit_fused_add_rmsnorm_module,
    can_use_fused_add_rmsnorm,
    fused_add_rmsnorm,
)
from testing import references  # noqa: E402

reference = references.fused_add_rmsnorm


def run_and_check(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, what: str, eps: float = EPS
) -> None:
    expected_residual, expected = reference(x, residual, weight, eps)
    assert fused_add_rmsnorm(x, residual, weight, eps) is None
    context = (
        f"fused_add_rmsnorm {what}: shape={tuple(x.shape)} input strides={x.stride()} "
        f"residual strides={residual.stride()} dtype={x.dtype}"
    )
    torch.testing.assert_close(
        residual,
        expected_residual,
        rtol=0,
        atol=0,
        msg=lambda message: f"{context}: residual (must be bit-exact)\n{message}",
    )
    torch.testing.assert_close(
        x.float(),
        expected,
        rtol=RTOL[x.dtype],
        atol=ATOL,
        msg=lambda message: f"{context}: normalised input\n{message}",
    )


# ---------------------------------------------------------------- correctness


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("num_rows", NUM_ROWS)
def test_fused_add_rmsnorm_matches_reference(dtype: torch.dtype, dim: int, num_rows: int) -> None:
    x = randn(num_rows, dim, dtype=dtype)
    residual = randn(num_rows, dim, dtype=dtype)
    run_and_check(x, residual, weight_for(dim, dtype), "contiguous")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [64, 256, 1024, 2048, 8192])
def test_fused_add_rmsnorm_strided_views_with_guards(dtype: torch.dtype, dim: int) -> None:
    num_rows, sentinel = 21, 3.0
    x_base = torch.full((num_rows + 2, dim + 16), sentinel, dtype=dtype, device="cuda")
    r_base = torch.full((num_rows + 1, dim + 40), sentinel, dtype=dtype, device="cuda")
    x = x_base[2:, 8 : 8 + dim]  # storage offset 2 rows + 16 bytes, row stride dim + 16
    residual = r_base[1:, 32 : 32 + dim]  # offset 1 row + 64 bytes, row stride dim + 40
    x.copy_(randn(num_rows, dim, dtype=dtype))
    residual.copy_(randn(num_rows, dim, dtype=dtype))
    run_and_check(x, residual, weight_for(dim, dtype), "strided views")
    x_guard, r_guard = x_base.clone(), r_base.clone()
    x_guard[2:, 8 : 8 + dim] = sentinel
    r_guard[1:, 32 : 32 + dim] = sentinel
    assert torch.all(x_guard == sentinel), "wrote outside input's elements"
    assert torch.all(r_guard == sentinel), "wrote outside residual's elements"


@pytest.mark.parametrize(
    ("num_rows", "dim"),
    get_ci_test_range(
        [(100003, 64), (65536, 256), (40000, 1024), (16384, 4096), (4099, 16384)],
        [(100003, 64), (16384, 4096)],
    ),
)
def test_fused_add_rmsnorm_large_num_rows(num_rows: int, dim: int) -> None:
    x = randn(num_rows, dim, dtype=torch.bfloat16)
    residual = randn(num_rows, dim, dtype=torch.bfloat16)
    run_and_check(x, residual, weight_for(dim, torch.bfloat16), "large N")


@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_add_rmsnorm_repeated_layers(dtype: torch.dtype) -> None:
    # Applied layer after layer, as in a model: errors must not accumulate beyond the rounding.
    x = randn(9, 4096, dtype=dtype)
    residual = randn(9, 4096, dtype=dtype)
    for layer in range(4):
        run_and_check(x, residual, weight_for(4096, dtype), f"layer {layer}")


def test_fused_add_rmsnorm_empty_rows() -> None:
    x = torch.empty(0, 4096, dtype=torch.bfloat16, device="cuda")
    fused_add_rmsnorm(x, torch.empty_like(x), weight_for(4096, torch.bfloat16))
    torch.cuda.synchronize()


def test_fused_add_rmsnorm_cuda_graph_capture_and_replay() -> None:
    dtype = torch.bfloat16
    x = randn(33, 4096, dtype=dtype)
    residual = randn(33, 4096, dtype=dtype)
    weight = weight_for(4096, dtype)
    fused_add_rmsnorm(x, residual, weight)  # warm-up: the module is loaded before capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fused_add_rmsnorm(x, residual, weight)
    for _ in range(2):
        x.copy_(randn(33, 4096, dtype=dtype))
        residual.copy_(randn(33, 4096, dtype=dtype))
        expected_residual, expected = reference(x, residual, weight)
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(residual, expected_residual, rtol=0, atol=0)
        torch.testing.assert_close(x.float(), expected, rtol=RTOL[dtype], atol=ATOL)


def test_fused_add_rmsnorm_beyond_2_pow_31_elements() -> None:
    dim = 16384
    num_rows = 2**31 // dim + 3
    need = 2 * num_rows * dim * 2 + (1 << 30)
    if torch.cuda.mem_get_info()[0] < need:
        pytest.skip(f"needs {need / 2**30:.1f} GiB of free GPU memory")
    x = torch.randn(num_rows, dim, dtype=torch.bfloat16, device="cuda")
    residual = torch.randn(num_rows, dim, dtype=torch.bfloat16, device="cuda")
    weight = weight_for(dim, torch.bfloat16)
    rows = [0, 1, num_rows // 2, 2**31 // dim - 1, 2**31 // dim, num_rows - 2, num_rows - 1]
    index = torch.tensor(rows, device="cuda")
    expected_residual, expected = reference(x[index], residual[index], weight)
    fused_add_rmsnorm(x, residual, weight)
    torch.testing.assert_close(residual[index], expected_residual, rtol=0, atol=0)
    torch.testing.assert_close(x[index].float(), expected, rtol=2.0**-7, atol=ATOL)
    del x, residual
    torch.cuda.empty_cache()


# ---------------------------------------------------------------- can_use


def test_can_use_fused_add_rmsnorm() -> None:
    for dim in (8, 64, 1000, 4096, 5120, MAX_HIDDEN_SIZE):
        assert can_use_fused_add_rmsnorm(dim, torch.bfloat16)
        assert can_use_fused_add_rmsnorm(dim, torch.float16)
    for dim in (0, 4, 12, 1001, MAX_HIDDEN_SIZE + 8, -8):
        assert not can_use_fused_add_rmsnorm(dim, torch.bfloat16)
    assert not can_use_fused_add_rmsnorm(4096, torch.float32)
    assert not can_use_fused_add_rmsnorm(None, torch.float16)  # type: ignore[arg-type]


# ---------------------------------------------------------------- errors


def good_call_still_works() -> None:
    x = randn(5, 1024, dtype=torch.bfloat16)
    residual = randn(5, 1024, dtype=torch.bfloat16)
    run_and_check(x, residual, weight_for(1024, torch.bfloat16), "good call after an error")


def bad_inputs() -> list[tuple[str, object, str]]:
    dtype = torch.bfloat16
    x, r, w = randn(4, 1024, dtype=dtype), randn(4, 1024, dtype=dtype), weight_for(1024, dtype)
    op = fused_add_rmsnorm
    return [
        (
            "cpu input",
            lambda: op(x.cpu(), r, w),
            r"fused_add_rmsnorm: (input must be a CUDA tensor, got device cpu|tensor 'input' device mismatch: expected cuda but got cpu:0)",
        ),
        (
            "cpu residual",
            lambda: op(x, r.cpu(), w),
            re.escape(
                "fused_add_rmsnorm: tensor 'residual' device mismatch: expected cuda but got cpu:0"
            ),
        ),
        (
            "cpu weight",
            lambda: op(x, r, w.cpu()),
            re.escape(
                "fused_add_rmsnorm: tensor 'weight' device mismatch: expected cuda but got cpu:0"
            ),
        ),
        (
            "float32",
            lambda: op(x.float(), r.float(), w.float()),
            re.escape("fused_add_rmsnorm: input has dtype float32; supported: float16, bfloat16"),
        ),
        (
            "residual dtype",
            lambda: op(x, r.half(), w),
            re.escape(
                "fused_add_rmsnorm: tensor 'residual' dtype mismatch: expected bfloat16 but got float16"
            ),
        ),
        (
            "weight dtype",
            lambda: op(x, r, w.float()),
            re.escape(
                "fused_add_rmsnorm: tensor 'weight' dtype mismatch: expected bfloat16 but got float32"
            ),
        ),
        (
            "residual rows",
            lambda: op(x, r[:3], w),
            re.escape(
                "fused_add_rmsnorm: tensor 'residual' shape mismatch at dim 0 ('num_rows'): expected 4 (bound by 'input') but got 3"
            ),
        ),
        (
            "weight length",
            lambda: op(x, r, w[:1016]),
            re.escape(
                "fused_add_rmsnorm: tensor 'weight' shape mismatch at dim 0 ('row_size'): expected 1024 (bound by 'input') but got 1016"
            ),
        ),
        (
            "3-D input",
            lambda: op(x.view(2, 2, 1024), r, w),
            re.escape("fused_add_rmsnorm: tensor 'input' rank mismatch: expected 2 dims"),
        ),
        (
            "hidden size",
            lambda: op(randn(4, 20, dtype=dtype), randn(4, 20, dtype=dtype), weight_for(20, dtype)),
            re.escape(
                "fused_add_rmsnorm: row size 20 (input.size(1)) is not supported: it must be a multiple of 8 in [8, 16384]"
            ),
        ),
        (
            "misaligned input",
            lambda: op(randn(4, 1032, dtype=dtype)[:, 3:1027], r, w),
            re.escape(
                "fused_add_rmsnorm: tensor 'input' is not 16-byte aligned: its data address is 6 bytes past"
            ),
        ),
        (
            "misaligned residual stride",
            lambda: op(x, randn(4, 1036, dtype=dtype)[:, :1024], w),
            re.escape(
                "fused_add_rmsnorm: tensor 'residual' is not 16-byte aligned: the stride of dim 0 is 1036 elements"
            ),
        ),
        (
            "overlapping residual rows",
            lambda: op(x, randn(1, 1024, dtype=dtype).expand(4, 1024), w),
            re.escape("fused_add_rmsnorm: tensor 'residual' has internal overlap"),
        ),
        (
            "input is residual",
            lambda: op(x, x, w),
            re.escape("fused_add_rmsnorm: input and residual are the same memory"),
        ),
    ]


@pytest.mark.parametrize("case", [case[0] for case in bad_inputs()])
def test_fused_add_rmsnorm_bad_input_raises_and_context_survives(case: str) -> None:
    _, thunk, message = next(c for c in bad_inputs() if c[0] == case)
    with pytest.raises(RuntimeError, match=message):
        thunk()
    good_call_still_works()


def test_fused_add_rmsnorm_module_checks_directly() -> None:
    module = _jit_fused_add_rmsnorm_module()
    x = randn(4, 1024, dtype=torch.bfloat16)
    with pytest.raises(
        RuntimeError,
        match=re.escape("tensor 'residual' dtype mismatch: expected bfloat16 but got float16"),
    ):  # the export takes input's dtype and checks residual and weight against it
        module.fused_add_rmsnorm(x, x.half(), weight_for(1024, torch.bfloat16), EPS)
    good_call_still_works()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("list", "r", "w"), "fused_add_rmsnorm: input must be a torch.Tensor, got list"),
        (("x", None, "w"), "fused_add_rmsnorm: residual must be a torch.Tensor, got NoneType"),
        (("x", "r", (1.0,)), "fused_add_rmsnorm: weight must be a torch.Tensor, got tuple"),
        (("x", "r", "w", "eps"), "fused_add_rmsnorm: eps must be a number, got str"),
    ],
)
def test_fused_add_rmsnorm_rejects_non_tensor_arguments(args: tuple, message: str) -> None:
    dtype = torch.bfloat16
    tensors = {
        "x": randn(4, 1024, dtype=dtype),
        "r": randn(4, 1024, dtype=dtype),
        "w": weight_for(1024, dtype),
        "list": [1.0, 2.0],
    }
    call_args = [tensors.get(arg, arg) if isinstance(arg, str) else arg for arg in args]
    with pytest.raises(TypeError, match=re.escape(message)):
        fused_add_rmsnorm(*call_args)
    good_call_still_works()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
