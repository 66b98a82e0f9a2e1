"""silu_and_mul / gelu_and_mul / gelu_tanh_and_mul: against float32 torch, layouts and errors.

Reference: ``act(x[..., :d].float()) * x[..., d:].float()`` with torch.nn.functional.silu /
gelu(approximate="none") / gelu(approximate="tanh"), rounded once to the dtype. The kernel
computes the same float32 expression with CUDA's accurate expf/erff/tanhf, which may differ from
torch's by a few float32 ulps; tolerances: float32 rtol 1e-5 with atol 1e-5 (cancellation in
1 + erf/tanh near x = -5 loses absolute, not relative, precision), float16 rtol 2e-3 and
bfloat16 rtol 1e-2 (one unit in the last place of the dtype, also at a binade edge).
"""

import re
import sys

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)
import torch

from ci_runner import register_cuda_ci
from jit_kernel.env import get_ci_test_range
from testing.skip import skip_module_unless

register_cuda_ci(est_time=11, suite="base-b-kernel-unit-1-gpu-large")
register_cuda_ci(est_time=9, suite="nightly-kernel-1-gpu", nightly=True)

skip_module_unless(torch.cuda.is_available(), "activation tests need a CUDA GPU")

from jit_kernel.activation import (  # noqa: E402
    _jit_activation_module,
    can_use_activation,
    gelu_and_mul,
    gelu_tanh_and_mul,
    silu_and_mul,
)
from testing import references  # noqa: E402

OPS = {
    "silu_and_mul": silu_and_mul,
    "gelu_and_mul": gelu_and_mul,
    "gelu_tanh_and_mul": gelu_tanh_and_mul,
}
DTYPES = [torch.float16, torch.bfloat16, torch.float32]
# Input shapes [..., 2 d]: d = 1, odd d (3, 7: 2- or 4-byte vectors), d = 100 (8-byte vectors
# at fp16), 16-byte multiples, model sizes (4096, 11008, 14336), rank 1..4, many short rows.
SHAPES = get_ci_test_range(
    [
        (2,),
        (1, 2),
        (5, 6),
        (4, 14),
        (7, 16),
        (9, 200),
        (2, 3, 512),
        (2, 5, 3, 64),
        (4097, 128),
        (1, 2 * 4096),
        (33, 2 * 4096),
        (128, 2 * 11008),
        (3, 2 * 14336),
        (1000, 2 * 256),
    ],
    [(1, 2), (5, 6), (7, 16), (9, 200), (2, 3, 512), (33, 2 * 4096), (128, 2 * 11008)],
)
TOLERANCES = references.ROUNDED_TOL


def reference(op: str, x: torch.Tensor) -> torch.Tensor:
    return references.act_and_mul(op, x).to(x.dtype)


def assert_close(actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    torch.testing.assert_close(
        actual, expected, **TOLERANCES[expected.dtype], msg=lambda m: f"{what}: {m}"
    )


# ---------------------------------------------------------------- results


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", list(OPS))
def test_activation_matches_reference(op: str, dtype: torch.dtype, shape) -> None:
    x = torch.randn(shape, dtype=dtype, device="cuda") * 3
    out = OPS[op](x)
    assert out.shape == (*shape[:-1], shape[-1] // 2) and out.dtype == dtype
    assert_close(out, reference(op, x), f"{op} {dtype} {shape}")


# At most 2^15 output vectors take the decode plan (ActConfig): 64 rows of d = 4096 bf16 (512
# vectors a row) is the last such batch, 65 rows the first not.
@pytest.mark.parametrize("rows", [63, 64, 65])
@pytest.mark.parametrize("op", list(OPS))
def test_activation_on_both_sides_of_the_decode_plan(op: str, rows: int) -> None:
    x = torch.randn(rows, 2 * 4096, dtype=torch.bfloat16, device="cuda") * 3
    assert_close(OPS[op](x), reference(op, x), f"{op} {rows} x 4096")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", list(OPS))
def test_activation_out_param_writes_every_element(op: str, dtype: torch.dtype) -> None:
    x = torch.randn(37, 2 * 200, dtype=dtype, device="cuda")
    out = torch.full((37, 200), float("nan"), dtype=dtype, device="cuda")
    assert OPS[op](x, out=out) is out
    assert_close(out, reference(op, x), f"{op} {dtype} out=")  # a NaN left over would fail


@pytest.mark.parametrize("offset", [1, 2, 3, 8])
@pytest.mark.parametrize("op", list(OPS))
def test_activation_views_with_offsets_keep_the_guards(op: str, offset: int) -> None:
    """input and out at element offsets (narrow vectors when misaligned); neighbours intact."""
    rows, d = 19, 136
    in_flat = torch.randn(rows * 2 * d + offset, dtype=torch.float16, device="cuda")
    x = in_flat[offset:].view(rows, 2 * d)
    out_flat = torch.full((rows * d + 2 * offset,), 7.0, dtype=torch.float16, device="cuda")
    out = out_flat[offset : offset + rows * d].view(rows, d)
    OPS[op](x, out=out)
    assert_close(out, reference(op, x), f"{op} offset {offset}")
    assert bool((out_flat[:offset] == 7).all()), "written before out"
    assert bool((out_flat[offset + rows * d :] == 7).all()), "written after out"


@pytest.mark.parametrize("op", list(OPS))
def test_activation_non_contiguous_input_is_copied_first(op: str) -> None:
    base = torch.randn(64, 2 * 96 * 2, dtype=torch.bfloat16, device="cuda")
    for x in (base[:, : 2 * 96], base[::2], base.view(64, 2, 2 * 96).transpose(0, 1)):
        assert not x.is_contiguous()
        assert_close(OPS[op](x), reference(op, x), f"{op} view {tuple(x.stride())}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("op", list(OPS))
def test_activation_large_magnitudes(op: str, dtype: torch.dtype) -> None:
    """exp/erf/tanh saturation: x = +-80, +-1e4 (no inf/NaN where torch has none)."""
    gate = torch.tensor([80.0, -80.0, 1e4, -1e4, 0.0, -0.0, 5.0, -5.0], dtype=dtype)
    up = torch.tensor([1.0, 2.0, -1.0, 3.0, 4.0, -4.0, 0.5, 1.5], dtype=dtype)
    x = torch.cat([gate, up]).view(1, -1).cuda()
    assert_close(OPS[op](x), reference(op, x), f"{op} {dtype} large magnitudes")


@pytest.mark.parametrize("op", list(OPS))
def test_activation_empty_inputs(op: str) -> None:
    for shape in [(0, 16), (4, 0), (0,)]:
        x = torch.empty(shape, dtype=torch.float16, device="cuda")
        out = OPS[op](x)
        assert out.shape == (*shape[:-1], shape[-1] // 2)
    torch.cuda.synchronize()


def test_activation_uses_the_current_stream() -> None:
    x = torch.randn(4096, 2 * 4096, dtype=torch.bfloat16, device="cuda")
    stream = torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        out = silu_and_mul(x)
    stream.synchronize()
    assert_close(out, reference("silu_and_mul", x), "silu_and_mul on a side stream")


@pytest.mark.parametrize("op", list(OPS))
def test_activation_cuda_graph_replay(op: str) -> None:
    x = torch.randn(16, 2 * 1024, dtype=torch.bfloat16, device="cuda")
    out = torch.empty(16, 1024, dtype=torch.bfloat16, device="cuda")
    OPS[op](x, out=out)  # warm-up: the module exists before capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        OPS[op](x, out=out)
    for _ in range(3):
        x.copy_(torch.randn_like(x))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert_close(out, reference(op, x), f"{op} after replay")


def test_activation_more_than_2_pow_31_input_elements() -> None:
    """input [65537, 32770] bf16 (2**31 + 163842 elements, 4.3 GB): 64-bit row offsets."""
    rows, two_d = (1 << 16) + 1, (1 << 15) + 2
    x = torch.empty(rows, two_d, dtype=torch.bfloat16, device="cuda")
    sample = [0, 1, rows // 2, rows - 3, rows - 2, rows - 1]
    x[sample] = torch.randn(len(sample), two_d, dtype=torch.bfloat16, device="cuda")
    out = gelu_tanh_and_mul(x)
    assert_close(out[sample], reference("gelu_tanh_and_mul", x[sample]), "large gelu_tanh")


def test_can_use_activation() -> None:
    assert can_use_activation(4096, torch.bfloat16) and can_use_activation(3, torch.float32)
    assert can_use_activation(0, torch.float16)
    assert not can_use_activation(4096, torch.float64) and not can_use_activation(-1, torch.half)
    assert not can_use_activation(2**31, torch.half) and not can_use_activation(8.0, torch.half)


# ---------------------------------------------------------------- errors


def assert_still_works() -> None:
    x = torch.randn(5, 64, dtype=torch.float16, device="cuda")
    assert_close(silu_and_mul(x), reference("silu_and_mul", x), "after an error")


@pytest.mark.parametrize("op", list(OPS))
def test_activation_bad_shapes_and_outs(op: str) -> None:
    fn = OPS[op]
    x = torch.randn(4, 8, dtype=torch.float16, device="cuda")
    cases = [
        (
            torch.randn(4, 7, dtype=torch.float16, device="cuda"),
            None,
            "tensor 'input' must have an even last dim (2 * d) but has shape [4, 7]",
        ),
        (
            torch.tensor(1.0, dtype=torch.float16, device="cuda"),
            None,
            "tensor 'input' must have an even last dim (2 * d) but has shape []",
        ),
        (
            x,
            torch.empty(4, 5, dtype=torch.float16, device="cuda"),
            "tensor 'out' shape mismatch at dim 1: expected 4 but got 5",
        ),
        (
            x,
            torch.empty(16, dtype=torch.float16, device="cuda"),
            "tensor 'out' rank mismatch: expected 2 dims [4, 4] but got 1",
        ),
        (
            x,
            torch.empty(4, 4, dtype=torch.float32, device="cuda"),
            "tensor 'out' dtype mismatch: expected float16 but got float32",
        ),
        (
            x,
            torch.empty(4, 8, dtype=torch.float16, device="cuda")[:, ::2],
            "tensor 'out' must be contiguous but has strides [8, 2]",
        ),
        (
            x,
            torch.empty(4, 4, dtype=torch.float16),
            "tensor 'out' device mismatch: expected cuda but got cpu:0",
        ),
    ]
    for inp, out, message in cases:
        try:
            with pytest.raises(RuntimeError, match=re.escape(f"{op}: {message}")):
                fn(inp, out=out)
        except (AssertionError, pytest.fail.Exception) as failure:
            raise AssertionError(f"{op} expecting {message!r}: {failure}") from None
        assert_still_works()


@pytest.mark.parametrize("op", list(OPS))
def test_activation_cpu_and_unsupported_dtype_errors(op: str) -> None:
    fn = OPS[op]
    with pytest.raises(
        RuntimeError,
        match=rf"{op}: (input must be a CUDA tensor, got device cpu|"
        r"tensor 'input' device mismatch: expected cuda but got cpu)",
    ):
        fn(torch.randn(4, 8, dtype=torch.float16))
    for dtype in (torch.float64, torch.int32):
        with pytest.raises(
            RuntimeError,
            match=re.escape(
                f"{op}: input has dtype {str(dtype).removeprefix('torch.')}; "
                "supported: float16, bfloat16, float32"
            ),
        ):
            fn(torch.ones(4, 8, dtype=dtype, device="cuda"))
    assert_still_works()


@pytest.mark.parametrize("op", list(OPS))
def test_activation_rejects_non_tensor_arguments(op: str) -> None:
    fn = OPS[op]
    for call, message in [
        (lambda: fn([1.0, 2.0]), f"{op}: input must be a torch.Tensor, got list"),
        (lambda: fn(None), f"{op}: input must be a torch.Tensor, got NoneType"),
        (
            lambda: fn(torch.ones(2, 4, device="cuda"), out=[0.0] * 4),
            f"{op}: out must be a torch.Tensor or None, got list",
        ),
        (
            lambda: fn(torch.ones(2, 4, device="cuda"), out=3),
            f"{op}: out must be a torch.Tensor or None, got int",
        ),
    ]:
        with pytest.raises(TypeError, match=re.escape(message)):
            call()
    assert_still_works()


def test_module_exports_check_their_arguments() -> None:
    module = _jit_activation_module()
    x = torch.randn(4, 8, dtype=torch.bfloat16, device="cuda")
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "gelu_and_mul: tensor 'out' dtype mismatch: expected float16 but got bfloat16"
        ),
    ):  # the export takes input's dtype and checks out against it
        module.gelu_and_mul(torch.empty(4, 4, dtype=torch.bfloat16, device="cuda"), x.half())


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
