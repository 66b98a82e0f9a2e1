"""add3(a, b, c, out=None): bit-exact against torch in fp32, on every vector, tail and alignment."""

import re
import sys

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)
import torch

from ci_runner import register_cuda_ci
from jit_kernel.env import get_ci_test_range
from testing.skip import skip_module_unless

register_cuda_ci(est_time=10, suite="base-b-kernel-unit-1-gpu-large")
register_cuda_ci(est_time=15, suite="nightly-kernel-1-gpu", nightly=True)
skip_module_unless(torch.cuda.is_available(), "add3 tests need a CUDA GPU")

from jit_kernel.add3 import add3  # noqa: E402

DTYPES = [torch.float16, torch.bfloat16, torch.float32]
# Around the vectors (16 bytes, 8 in the decode plan), the block tile (128 threads x 2), the tail.
SIZES = get_ci_test_range(
    [0, 1, 3, 4, 5, 7, 8, 9, 17, 127, 128, 129, 1023, 1024, 1025, 2049, 4097, 65537, 2**20 + 3],
    [0, 1, 7, 9, 129, 1025, 4097, 2**20 + 3],
)
OFFSETS = [(0, 0, 0, 0), (1, 0, 0, 0), (0, 0, 3, 0), (0, 0, 0, 1), (1, 2, 3, 5)]  # a, b, c, out


def expected(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """The reference: torch in fp32, rounded once (add3's arithmetic, so the match is exact)."""
    return (a.float() + b.float() + c.float()).to(a.dtype)


def view(size: int, dtype: torch.dtype, offset: int) -> torch.Tensor:
    """``size`` elements starting ``offset`` elements into a fresh allocation (unaligned if > 0)."""
    return torch.randn(size + offset, device="cuda").to(dtype)[offset:]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("offsets", OFFSETS)
def test_add3_matches_torch(dtype: torch.dtype, size: int, offsets: tuple[int, ...]) -> None:
    a, b, c = (view(size, dtype, offset) for offset in offsets[:3])
    out_base = torch.full((size + offsets[3],), 7.0, dtype=dtype, device="cuda")
    out = out_base[offsets[3] :]
    assert add3(a, b, c, out=out) is out
    torch.testing.assert_close(out, expected(a, b, c), rtol=0, atol=0)
    assert torch.all(out_base[: offsets[3]] == 7.0)  # nothing written before the view
    torch.testing.assert_close(add3(a, b, c), expected(a, b, c), rtol=0, atol=0)


# Maps of at most 2^15 vectors take the decode plan (host::elementwise): 2^18 bf16 elements is
# the last aligned such map, 2^18 + 8 the first not; + 7 adds a tail to the last one.
@pytest.mark.parametrize("size", [2**18 - 8, 2**18, 2**18 + 7, 2**18 + 8, 2**18 + 9])
def test_add3_on_both_sides_of_the_decode_plan(size: int) -> None:
    a, b, c = (view(size, torch.bfloat16, 0) for _ in range(3))
    torch.testing.assert_close(add3(a, b, c), expected(a, b, c), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_add3_shapes_layouts_and_in_place(dtype: torch.dtype) -> None:
    a, b, c = (torch.randn(6, 35, device="cuda").to(dtype) for _ in range(3))
    torch.testing.assert_close(add3(a, b, c), expected(a, b, c), rtol=0, atol=0)
    a_t, b_s = a.t(), torch.randn(35, 12, device="cuda").to(dtype)[:, ::2]  # non-contiguous
    torch.testing.assert_close(add3(a_t, b_s, c.t()), expected(a_t, b_s, c.t()), rtol=0, atol=0)
    want = expected(a, b, c)
    assert add3(a, b, c, out=b) is b  # out may be an input
    torch.testing.assert_close(b, want, rtol=0, atol=0)


def test_add3_errors_name_the_argument() -> None:
    a = torch.randn(16, device="cuda", dtype=torch.float16)
    with pytest.raises(TypeError, match=re.escape("add3: b must be a torch.Tensor, got list")):
        add3(a, [1.0], a)
    with pytest.raises(RuntimeError, match=r"add3: tensor 'c' shape mismatch at dim 0"):
        add3(a, a, a[:8])
    with pytest.raises(RuntimeError, match=r"add3: tensor 'b' dtype mismatch: expected float16"):
        add3(a, a.float(), a)
    with pytest.raises(RuntimeError, match=r"add3: a has dtype int32; supported: float16"):
        add3(a.int(), a.int(), a.int())
    with pytest.raises(RuntimeError, match=r"add3: tensor 'out' must be contiguous"):
        add3(a, a, a, out=torch.empty(32, device="cuda", dtype=torch.float16)[::2])
    with pytest.raises(RuntimeError, match=r"add3: (a must be a CUDA tensor|tensor 'a' device)"):
        add3(a.cpu(), a, a)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
