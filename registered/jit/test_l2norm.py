"""l2norm(input, eps=1e-6, out=None): within 1 ulp of torch in fp32, on every launch plan."""

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
skip_module_unless(torch.cuda.is_available(), "l2norm tests need a CUDA GPU")

from jit_kernel.l2norm import l2norm  # noqa: E402
from testing import references  # noqa: E402
from testing.tolerances import assert_within_ulps  # noqa: E402

DTYPES = [torch.float16, torch.bfloat16]
# Lane groups of 4..32 lanes (D <= 1024), one CTA per row (above), the edges 8 and 16384.
DIMS = get_ci_test_range([8, 64, 72, 256, 520, 1024, 1032, 4096, 5120, 16384], [8, 520, 1032])
# Up to 64 rows: the decode plan (one CTA per row); 65 and more: the row loop.
ROWS = get_ci_test_range([1, 7, 64, 65, 129, 1025], [1, 65, 1025])


def randn(rows: int, dim: int, dtype: torch.dtype) -> torch.Tensor:
    return torch.randn(rows, dim, device="cuda", dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("rows", ROWS)
def test_l2norm_matches_torch(dtype: torch.dtype, dim: int, rows: int) -> None:
    x = randn(rows, dim, dtype)
    assert_within_ulps(l2norm(x), references.l2norm(x), what=f"l2norm rows={rows}")


@pytest.mark.parametrize("rows", [3, 1000])
def test_l2norm_strided_rows_out_and_in_place(rows: int) -> None:
    x = randn(rows, 1088, torch.bfloat16)[:, 32:1056]  # rows 1088 apart, 64 bytes in
    want = references.l2norm(x)
    out = randn(rows, 2048, torch.bfloat16)[:, :1024]
    assert l2norm(x, out=out) is out
    assert_within_ulps(out, want, what="strided out")
    assert l2norm(x, out=x) is x
    assert_within_ulps(x, want, what="in place")


def test_l2norm_errors_name_the_tensor() -> None:
    x = randn(4, 1024, torch.float16)
    cases = [
        (x[:, :12], "l2norm: row size 12 (input.size(1)) is not supported"),
        (x[:, 1:1001], "l2norm: tensor 'input' is not 16-byte aligned"),
        (x.float(), "l2norm: input has dtype float32; supported: float16, bfloat16"),
    ]
    for bad, message in cases:
        with pytest.raises(RuntimeError, match=re.escape(message)):
            l2norm(bad)
    with pytest.raises(RuntimeError, match=r"l2norm: (input must be a CUDA|tensor 'input' device)"):
        l2norm(x.cpu())
    with pytest.raises(RuntimeError, match=re.escape("l2norm: tensor 'out' has internal overlap")):
        l2norm(x, out=x[:1].expand(4, 1024))
    with pytest.raises(TypeError, match=re.escape("l2norm: eps must be a number, got str")):
        l2norm(x, eps="1e-6")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
