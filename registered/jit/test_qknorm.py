"""fused_inplace_qknorm(q, k, q_weight, k_weight, eps=1e-6) against a float32 torch reference.

Every head_dim (64, 128, 256, 512), T = 1, odd T, large T, GQA head counts, q/k as views of a
fused QKV projection (v and the gaps must stay untouched), padded and head-major layouts, more
than 2^31 elements, CUDA-graph capture, and every bad input.

Tolerance: per head, ``(x * rsqrt(mean(x^2) + eps)) * w`` in fp32 rounded once; the fp32 value
differs from the reference's by about 1e-6 relative, so rtol = 1 ulp of the dtype (2^-7
bfloat16, 2^-10 float16) with atol = 1e-5 for values near zero.
"""

import re
import sys

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)
import torch
from helpers_norm import ATOL, DTYPES, EPS, RTOL, randn, weight_for

from ci_runner import register_cuda_ci
from jit_kernel.env import get_ci_test_range
from testing.skip import skip_module_unless

register_cuda_ci(est_time=8, suite="base-b-kernel-unit-1-gpu-large")
register_cuda_ci(est_time=13, suite="nightly-kernel-1-gpu", nightly=True)

skip_module_unless(torch.cuda.is_available(), "fused_inplace_qknorm tests need a CUDA GPU")

from jit_kernel.qknorm import (  # noqa: E402
    _jit_qknorm_module,
    can_use_fused_inplace_qknorm,
    fused_inplace_qknorm,
)
from testing import references  # noqa: E402
from testing.replay import run_once  # noqa: E402

HEAD_DIMS = [64, 128, 256, 512]
NUM_TOKENS = get_ci_test_range([1, 2, 3, 9, 64, 257, 1000, 4109], [1, 9, 257])
HEADS = get_ci_test_range([(1, 1), (8, 1), (5, 3), (16, 16), (32, 8), (64, 4)], [(8, 1), (32, 8)])


def run_and_check(q, k, q_weight, k_weight, what: str, eps: float = EPS) -> None:
    expected_q, expected_k = references.qknorm(q, k, q_weight, k_weight, eps)
    assert fused_inplace_qknorm(q, k, q_weight, k_weight, eps) is None
    for name, actual, expected in (("q", q, expected_q), ("k", k, expected_k)):
        context = (
            f"qknorm {what}: {name} shape={tuple(actual.shape)} strides={actual.stride()} "
            f"dtype={actual.dtype}"
        )
        torch.testing.assert_close(
            actual.float(),
            expected,
            rtol=RTOL[actual.dtype],
            atol=ATOL,
            msg=lambda message, context=context: f"{context}\n{message}",
        )


# ---------------------------------------------------------------- correctness


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("heads", HEADS)
@pytest.mark.parametrize("num_tokens", NUM_TOKENS)
def test_qknorm_matches_reference(
    dtype: torch.dtype, head_dim: int, heads: tuple[int, int], num_tokens: int
) -> None:
    num_q, num_k = heads
    q = randn(num_tokens, num_q, head_dim, dtype=dtype)
    k = randn(num_tokens, num_k, head_dim, dtype=dtype)
    run_and_check(q, k, weight_for(head_dim, dtype), weight_for(head_dim, dtype), "contiguous")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("head_dim", HEAD_DIMS)
def test_qknorm_views_of_a_fused_qkv_buffer(dtype: torch.dtype, head_dim: int) -> None:
    num_tokens, num_q, num_k, pad = 37, 16, 4, 8
    width = (num_q + 2 * num_k) * head_dim + pad  # token stride with a 16-byte gap
    sentinel = 5.0
    qkv = torch.full((num_tokens, width), sentinel, dtype=dtype, device="cuda")
    q_end, k_end = num_q * head_dim, (num_q + num_k) * head_dim
    qkv[:, :k_end] = randn(num_tokens, k_end, dtype=dtype)
    q = qkv[:, :q_end].view(num_tokens, num_q, head_dim)
    k = qkv[:, q_end:k_end].view(num_tokens, num_k, head_dim)
    run_and_check(q, k, weight_for(head_dim, dtype), weight_for(head_dim, dtype), "qkv views")
    assert torch.all(qkv[:, k_end:] == sentinel), "wrote into v or the padding"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("head_dim", HEAD_DIMS)
def test_qknorm_padded_heads_and_head_major_layout(dtype: torch.dtype, head_dim: int) -> None:
    num_tokens, num_q, num_k, sentinel = 23, 6, 2, -2.0
    q_base = torch.full((num_tokens, num_q, head_dim + 16), sentinel, dtype=dtype, device="cuda")
    q = q_base[:, :, 8 : 8 + head_dim]  # head stride D + 16, offset 16 bytes
    q.copy_(randn(num_tokens, num_q, head_dim, dtype=dtype))
    k = randn(num_k, num_tokens, head_dim, dtype=dtype).transpose(0, 1)  # strides (D, T*D, 1)
    run_and_check(q, k, weight_for(head_dim, dtype), weight_for(head_dim, dtype), "layouts")
    guard = q_base.clone()
    guard[:, :, 8 : 8 + head_dim] = sentinel
    assert torch.all(guard == sentinel), "wrote outside q's elements"


@pytest.mark.parametrize(
    ("num_tokens", "num_q", "num_k", "head_dim"),
    get_ci_test_range(
        [(16384, 32, 8, 128), (32768, 16, 2, 64), (8192, 8, 8, 256), (4096, 16, 4, 512)],
        [(16384, 32, 8, 128)],
    ),
)
def test_qknorm_large_num_tokens(num_tokens: int, num_q: int, num_k: int, head_dim: int) -> None:
    dtype = torch.bfloat16
    q = randn(num_tokens, num_q, head_dim, dtype=dtype)
    k = randn(num_tokens, num_k, head_dim, dtype=dtype)
    run_and_check(q, k, weight_for(head_dim, dtype), weight_for(head_dim, dtype), "large T")


def test_qknorm_nothing_to_do() -> None:
    w = weight_for(128, torch.bfloat16)
    empty = torch.empty(0, 8, 128, dtype=torch.bfloat16, device="cuda")
    fused_inplace_qknorm(empty, torch.empty(0, 2, 128, dtype=torch.bfloat16, device="cuda"), w, w)
    q = randn(3, 4, 128, dtype=torch.bfloat16)
    no_k = torch.empty(3, 0, 128, dtype=torch.bfloat16, device="cuda")
    expected = references.rmsnorm(q, w)
    fused_inplace_qknorm(q, no_k, w, w)  # k without heads: only q is normalised
    torch.testing.assert_close(q.float(), expected, rtol=2.0**-7, atol=ATOL)


@pytest.mark.parametrize("capture", [False, True], ids=["eager", "graph"])
def test_qknorm_dependent_calls_back_to_back(capture: bool) -> None:
    """Calls that normalise the previous call's output again, with no host sync in between (the
    kernel releases the next one before its PDL wait): each must see all of its predecessor."""
    dtype, calls = torch.bfloat16, 8
    q = randn(16, 32, 128, dtype=dtype)
    k = randn(16, 8, 128, dtype=dtype)
    q_weight, k_weight = weight_for(128, dtype), weight_for(128, dtype)
    expected_q, expected_k = q.clone(), k.clone()
    for _ in range(calls):
        expected_q, expected_k = (
            x.to(dtype) for x in references.qknorm(expected_q, expected_k, q_weight, k_weight, EPS)
        )
    fused_inplace_qknorm(q.clone(), k.clone(), q_weight, k_weight, EPS)  # load the module
    torch.cuda.synchronize()

    def run() -> None:
        for _ in range(calls):
            fused_inplace_qknorm(q, k, q_weight, k_weight, EPS)

    run_once(run, in_graph=capture)
    for name, actual, expected in (("q", q, expected_q), ("k", k, expected_k)):
        torch.testing.assert_close(
            actual,
            expected,
            rtol=calls * RTOL[dtype],
            atol=ATOL,
            msg=lambda m, name=name: f"{name} after {calls} dependent calls: {m}",
        )


def test_qknorm_cuda_graph_capture_and_replay() -> None:
    dtype = torch.bfloat16
    q, k = randn(16, 32, 128, dtype=dtype), randn(16, 8, 128, dtype=dtype)
    q_weight, k_weight = weight_for(128, dtype), weight_for(128, dtype)
    fused_inplace_qknorm(q, k, q_weight, k_weight)  # warm-up: module and occupancy cached
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fused_inplace_qknorm(q, k, q_weight, k_weight)
    for _ in range(2):
        q.copy_(randn(16, 32, 128, dtype=dtype))
        k.copy_(randn(16, 8, 128, dtype=dtype))
        expected_q, expected_k = references.rmsnorm(q, q_weight), references.rmsnorm(k, k_weight)
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(q.float(), expected_q, rtol=2.0**-7, atol=ATOL)
        torch.testing.assert_close(k.float(), expected_k, rtol=2.0**-7, atol=ATOL)


def test_qknorm_beyond_2_pow_31_elements() -> None:
    num_q, num_k, head_dim = 32, 8, 128
    num_tokens = 2**31 // (num_q * head_dim) + 3  # q's last tokens start past element 2^31
    need = num_tokens * (num_q + num_k) * head_dim * 2 + (1 << 30)
    if torch.cuda.mem_get_info()[0] < need:
        pytest.skip(f"needs {need / 2**30:.1f} GiB of free GPU memory")
    q = torch.randn(num_tokens, num_q, head_dim, dtype=torch.bfloat16, device="cuda")
    k = torch.randn(num_tokens, num_k, head_dim, dtype=torch.bfloat16, device="cuda")
    q_weight, k_weight = weight_for(head_dim, torch.bfloat16), weight_for(head_dim, torch.bfloat16)
    boundary = 2**31 // (num_q * head_dim)
    tokens = [0, 1, num_tokens // 2, boundary - 1, boundary, num_tokens - 2, num_tokens - 1]
    index = torch.tensor(tokens, device="cuda")
    expected_q, expected_k = (
        references.rmsnorm(q[index], q_weight),
        references.rmsnorm(k[index], k_weight),
    )
    fused_inplace_qknorm(q, k, q_weight, k_weight)
    torch.testing.assert_close(q[index].float(), expected_q, rtol=2.0**-7, atol=ATOL)
    torch.testing.assert_close(k[index].float(), expected_k, rtol=2.0**-7, atol=ATOL)
    del q, k
    torch.cuda.empty_cache()


# ---------------------------------------------------------------- can_use


def test_can_use_fused_inplace_qknorm() -> None:
    for head_dim in HEAD_DIMS:
        assert can_use_fused_inplace_qknorm(head_dim, torch.bfloat16)
        assert can_use_fused_inplace_qknorm(head_dim, torch.float16)
    for head_dim in (0, 32, 80, 96, 100, 192, 1024):
        assert not can_use_fused_inplace_qknorm(head_dim, torch.bfloat16)
    assert not can_use_fused_inplace_qknorm(128, torch.float32)
    assert not can_use_fused_inplace_qknorm(128.0, torch.bfloat16)  # type: ignore[arg-type]


# ---------------------------------------------------------------- errors


def good_call_still_works() -> None:
    dtype = torch.bfloat16
    q, k = randn(3, 4, 128, dtype=dtype), randn(3, 2, 128, dtype=dtype)
    run_and_check(q, k, weight_for(128, dtype), weight_for(128, dtype), "good call after error")


def bad_inputs() -> list[tuple[str, object, str]]:
    dtype = torch.bfloat16
    q, k = randn(4, 8, 128, dtype=dtype), randn(4, 2, 128, dtype=dtype)
    w = weight_for(128, dtype)
    op = fused_inplace_qknorm
    return [
        (
            "cpu q",
            lambda: op(q.cpu(), k, w, w),
            r"fused_inplace_qknorm: (q must be a CUDA tensor, got device cpu|tensor 'q' device mismatch: expected cuda but got cpu:0)",
        ),
        (
            "cpu k_weight",
            lambda: op(q, k, w, w.cpu()),
            re.escape(
                "fused_inplace_qknorm: tensor 'k_weight' device mismatch: expected cuda but got cpu:0"
            ),
        ),
        (
            "float32",
            lambda: op(q.float(), k.float(), w.float(), w.float()),
            re.escape("fused_inplace_qknorm: q has dtype float32; supported: float16, bfloat16"),
        ),
        (
            "k dtype",
            lambda: op(q, k.half(), w, w),
            re.escape(
                "fused_inplace_qknorm: tensor 'k' dtype mismatch: expected bfloat16 but got float16"
            ),
        ),
        (
            "q_weight dtype",
            lambda: op(q, k, w.half(), w),
            re.escape(
                "fused_inplace_qknorm: tensor 'q_weight' dtype mismatch: expected bfloat16 but got float16"
            ),
        ),
        (
            "2-D q",
            lambda: op(q.view(4, 1024), k, w, w),
            re.escape(
                "fused_inplace_qknorm: tensor 'q' rank mismatch: expected 3 dims [num_tokens, num_q_heads, head_dim] but got 2"
            ),
        ),
        (
            "token count",
            lambda: op(q, k[:3], w, w),
            re.escape(
                "fused_inplace_qknorm: tensor 'k' shape mismatch at dim 0 ('num_tokens'): expected 4 (bound by 'q') but got 3"
            ),
        ),
        (
            "k head_dim",
            lambda: op(q, randn(4, 2, 64, dtype=dtype), w, w),
            re.escape(
                "fused_inplace_qknorm: tensor 'k' shape mismatch at dim 2 ('head_dim'): expected 128 (bound by 'q') but got 64"
            ),
        ),
        (
            "k_weight length",
            lambda: op(q, k, w, weight_for(64, dtype)),
            re.escape(
                "fused_inplace_qknorm: tensor 'k_weight' shape mismatch at dim 0 ('head_dim'): expected 128 (bound by 'q') but got 64"
            ),
        ),
        (
            "head_dim 96",
            lambda: op(randn(4, 8, 96, dtype=dtype), randn(4, 2, 96, dtype=dtype), w[:96], w[:96]),
            re.escape(
                "fused_inplace_qknorm: head_dim 96 (q.size(2)) is not supported: it must be one of 64, 128, 256, 512"
            ),
        ),
        (
            "head_dim 1024",
            lambda: op(randn(2, 2, 1024, dtype=dtype), randn(2, 1, 1024, dtype=dtype), w, w),
            re.escape("fused_inplace_qknorm: head_dim 1024 (q.size(2)) is not supported"),
        ),
        (
            "misaligned q",
            lambda: op(randn(4, 8, 136, dtype=dtype)[:, :, 4:132], k, w, w),
            re.escape(
                "fused_inplace_qknorm: tensor 'q' is not 16-byte aligned: its data address is 8 bytes past"
            ),
        ),
        (
            "misaligned k head stride",
            lambda: op(q, randn(4, 2, 132, dtype=dtype)[:, :, :128], w, w),
            re.escape(
                "fused_inplace_qknorm: tensor 'k' is not 16-byte aligned: the stride of dim 1 is 132 elements (264 bytes)"
            ),
        ),
        (
            "misaligned q_weight",
            lambda: op(q, k, weight_for(129, dtype)[1:], w),
            re.escape("fused_inplace_qknorm: tensor 'q_weight' is not 16-byte aligned"),
        ),
        (
            "overlapping heads",
            lambda: op(q, randn(4, 1, 128, dtype=dtype).expand(4, 2, 128), w, w),
            re.escape(
                "fused_inplace_qknorm: tensor 'k' has internal overlap (dim 1 of size 2 has stride 0"
            ),
        ),
        (
            "q is k",
            lambda: op(q, q[:, :2], w, w),
            re.escape("fused_inplace_qknorm: q and k are the same memory"),
        ),
    ]


@pytest.mark.parametrize("case", [case[0] for case in bad_inputs()])
def test_qknorm_bad_input_raises_and_context_survives(case: str) -> None:
    _, thunk, message = next(c for c in bad_inputs() if c[0] == case)
    with pytest.raises(RuntimeError, match=message):
        thunk()
    good_call_still_works()


def test_qknorm_module_checks_directly() -> None:
    module = _jit_qknorm_module()
    q = randn(2, 4, 128, dtype=torch.bfloat16)
    w = weight_for(128, torch.bfloat16)
    with pytest.raises(
        RuntimeError,
        match=re.escape("tensor 'k' dtype mismatch: expected bfloat16 but got float16"),
    ):  # the export takes q's dtype and checks k and the weights against it
        module.fused_inplace_qknorm(q, q.half(), w, w, EPS)
    good_call_still_works()


@pytest.mark.parametrize(
    ("position", "value", "message"),
    [
        (0, [1.0], "fused_inplace_qknorm: q must be a torch.Tensor, got list"),
        (1, None, "fused_inplace_qknorm: k must be a torch.Tensor, got NoneType"),
        (2, 1.0, "fused_inplace_qknorm: q_weight must be a torch.Tensor, got float"),
        (3, "w", "fused_inplace_qknorm: k_weight must be a torch.Tensor, got str"),
        (4, "1e-6", "fused_inplace_qknorm: eps must be a number, got str"),
    ],
)
def test_qknorm_rejects_non_tensor_arguments(position: int, value: object, message: str) -> None:
    dtype = torch.bfloat16
    args = [randn(2, 4, 128, dtype=dtype), randn(2, 1, 128, dtype=dtype)]
    args += [weight_for(128, dtype), weight_for(128, dtype), EPS]
    args[position] = value
    with pytest.raises(TypeError, match=re.escape(message)):
        fused_inplace_qknorm(*args)
    good_call_still_works()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
