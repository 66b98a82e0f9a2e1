"""scale(src, factor, out=None): correctness against torch, boundaries, layouts and errors."""

import re
import sys

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)
import torch

from ci_runner import register_cuda_ci
from jit_kernel.env import get_ci_test_range
from testing.skip import skip_module_unless

register_cuda_ci(est_time=11, suite="base-b-kernel-unit-1-gpu-large")
register_cuda_ci(est_time=13, suite="nightly-kernel-1-gpu", nightly=True)

skip_module_unless(torch.cuda.is_available(), "scale tests need a CUDA GPU")

from jit_kernel.scale import _jit_scale_module, scale  # noqa: E402

DTYPES = [torch.float16, torch.bfloat16, torch.float32]
# Around every vector (16 bytes, 8 in the decode plan), block tile (128 x 2 vectors), tail.
FULL_SIZES = [0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 127, 128, 129, 1023, 1024, 1025]
FULL_SIZES += [2047, 2048, 2049, 4095, 4096, 4097, 8191, 8193, 65537, 2**20 + 3]
CI_SIZES = [0, 1, 7, 8, 9, 17, 129, 1025, 4097, 8193, 2**20 + 3]
SIZES = get_ci_test_range(FULL_SIZES, CI_SIZES)
FACTORS = get_ci_test_range([0.5, 1.0, 2.0, 3.0, -1.5, 0.0, 1e-3], [2.0, -1.5, 0.0])


def reference(src: torch.Tensor, factor: float) -> torch.Tensor:
    return torch.mul(src, factor)


def assert_same(actual: torch.Tensor, expected: torch.Tensor) -> None:
    # Both compute fp32(x) * fp32(factor) and round once: results are bit-identical.
    torch.testing.assert_close(actual, expected, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("factor", FACTORS)
def test_scale_matches_torch(dtype: torch.dtype, size: int, factor: float) -> None:
    src = torch.randn(size, dtype=dtype, device="cuda")
    out = scale(src, factor)
    assert out.shape == src.shape and out.dtype == dtype and out.device == src.device
    assert_same(out, reference(src, factor))


@pytest.mark.parametrize("dtype", DTYPES)
def test_scale_multi_dim_and_scalar_tensor(dtype: torch.dtype) -> None:
    src = torch.randn(3, 5, 7, dtype=dtype, device="cuda")
    assert_same(scale(src, 2.5), reference(src, 2.5))
    scalar = torch.tensor(1.5, dtype=dtype, device="cuda")
    assert_same(scale(scalar, -2.0), reference(scalar, -2.0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_scale_out_param(dtype: torch.dtype) -> None:
    src = torch.randn(1027, dtype=dtype, device="cuda")
    out = torch.full_like(src, float("nan"))
    result = scale(src, 2.0, out=out)
    assert result is out
    assert_same(out, reference(src, 2.0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_scale_in_place(dtype: torch.dtype) -> None:
    src = torch.randn(4099, dtype=dtype, device="cuda")
    expected = reference(src, -0.75)
    assert scale(src, -0.75, out=src) is src
    assert_same(src, expected)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("offset", [1, 2, 3])
@pytest.mark.parametrize("size", [1, 9, 1025, 65537])
def test_scale_unaligned_views(dtype: torch.dtype, offset: int, size: int) -> None:
    base = torch.randn(size + offset, dtype=dtype, device="cuda")
    src = base[offset:]
    out_base = torch.zeros(size + 1, dtype=dtype, device="cuda")
    # Unaligned src and aligned out, then both unaligned (out at +1 element).
    assert_same(scale(src, 3.0), reference(src, 3.0))
    out = out_base[1:]
    scale(src, 3.0, out=out)
    assert_same(out, reference(src, 3.0))
    assert out_base[0].item() == 0  # nothing written before the view


@pytest.mark.parametrize("dtype", DTYPES)
def test_scale_non_contiguous_src_is_copied_first(dtype: torch.dtype) -> None:
    src = torch.randn(64, 33, dtype=dtype, device="cuda")
    for view in (src[:, ::2], src.t(), src[::3]):
        assert not view.is_contiguous()
        out = scale(view, 0.5)
        assert out.shape == view.shape
        assert_same(out, reference(view, 0.5))
        given = torch.empty(view.shape, dtype=dtype, device="cuda")
        assert scale(view, 0.5, out=given) is given
        assert_same(given, reference(view, 0.5))


def test_scale_does_not_write_past_the_end() -> None:
    base = torch.full((4096 + 16,), 7.0, dtype=torch.float16, device="cuda")
    src = torch.randn(4097, dtype=torch.float16, device="cuda")
    out = base[:4097]
    scale(src, 2.0, out=out)
    assert torch.all(base[4097:] == 7.0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_scale_empty_tensors(dtype: torch.dtype) -> None:
    for shape in [(0,), (0, 5), (3, 0)]:
        src = torch.empty(shape, dtype=dtype, device="cuda")
        out = scale(src, 2.0)
        assert out.shape == src.shape
    module = _jit_scale_module()
    empty = torch.empty(0, dtype=dtype, device="cuda")
    module.scale(empty, empty, 2.0)  # no launch: a zero-block launch would be a CUDA error
    torch.cuda.synchronize()


def test_scale_special_values() -> None:
    src = torch.tensor(
        [float("inf"), -float("inf"), float("nan"), 0.0, -0.0, 65504.0],
        dtype=torch.float16,
        device="cuda",
    )
    torch.testing.assert_close(scale(src, 2.0), reference(src, 2.0), equal_nan=True, rtol=0, atol=0)


def test_scale_uses_the_current_stream() -> None:
    stream = torch.cuda.Stream()
    src = torch.randn(2**20, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        out = scale(src, 4.0)
    stream.synchronize()
    assert_same(out, reference(src, 4.0))


# ---------------------------------------------------------------- errors: Python wrapper


# A CPU tensor is caught before anything is compiled (first call) or by the kernel's C++ check
# (once the module exists); both name the tensor and what was expected.
CPU_SRC_ERROR = r"scale: (src must be a CUDA tensor, got device cpu|tensor 'src' device mismatch: expected cuda but got cpu)"


def test_scale_cpu_tensor_error() -> None:
    with pytest.raises(RuntimeError, match=CPU_SRC_ERROR):
        scale(torch.randn(128, dtype=torch.float16), 2.0)


@pytest.mark.parametrize("dtype", [torch.int32, torch.float64, torch.int8])
def test_scale_unsupported_dtype_error(dtype: torch.dtype) -> None:
    src = torch.zeros(128, dtype=dtype, device="cuda")
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            f"scale: src has dtype {str(dtype).removeprefix('torch.')}; "
            "supported: float16, bfloat16, float32"
        ),
    ):
        scale(src, 2.0)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: scale([1.0, 2.0], 2.0), "scale: src must be a torch.Tensor, got list"),
        (lambda: scale(None, 2.0), "scale: src must be a torch.Tensor, got NoneType"),
        (
            lambda: scale(torch.ones(4, device="cuda"), 2.0, out=[0.0] * 4),
            "scale: out must be a torch.Tensor or None, got list",
        ),
        (
            lambda: scale(torch.ones(4, device="cuda"), "2"),
            "scale: factor must be a number, got str",
        ),
    ],
)
def test_scale_rejects_non_tensor_arguments(call, message: str) -> None:
    with pytest.raises(TypeError, match=re.escape(message)):
        call()
    # The context is still usable after the error.
    src = torch.randn(9, device="cuda")
    assert_same(scale(src, 2.0), reference(src, 2.0))


def test_scale_out_mismatch_errors() -> None:
    src = torch.randn(16, dtype=torch.float16, device="cuda")
    cases = [
        (
            torch.empty(17, dtype=torch.float16, device="cuda"),
            "scale: tensor 'out' shape mismatch at dim 0: expected 16 but got 17",
        ),
        (
            torch.empty(4, 4, dtype=torch.float16, device="cuda"),
            "scale: tensor 'out' rank mismatch: expected 1 dims [16] but got 2",
        ),
        (
            torch.empty(16, dtype=torch.float32, device="cuda"),
            "scale: tensor 'out' dtype mismatch: expected float16 but got float32",
        ),
        (
            torch.empty(16, dtype=torch.float16),
            "scale: tensor 'out' device mismatch: expected cuda but got cpu:0",
        ),
        (
            torch.empty(32, dtype=torch.float16, device="cuda")[::2],
            "scale: tensor 'out' must be contiguous but has strides [2]",
        ),
    ]
    for out, message in cases:
        with pytest.raises(RuntimeError, match=re.escape(message)):
            scale(src, 2.0, out=out)


# ---------------------------------------------------------------- errors: C++ TensorMatcher


def test_module_rejects_wrong_dtype_rank_layout_and_device() -> None:
    module = _jit_scale_module()
    good = torch.empty(8, dtype=torch.bfloat16, device="cuda")
    cases = [
        (
            torch.empty(8, dtype=torch.float16, device="cuda"),
            "tensor 'out' dtype mismatch: expected float16 but got bfloat16",  # src's dtype rules
        ),
        (
            torch.empty(2, 4, dtype=torch.bfloat16, device="cuda"),
            "tensor 'out' rank mismatch: expected 2 dims [2, 4] but got 1",
        ),
        (
            torch.empty(7, dtype=torch.bfloat16, device="cuda"),
            "tensor 'out' shape mismatch at dim 0: expected 7 but got 8",
        ),
        (
            torch.empty(8, dtype=torch.bfloat16),
            "tensor 'src' device mismatch: expected cuda but got cpu:0",
        ),
    ]
    for src, message in cases:
        with pytest.raises(RuntimeError, match=re.escape(message)):
            module.scale(good, src, 1.0)
    with pytest.raises(
        RuntimeError, match=re.escape("tensor 'out' device mismatch: expected cuda but got cpu:0")
    ):
        module.scale(torch.empty(8, dtype=torch.bfloat16), good, 1.0)
    # A non-contiguous src is not an error at this level: the module does nothing and returns
    # False, the wrapper's cue to retry with a contiguous copy.
    strided = torch.randn(16, device="cuda").to(torch.bfloat16)[::2]
    before = good.clone()
    assert module.scale(good, strided, 1.0) is False
    assert torch.equal(good, before)
    assert module.scale(good, strided.contiguous(), 1.0) is True


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
