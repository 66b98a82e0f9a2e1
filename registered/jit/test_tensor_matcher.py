"""TensorMatcher, the Symbolic types and RuntimeCheck, checked on CPU tensors without a GPU.

Builds a tiny host-only module (g++, no nvcc) that includes ``sgl_kernel/tensor.h`` and asserts
the exact error text that reaches Python for every kind of mismatch.
"""

import re
import shutil
import sys

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)
import torch

from ci_runner import register_cpu_ci
from testing.skip import skip_module_unless

register_cpu_ci(est_time=25, suite="base-a-test-cpu")

tvm_ffi = pytest.importorskip("tvm_ffi", reason="apache-tvm-ffi is not installed")
skip_module_unless(
    shutil.which("g++") is not None or shutil.which("c++") is not None,
    "no host C++ compiler (g++) on PATH",
)

PROBE_SOURCE = r"""
#include <sgl_kernel/tensor.h>  // For TensorMatcher, SymbolicSize, SymbolicDType, SymbolicDevice
#include <sgl_kernel/utils.h>   // For RuntimeCheck

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>

#include <cstdint>

using tvm::ffi::TensorView;

int64_t match_pair(TensorView dst, TensorView src) {
  using namespace host;
  auto N = SymbolicSize{"num_elements"};
  auto device = SymbolicDevice{};
  TensorMatcher({N})  //
      .with_device<kDLCPU>(device)
      .with_dtype<int32_t>()
      .verify(dst, "dst")
      .verify(src, "src");
  return N.unwrap();
}

int64_t match_unnamed(TensorView a, TensorView b) {
  using namespace host;
  auto N = SymbolicSize{"n"};
  TensorMatcher({N}).verify(a).verify(b);
  return N.unwrap();
}

int64_t match_strided(TensorView x) {
  using namespace host;
  auto D = SymbolicSize{"hidden"};
  auto S = SymbolicSize{"row_stride"};
  TensorMatcher({-1, D})  //
      .with_strides({S, 1})
      .with_dtype<float>()
      .verify(x, "x");
  return S.unwrap() * 1000 + D.unwrap();
}

int64_t match_fixed(TensorView x) {
  using namespace host;
  TensorMatcher({4, -1}).with_dtype<float>().verify(x, "x");
  return 0;
}

int64_t match_dtype_options(TensorView x, TensorView y) {
  using namespace host;
  auto dtype = SymbolicDType{};
  TensorMatcher({-1})  //
      .with_dtype<float, double>(dtype)
      .verify(x, "x")
      .verify(y, "y");
  return dtype.is_type<double>() ? 64 : 32;
}

int64_t match_symbol_options(TensorView x) {
  using namespace host;
  auto dtype = SymbolicDType{};
  dtype.set_options<int64_t>();
  TensorMatcher({-1}).with_dtype<>(dtype).verify(x, "x");
  return 0;
}

int64_t match_same_shape(TensorView out, TensorView src) {
  using namespace host;
  TensorMatcher(src.shape()).with_dtype<int32_t>().verify(src, "src").verify(out, "out");
  return src.numel();
}

int64_t match_cuda(TensorView x) {
  using namespace host;
  TensorMatcher({-1}).with_device<kDLCUDA>().verify(x, "x");
  return 0;
}

int64_t match_pinned(TensorView x) {
  using namespace host;
  auto N = SymbolicSize{"num_tokens"};
  N.set_value(8);
  TensorMatcher({N}).verify(x, "x");
  return N.unwrap();
}

int64_t unwrap_unbound() {
  auto N = host::SymbolicSize{"never_bound"};
  return N.unwrap();
}

int64_t match_aligned(TensorView x) {
  using namespace host;
  TensorMatcher({-1, -1})  //
      .with_strides({-1, 1})
      .with_alignment(16)
      .verify(x, "x");
  return static_cast<int64_t>(reinterpret_cast<uintptr_t>(data_address(x)) % 16);
}

int64_t match_no_overlap(TensorView x) {
  using namespace host;
  TensorMatcher({-1, -1, -1})  //
      .with_strides({-1, -1, -1})
      .without_internal_overlap()
      .verify(x, "x");
  return 0;
}

int64_t match_rows(TensorView rows, TensorView cache) {
  using namespace host;
  auto R = SymbolicSize{"num_rows"};
  auto E = SymbolicSize{"row_elems"};
  auto S = SymbolicSize{"row_stride"};
  auto C = SymbolicSize{"cache_stride"};
  TensorMatcher::rows(R, E, S).with_dtype<float>().verify(rows, "rows");
  TensorMatcher::rows(-1, E, C).with_dtype<float>().verify(cache, "cache");
  return R.unwrap() * 1000000 + E.unwrap() * 1000 + S.unwrap();
}

int64_t runtime_check(int64_t value) {
  host::RuntimeCheck(value > 0, "value must be > 0, got ", value);
  return value;
}
"""

EXPORTS = [
    "match_pair",
    "match_unnamed",
    "match_strided",
    "match_fixed",
    "match_dtype_options",
    "match_symbol_options",
    "match_same_shape",
    "match_cuda",
    "match_pinned",
    "unwrap_unbound",
    "runtime_check",
    "match_aligned",
    "match_no_overlap",
    "match_rows",
]


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory):
    from jit_kernel.compiler import load_jit

    source = tmp_path_factory.mktemp("probe") / "tensor_matcher_probe.cpp"
    source.write_text(PROBE_SOURCE)
    return load_jit(
        "tensor_matcher_probe",
        cpp_files=[str(source)],
        cpp_wrappers=[(name, name) for name in EXPORTS],
    )


def i32(n: int) -> torch.Tensor:
    return torch.zeros(n, dtype=torch.int32)


def test_matching_tensors_bind_the_symbols(probe) -> None:
    assert probe.match_pair(i32(5), i32(5)) == 5
    assert probe.match_pair(i32(0), i32(0)) == 0
    assert probe.match_unnamed(i32(3), torch.zeros(3, dtype=torch.int32)) == 3


def test_shape_mismatch_names_tensor_symbol_and_binder(probe) -> None:
    with pytest.raises(RuntimeError) as info:
        probe.match_pair(i32(1024), i32(1000))
    message = str(info.value)
    expected = (
        "match_pair: tensor 'src' shape mismatch at dim 0 ('num_elements'): expected 1024 "
        "(bound by 'dst') but got 1000; tensor: shape=[1000], strides=[1], dtype=int32, "
        "device=cpu:0 (checked at tensor_matcher_probe.cpp:"
    )
    assert expected in message


def test_default_names_count_verify_calls(probe) -> None:
    with pytest.raises(RuntimeError, match=r"tensor 'tensor #2' shape mismatch at dim 0 \('n'\)"):
        probe.match_unnamed(i32(4), i32(5))
    with pytest.raises(RuntimeError, match=r"bound by 'tensor #1'\) but got 5"):
        probe.match_unnamed(i32(4), i32(5))


def test_rank_mismatch(probe) -> None:
    with pytest.raises(
        RuntimeError,
        match=re.escape("tensor 'dst' rank mismatch: expected 1 dims [num_elements] but got 2"),
    ):
        probe.match_pair(torch.zeros(2, 3, dtype=torch.int32), i32(6))


def test_shape_of_another_tensor_any_rank(probe) -> None:
    for shape in [(), (7,), (2, 3, 4)]:
        a, b = torch.zeros(shape, dtype=torch.int32), torch.zeros(shape, dtype=torch.int32)
        assert probe.match_same_shape(a, b) == a.numel()
    with pytest.raises(
        RuntimeError,
        match=re.escape("tensor 'out' rank mismatch: expected 3 dims [2, 3, 4] but got 1"),
    ):
        probe.match_same_shape(i32(24), torch.zeros(2, 3, 4, dtype=torch.int32))
    with pytest.raises(
        RuntimeError, match=re.escape("tensor 'out' shape mismatch at dim 1: expected 3 but got 4")
    ):
        probe.match_same_shape(
            torch.zeros(2, 4, dtype=torch.int32), torch.zeros(2, 3, dtype=torch.int32)
        )


def test_dtype_mismatch_says_expected_and_actual(probe) -> None:
    with pytest.raises(
        RuntimeError,
        match=re.escape("tensor 'src' dtype mismatch: expected int32 but got float32; tensor:"),
    ):
        probe.match_pair(i32(4), torch.zeros(4))


def test_non_contiguous_is_rejected_with_its_strides(probe) -> None:
    strided = torch.zeros(8, dtype=torch.int32)[::2]
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "tensor 'src' must be contiguous but has strides [2]; tensor: shape=[4], strides=[2]"
        ),
    ):
        probe.match_pair(i32(4), strided)


def test_device_type_mismatch(probe) -> None:
    with pytest.raises(
        RuntimeError,
        match=re.escape("tensor 'x' device mismatch: expected cuda but got cpu:0"),
    ):
        probe.match_cuda(torch.zeros(2))


def test_with_strides_binds_and_checks(probe) -> None:
    base = torch.zeros(3, 10)
    assert probe.match_strided(base[:, :4]) == 10 * 1000 + 4
    assert probe.match_strided(torch.zeros(1, 4)) == 4 * 1000 + 4
    with pytest.raises(
        RuntimeError, match=re.escape("tensor 'x' stride mismatch at dim 1: expected 1 but got 2")
    ):
        probe.match_strided(base[:, ::2])


def test_fixed_size_mismatch(probe) -> None:
    assert probe.match_fixed(torch.zeros(4, 7)) == 0
    with pytest.raises(
        RuntimeError, match=re.escape("tensor 'x' shape mismatch at dim 0: expected 4 but got 5")
    ):
        probe.match_fixed(torch.zeros(5, 7))


def test_with_dtype_type_list_is_honoured_with_a_symbol(probe) -> None:
    assert probe.match_dtype_options(torch.zeros(2), torch.zeros(3)) == 32
    assert (
        probe.match_dtype_options(
            torch.zeros(2, dtype=torch.float64), torch.zeros(3, dtype=torch.float64)
        )
        == 64
    )
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "tensor 'x' dtype mismatch: expected one of [float32, float64] but got int32"
        ),
    ):
        probe.match_dtype_options(i32(2), i32(2))
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "tensor 'y' dtype mismatch: expected float32 (bound by 'x') but got float64"
        ),
    ):
        probe.match_dtype_options(torch.zeros(2), torch.zeros(2, dtype=torch.float64))


def test_symbol_set_options_are_checked(probe) -> None:
    assert probe.match_symbol_options(torch.zeros(2, dtype=torch.int64)) == 0
    with pytest.raises(
        RuntimeError,
        match=re.escape("tensor 'x' dtype mismatch: expected one of [int64] but got int32"),
    ):
        probe.match_symbol_options(i32(2))


def test_pinned_size(probe) -> None:
    assert probe.match_pinned(i32(8)) == 8
    with pytest.raises(
        RuntimeError,
        match=re.escape("('num_tokens'): expected 8 (bound by 'set_value') but got 7"),
    ):
        probe.match_pinned(i32(7))


def test_unwrap_of_unbound_symbol(probe) -> None:
    with pytest.raises(
        RuntimeError,
        match=r"Runtime check failed at tensor_matcher_probe\.cpp:\d+: size 'never_bound' has no value",
    ):
        probe.unwrap_unbound()


def test_runtime_check_message(probe) -> None:
    assert probe.runtime_check(3) == 3
    with pytest.raises(
        RuntimeError,
        match=r"Runtime check failed at tensor_matcher_probe\.cpp:\d+: value must be > 0, got -2",
    ):
        probe.runtime_check(-2)


def i16(*shape: int) -> torch.Tensor:
    return torch.zeros(*shape, dtype=torch.int16)  # CPU allocations are 64-byte aligned


def test_with_alignment_accepts_aligned_views(probe) -> None:
    base = i16(6, 24)
    assert probe.match_aligned(base) == 0
    assert probe.match_aligned(base[:, :8]) == 0  # row stride 48 bytes
    assert probe.match_aligned(base[2:]) == 0  # storage offset 96 bytes
    assert probe.match_aligned(base[:1, 8:]) == 0  # one row: its stride does not matter
    assert probe.match_aligned(i16(0, 3)) == 0  # empty: nothing is accessed
    assert probe.match_aligned(base[:, 1:][:0]) == 0


def test_with_alignment_rejects_a_misaligned_data_address(probe) -> None:
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "match_aligned: tensor 'x' is not 16-byte aligned: its data address is 2 bytes past "
            "a 16-byte boundary (a view with a storage offset?); tensor: shape=[6, 23]"
        ),
    ):
        probe.match_aligned(i16(6, 24)[:, 1:])


def test_with_alignment_rejects_a_misaligned_row_stride(probe) -> None:
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "tensor 'x' is not 16-byte aligned: the stride of dim 0 is 12 elements (24 bytes), "
            "not a multiple of 16 bytes; tensor: shape=[4, 8], strides=[12, 1]"
        ),
    ):
        probe.match_aligned(i16(4, 12)[:, :8])


def test_data_address_includes_the_storage_offset(probe) -> None:
    # A 16-byte offset stays aligned: the check reads the view's own address, not the storage's.
    base = i16(3, 16)
    assert probe.match_aligned(base.view(-1)[8:].view(5, 8)) == 0


def test_rows_form_any_row_stride_dense_rows_of_one_size(probe) -> None:
    f32 = torch.float32
    padded = torch.zeros(5, 4, 8, dtype=f32)[:, :, :6]  # not dense: dim 2 padded
    rows = torch.zeros(3, 40, dtype=f32)[:, :24]  # row stride 40, 24 elements per row
    assert probe.match_rows(rows, torch.zeros(7, 4, 6, dtype=f32)) == 3 * 1000000 + 24 * 1000 + 40
    assert (
        probe.match_rows(torch.zeros(1, 2, 12, dtype=f32), torch.zeros(2, 24, dtype=f32)) % 1000
        == 24
    )
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "tensor 'cache' row size mismatch of dims 1.. ('row_elems'): expected 24 (bound by "
            "'rows') but got 20"
        ),
    ):
        probe.match_rows(rows, torch.zeros(7, 20, dtype=f32))
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "tensor 'cache' must have dense rows (dims 1.. contiguous) but dim 1 has stride 8 "
            "where 6 was expected"
        ),
    ):
        probe.match_rows(rows, padded)
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "tensor 'rows' rank mismatch: expected at least 2 dims [num_rows, ...] but got 1"
        ),
    ):
        probe.match_rows(torch.zeros(24, dtype=f32), torch.zeros(2, 24, dtype=f32))
    with pytest.raises(RuntimeError, match=r"tensor 'rows' dtype mismatch: expected float32"):
        probe.match_rows(torch.zeros(3, 24, dtype=torch.float64), torch.zeros(2, 24, dtype=f32))


def test_without_internal_overlap(probe) -> None:
    assert probe.match_no_overlap(torch.zeros(2, 3, 4)) == 0
    assert probe.match_no_overlap(torch.zeros(2, 3, 8)[:, :, :4]) == 0  # gaps are fine
    assert probe.match_no_overlap(torch.zeros(4, 3, 2).permute(2, 1, 0)) == 0
    assert probe.match_no_overlap(torch.zeros(1, 1, 4).expand(1, 1, 4)) == 0
    assert probe.match_no_overlap(torch.zeros(0, 3, 4)) == 0
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "tensor 'x' has internal overlap (dim 0 of size 5 has stride 0, which revisits "
            "elements): a tensor the kernel writes must not alias itself"
        ),
    ):
        probe.match_no_overlap(torch.zeros(1, 3, 4).expand(5, 3, 4))
    rows_overlap = torch.zeros(64).as_strided((1, 4, 8), (32, 4, 1))  # rows 4 apart, 8 long
    with pytest.raises(RuntimeError, match=r"tensor 'x' has internal overlap \(dim 1 of size 4"):
        probe.match_no_overlap(rows_overlap)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
