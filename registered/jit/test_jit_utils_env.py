"""The environment contract: CI switches through the shared boolean parser, and the target arch."""

import sys

import pytest
import torch

import ci_runner.env
import jit_kernel.env
from ci_runner import register_cpu_ci
from jit_kernel.compiler import ArchError, get_jit_cuda_arch, is_arch_support_pdl, override_arch
from jit_kernel.compiler.arch import ArchInfo, parse_arch
from jit_kernel.env import get_ci_test_range, is_in_ci, should_run_full_tests

register_cpu_ci(est_time=5, suite="base-a-test-cpu")

CI = "SGLANG_IS_IN_CI"
FULL = "SGLANG_JIT_KERNEL_RUN_FULL_TESTS"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in (CI, FULL, "TVM_FFI_CUDA_ARCH_LIST"):
        monkeypatch.delenv(name, raising=False)


WORDS = ["1", "0", "true", "TRUE", "False", "yes", "no", " on ", "OFF", "", "  ", "maybe", "2", "y"]


@pytest.mark.parametrize("text", WORDS)
def test_switches_parse_as_the_runner_does(text):
    """jit_kernel keeps its own reader (it imports nothing of ci_runner); both agree on every word."""
    environ = {"X": text}

    def read(parser):
        try:
            return parser("X", default=None, environ=environ)
        except ValueError:
            return "error"

    assert read(jit_kernel.env.get_bool_env) == read(ci_runner.env.get_bool_env)


def test_local_run_gets_the_full_range():
    assert not is_in_ci()
    assert not should_run_full_tests()
    assert get_ci_test_range([1, 2, 3], [1]) == [1, 2, 3]


@pytest.mark.parametrize("value", ["1", "true", "TRUE", "yes", "on"])
def test_ci_gets_the_small_range(monkeypatch, value):
    monkeypatch.setenv(CI, value)
    assert is_in_ci()
    assert get_ci_test_range([1, 2, 3], [1]) == [1]


def test_full_tests_win_in_ci(monkeypatch):
    monkeypatch.setenv(CI, "1")
    monkeypatch.setenv(FULL, "true")
    assert should_run_full_tests()
    assert get_ci_test_range("full", "ci") == "full"


@pytest.mark.parametrize("value", ["0", "false", "off", ""])
def test_false_values(monkeypatch, value):
    monkeypatch.setenv(CI, value)
    monkeypatch.setenv(FULL, value)
    assert not is_in_ci()
    assert not should_run_full_tests()


@pytest.mark.parametrize("name", [CI, FULL])
def test_garbage_is_an_error_naming_the_variable(monkeypatch, name):
    monkeypatch.setenv(name, "maybe")
    with pytest.raises(ValueError, match=rf"{name}='maybe' is not a boolean"):
        get_ci_test_range(1, 2)


@pytest.mark.parametrize(
    ("text", "target", "sm", "define"),
    [
        ("9.0", "9.0a", "sm_90a", "-DSGL_CUDA_ARCH=900"),
        ("9.0a", "9.0a", "sm_90a", "-DSGL_CUDA_ARCH=900"),
        ("10.0", "10.0a", "sm_100a", "-DSGL_CUDA_ARCH=1000"),
        ("8.6", "8.6", "sm_86", "-DSGL_CUDA_ARCH=860"),
    ],
)
def test_arch_spellings(text, target, sm, define):
    info = parse_arch(text)
    assert info.target_name == target
    assert info.sm == sm
    assert info.define_flag == define
    assert info.gencode_flag == f"-gencode=arch=compute_{sm[3:]},code={sm}"


@pytest.mark.parametrize("text", ["9", "sm_90", "9.0.1", "nine", "9.10"])
def test_bad_arch_is_an_error_naming_the_source(text):
    with pytest.raises(ArchError, match=rf"--arch: '{text}' is not a CUDA architecture"):
        parse_arch(text, "--arch")


def test_arch_list_env_first_entry(monkeypatch):
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "8.9 9.0a")
    assert get_jit_cuda_arch() == ArchInfo(8, 9)
    assert not is_arch_support_pdl()


def test_bad_arch_list_env_names_the_variable(monkeypatch):
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "hopper")
    with pytest.raises(ArchError, match="TVM_FFI_CUDA_ARCH_LIST: 'hopper'"):
        get_jit_cuda_arch()


def test_override_wins_and_is_scoped(monkeypatch):
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "8.0")
    with override_arch("9.0") as info:
        assert info == ArchInfo(9, 0)
        assert get_jit_cuda_arch() == ArchInfo(9, 0)
        assert is_arch_support_pdl()
    assert get_jit_cuda_arch() == ArchInfo(8, 0)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a visible GPU")
def test_no_gpu_and_no_override_says_how_to_fix():
    with pytest.raises(ArchError, match=r"TVM_FFI_CUDA_ARCH_LIST=9\.0.*--arch"):
        get_jit_cuda_arch()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
