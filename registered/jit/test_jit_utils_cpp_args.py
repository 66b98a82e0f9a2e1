"""make_cpp_args: Python values to C++ template arguments, and the errors for bad values."""

import sys
from pathlib import Path

import pytest
import torch

from ci_runner import register_cpu_ci
from jit_kernel.compiler import CPPArgList, build_only, load_jit, make_cpp_args

register_cpu_ci(est_time=7, suite="base-a-test-cpu")


def test_bool_is_checked_before_int():
    assert make_cpp_args(True, False, 1, 0) == ["true", "false", "1", "0"]


def test_ints_keep_their_sign():
    assert make_cpp_args(-3, 128, 2**40) == ["-3", "128", "1099511627776"]


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.5, "0.5"), (3.0, "3.0"), (1e-06, "1e-06"), (-2.5e20, "-2.5e+20"), (0.1, "0.1")],
)
def test_floats_become_round_tripping_literals(value, text):
    assert make_cpp_args(value) == [text]
    assert float(text) == value


@pytest.mark.parametrize(
    ("dtype", "alias"),
    [
        (torch.float16, "fp16_t"),
        (torch.bfloat16, "bf16_t"),
        (torch.float32, "fp32_t"),
        (torch.float64, "double"),
        (torch.float8_e4m3fn, "fp8_e4m3_t"),
        (torch.float8_e5m2, "fp8_e5m2_t"),
        (torch.int8, "int8_t"),
        (torch.int16, "int16_t"),
        (torch.int32, "int32_t"),
        (torch.int64, "int64_t"),
        (torch.uint8, "uint8_t"),
        (torch.bool, "bool"),
    ],
)
def test_dtypes_map_to_header_aliases(dtype, alias):
    assert make_cpp_args(dtype) == [alias]


def test_identifier_strings_pass_through():
    assert make_cpp_args("kFoo", "device::fp16_t", "::std::int32_t") == [
        "kFoo",
        "device::fp16_t",
        "::std::int32_t",
    ]


def test_list_str_joins_for_templates():
    args = make_cpp_args(torch.float16, True, 128)
    assert isinstance(args, CPPArgList)
    assert str(args) == "fp16_t, true, 128"
    assert f"Kernel<{args}>::run" == "Kernel<fp16_t, true, 128>::run"
    assert list(args) == ["fp16_t", "true", "128"]


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_non_finite_floats_are_rejected(value):
    with pytest.raises(TypeError, match=r"argument 1 is .*finite number"):
        make_cpp_args(1, value)


@pytest.mark.parametrize("value", ["a b", "1abc", "x;y", "", "std::", "T<int>", '"quoted"'])
def test_strings_that_are_not_identifiers_are_rejected(value):
    with pytest.raises(TypeError, match=r"argument 0 is the string .*C\+\+ identifier"):
        make_cpp_args(value)


def test_dtype_without_alias_is_rejected_with_the_supported_list():
    with pytest.raises(TypeError, match=r"argument 2 is torch.complex64.*supported dtypes: "):
        make_cpp_args(1, 2, torch.complex64)


@pytest.mark.parametrize("value", [None, [1], (1,), object(), b"x"])
def test_other_types_are_rejected_with_position_and_type(value):
    with pytest.raises(TypeError, match=rf"argument 1 is .* of type {type(value).__name__}"):
        make_cpp_args(True, value)


def test_converted_arguments_compile_as_template_arguments(tmp_path: Path, monkeypatch):
    """The produced text is valid C++20: bool, int, double and type template parameters.

    Floats become double literals, so floating template parameters are declared ``double``
    (GCC rejects a double literal for a ``float`` parameter).
    """
    monkeypatch.setenv("JIT_KERNEL_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "probe.cpp"
    source.write_text(
        "#include <cstdint>\n"
        "template <bool B, int I, double D, double F, typename T>\n"
        "int64_t probe() { return (B ? 1 : 0) + I + int64_t(D * 1e6) + int64_t(F * 4)"
        " + int64_t(sizeof(T)); }\n"
    )
    args = make_cpp_args(True, -3, 1e-06, 0.25, torch.int64)
    with build_only():
        result = load_jit(
            "probe", *args, cpp_files=[str(source)], cpp_wrappers=[("probe", f"probe<{args}>")]
        )
    module = load_jit(
        "probe", *args, cpp_files=[str(source)], cpp_wrappers=[("probe", f"probe<{args}>")]
    )
    assert result.built
    assert module.probe() == 1 - 3 + 1 + 1 + 8


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
