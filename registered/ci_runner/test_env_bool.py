"""The one boolean environment parser: accepted spellings, defaults and the garbage error."""

import sys

import pytest

from ci_runner import register_cpu_ci
from ci_runner.env import (
    DISABLE_LOG_BANDWIDTH,
    IS_IN_CI,
    RUN_FULL_TESTS,
    EnvVarError,
    get_bool_env,
    parse_bool,
)

register_cpu_ci(est_time=2, suite="base-a-test-cpu")


@pytest.mark.parametrize("text", ["1", "true", "TRUE", "True", "yes", "on", " On ", "YES\n"])
def test_true_spellings(text):
    assert parse_bool(text, "X") is True


@pytest.mark.parametrize("text", ["0", "false", "FALSE", "no", "off", " Off "])
def test_false_spellings(text):
    assert parse_bool(text, "X") is False


@pytest.mark.parametrize("text", ["2", "tru", "enable", "y", "-1", "truee"])
def test_garbage_is_an_error_naming_variable_value_and_choices(text):
    with pytest.raises(EnvVarError) as info:
        parse_bool(text, "SGLANG_IS_IN_CI")
    assert str(info.value) == (
        f"environment variable SGLANG_IS_IN_CI={text!r} is not a boolean: "
        "use one of 1, on, true, yes or 0, false, no, off"
    )


def test_env_var_error_is_a_value_error():
    assert issubclass(EnvVarError, ValueError)


@pytest.mark.parametrize("default", [True, False])
def test_unset_or_blank_gives_the_default(default):
    assert get_bool_env("X", default, environ={}) is default
    assert get_bool_env("X", default, environ={"X": ""}) is default
    assert get_bool_env("X", default, environ={"X": "  "}) is default


def test_set_value_overrides_the_default():
    assert get_bool_env("X", False, environ={"X": "1"}) is True
    assert get_bool_env("X", True, environ={"X": "off"}) is False


def test_reads_os_environ_by_default(monkeypatch):
    monkeypatch.setenv(RUN_FULL_TESTS, "true")
    assert get_bool_env(RUN_FULL_TESTS) is True
    monkeypatch.setenv(RUN_FULL_TESTS, "bogus")
    with pytest.raises(EnvVarError) as info:
        get_bool_env(RUN_FULL_TESTS)
    assert "SGLANG_JIT_KERNEL_RUN_FULL_TESTS='bogus' is not a boolean" in str(info.value)
    monkeypatch.delenv(RUN_FULL_TESTS)
    assert get_bool_env(RUN_FULL_TESTS) is False


def test_variable_names_keep_sglang_spelling():
    assert IS_IN_CI == "SGLANG_IS_IN_CI"
    assert RUN_FULL_TESTS == "SGLANG_JIT_KERNEL_RUN_FULL_TESTS"
    assert DISABLE_LOG_BANDWIDTH == "SGLANG_KERNEL_DISABLE_LOG_BANDWIDTH"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
