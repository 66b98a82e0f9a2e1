"""add_constant(src, constant, out=None): int32 correctness, wrap-around, layouts and errors."""

import re
import sys

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)
import torch

from ci_runner import register_cuda_ci
from jit_kernel.env import get_ci_test_range
from testing.skip import skip_module_unless

register_cuda_ci(est_time=30, suite="base-b-kernel-unit-1-gpu-large")
register_cuda_ci(est_time=60, suite="nightly-kernel-1-gpu", nightly=True)

skip_module_unless(torch.cuda.is_available(), "add_constant tests need a CUDA GPU")

from jit_kernel.add_constant import _jit_add_constant_module, add_constant  # noqa: E402

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
# Around the vectors (4 x int32, 2 in the decode plan), the block tile (128 x 2), the tail.
FULL_SIZES = [0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 127, 128, 129, 1023, 1024, 1025]
FULL_SIZES += [4095, 4096, 4097, 4099, 65537, 2**20 + 3]
CI_SIZES = [0, 1, 3, 5, 17, 129, 4097, 4099, 2**20 + 3]
SIZES = get_ci_test_range(FULL_SIZES, CI_SIZES)
# Each constant is a separate compiled module: keep the CI set small.
CONSTANTS = get_ci_test_range([1, -1, 0, 7, 16, 1000, -123456, INT32_MAX, INT32_MIN], [1, -1, 16])


def randint(size: int | tuple[int, ...]) -> torch.Tensor:
    shape = (size,) if isinstance(size, int) else size
    return torch.randint(-(2**20), 2**20, shape, dtype=torch.int32, device="cuda")


@pytest.mark.parametrize("constant", CONSTANTS)
@pytest.mark.parametrize("size", SIZES)
def test_add_constant_matches_torch(constant: int, size: int) -> None:
    src = randint(size)
    out = add_constant(src, constant)
    assert out.shape == src.shape and out.dtype == torch.int32
    torch.testing.assert_close(out, src + constant, rtol=0, atol=0)


def test_add_constant_wraps_around_like_torch() -> None:
    src = torch.tensor([INT32_MAX, INT32_MAX - 1, INT32_MIN, -1, 0], dtype=torch.int32).cuda()
    expected = torch.tensor([INT32_MIN, INT32_MAX, INT32_MIN + 1, 0, 1], dtype=torch.int32).cuda()
    torch.testing.assert_close(add_constant(src, 1), expected, rtol=0, atol=0)
    torch.testing.assert_close(add_constant(src, 1), src + 1, rtol=0, atol=0)
    src = torch.full((33,), INT32_MIN, dtype=torch.int32, device="cuda")
    torch.testing.assert_close(add_constant(src, -1), src - 1, rtol=0, atol=0)


def test_add_constant_multi_dim_out_and_in_place() -> None:
    src = randint((4, 9, 5))
    out = torch.empty_like(src)
    assert add_constant(src, 16, out=out) is out
    torch.testing.assert_close(out, src + 16, rtol=0, atol=0)
    expected = src + 1
    assert add_constant(src, 1, out=src) is src
    torch.testing.assert_close(src, expected, rtol=0, atol=0)


@pytest.mark.parametrize("offset", [1, 2, 3])
@pytest.mark.parametrize("size", [1, 5, 1029, 65537])
def test_add_constant_unaligned_views(offset: int, size: int) -> None:
    src = randint(size + offset)[offset:]
    torch.testing.assert_close(add_constant(src, -1), src - 1, rtol=0, atol=0)
    out_base = torch.zeros(size + 1, dtype=torch.int32, device="cuda")
    add_constant(src, -1, out=out_base[1:])
    torch.testing.assert_close(out_base[1:], src - 1, rtol=0, atol=0)
    assert out_base[0].item() == 0


def test_add_constant_non_contiguous_src_is_copied_first() -> None:
    src = randint((40, 31))
    for view in (src[:, ::2], src.t(), src[::3]):
        assert not view.is_contiguous()
        torch.testing.assert_close(add_constant(view, 1), view + 1, rtol=0, atol=0)
        out = torch.empty(view.shape, dtype=torch.int32, device="cuda")
        assert add_constant(view, 3, out=out) is out
        torch.testing.assert_close(out, view + 3, rtol=0, atol=0)


def test_add_constant_does_not_write_past_the_end() -> None:
    base = torch.full((4099 + 8,), 42, dtype=torch.int32, device="cuda")
    src = randint(4099)
    add_constant(src, 1, out=base[:4099])
    assert torch.all(base[4099:] == 42)


def test_add_constant_empty_tensors() -> None:
    for shape in [(0,), (0, 3)]:
        src = torch.empty(shape, dtype=torch.int32, device="cuda")
        assert add_constant(src, 1).shape == src.shape
    empty = torch.empty(0, dtype=torch.int32, device="cuda")
    _jit_add_constant_module(1).add_constant(empty, empty)  # launches nothing
    torch.cuda.synchronize()


# ---------------------------------------------------------------- errors: Python wrapper


# A CPU tensor is caught before anything is compiled (first call) or by the kernel's C++ check
# (once the module exists); both name the tensor and what was expected.
CPU_SRC_ERROR = (
    r"add_constant: (src must be a CUDA tensor, got device cpu"
    r"|tensor 'src' device mismatch: expected cuda but got cpu)"
)


def test_add_constant_cpu_tensor_error() -> None:
    with pytest.raises(RuntimeError, match=CPU_SRC_ERROR):
        add_constant(torch.zeros(8, dtype=torch.int32), 1)


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32, torch.int16])
def test_add_constant_unsupported_dtype_error(dtype: torch.dtype) -> None:
    src = torch.zeros(8, dtype=dtype, device="cuda")
    with pytest.raises(
        RuntimeError, match=re.escape("add_constant: tensor 'src' dtype mismatch: expected int32")
    ):
        add_constant(src, 1)


@pytest.mark.parametrize(
    ("constant", "error", "message"),
    [
        (2**31, RuntimeError, "add_constant: constant 2147483648 is outside the int32 range"),
        (
            -(2**31) - 1,
            RuntimeError,
            "add_constant: constant -2147483649 is outside the int32 range",
        ),
        (1.5, TypeError, "add_constant: constant must be an int, got float"),
        (True, TypeError, "add_constant: constant must be an int, got bool"),
    ],
)
def test_add_constant_bad_constant_error(constant: object, error: type, message: str) -> None:
    with pytest.raises(error, match=re.escape(message)):
        add_constant(torch.zeros(8, dtype=torch.int32, device="cuda"), constant)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: add_constant([1, 2], 1), "add_constant: src must be a torch.Tensor, got list"),
        (
            lambda: add_constant(torch.zeros(2, dtype=torch.int32, device="cuda"), 1, out=(1, 2)),
            "add_constant: out must be a torch.Tensor or None, got tuple",
        ),
    ],
)
def test_add_constant_rejects_non_tensor_arguments(call, message: str) -> None:
    with pytest.raises(TypeError, match=re.escape(message)):
        call()
    src = torch.arange(5, dtype=torch.int32, device="cuda")
    assert torch.equal(add_constant(src, 1), src + 1)  # the context is still usable


def test_add_constant_out_mismatch_errors() -> None:
    src = torch.zeros(16, dtype=torch.int32, device="cuda")
    cases = [
        (
            torch.empty(15, dtype=torch.int32, device="cuda"),
            "add_constant: tensor 'out' shape mismatch at dim 0: expected 16 but got 15",
        ),
        (
            torch.empty(16, dtype=torch.int64, device="cuda"),
            "add_constant: tensor 'out' dtype mismatch: expected int32 but got int64",
        ),
        (
            torch.empty(16, dtype=torch.int32),
            "add_constant: tensor 'out' device mismatch: expected cuda but got cpu:0",
        ),
        (
            torch.empty(32, dtype=torch.int32, device="cuda")[::2],
            "add_constant: tensor 'out' must be contiguous but has strides [2]",
        ),
    ]
    for out, message in cases:
        with pytest.raises(RuntimeError, match=re.escape(message)):
            add_constant(src, 1, out=out)


# ---------------------------------------------------------------- errors: C++ TensorMatcher


def test_module_rejects_bad_tensors_with_named_messages() -> None:
    module = _jit_add_constant_module(1)
    good = torch.zeros(8, dtype=torch.int32, device="cuda")
    cases = [
        (
            torch.zeros(9, dtype=torch.int32, device="cuda"),
            "add_constant: tensor 'out' shape mismatch at dim 0: expected 9 but got 8; "
            "tensor: shape=[8], strides=[1], dtype=int32, device=cuda:0",
        ),
        (
            torch.zeros(8, dtype=torch.int64, device="cuda"),
            "tensor 'src' dtype mismatch: expected int32 but got int64",
        ),
        (
            torch.zeros(8, dtype=torch.int32),
            "tensor 'src' device mismatch: expected cuda but got cpu:0",
        ),
        (
            torch.zeros(2, 4, dtype=torch.int32, device="cuda"),
            "tensor 'out' rank mismatch: expected 2 dims [2, 4] but got 1",
        ),
    ]
    for src, message in cases:
        with pytest.raises(RuntimeError, match=re.escape(message)):
            module.add_constant(good, src)
    # A non-contiguous src makes the module do nothing and return False (the wrapper's cue to
    # retry with a contiguous copy).
    strided = torch.arange(16, dtype=torch.int32, device="cuda")[::2]
    assert module.add_constant(good, strided) is False
    assert torch.equal(good, torch.zeros_like(good))
    assert module.add_constant(good, strided.contiguous()) is True
    assert torch.equal(good, strided + 1)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
