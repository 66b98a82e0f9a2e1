"""A bad launch configuration (a Config type a tuner passes through ``cuda_wrappers``) fails the
build naming the Config and the parameter's valid range (static_assert), never a wrong kernel."""

import sys

import pytest
from helpers_jit_toolchain import nvcc_missing_reason

from ci_runner import register_cpu_ci
from jit_kernel.compiler import JitCompileError, build_only, load_jit, override_arch

register_cpu_ci(est_time=40, suite="base-a-test-cpu")

pytestmark = pytest.mark.skipif(
    nvcc_missing_reason() is not None, reason=str(nvcc_missing_reason())
)

# (header, export with a bad Config, the messages it must produce)
CASES = [
    (
        "elementwise/activation.cuh",
        "silu_and_mul_by_dtype<false, ActConfig<48, 17>>",
        ["ActConfig: kBlock must be a power of two in [32, 1024]", "ActConfig: kUnroll: 1..16"],
    ),
    (
        "elementwise/rmsnorm.cuh",
        "rmsnorm_by_dtype<false, host::row::RowConfig<100, 5>>",
        [
            "RowConfig: kWarpCtaThreads must be a multiple of 32 in [32, 1024]",
            "RowConfig: kRowsPerGroup: 1..4",
        ],
    ),
    (
        "elementwise/qknorm.cuh",
        "fused_inplace_qknorm_by_dtype<false, QKNormConfig<128, 9>>",
        ["QKNormConfig: kItems: 1..8"],
    ),
    (
        "elementwise/rope.cuh",
        "apply_rope_inplace_by_dtype<false, RopeConfig<48, 2, 9, 16, 128, 1, -1>>",
        [
            "RopeConfig: kBlock must be a multiple of 32 in [64, 512]",
            "RopeConfig: kGptjUnroll: 1..8",
            "RopeConfig: kMaxRegs: 32..128",
            "RopeConfig: kLeanNeoxLimit must be >= 0",
        ],
    ),
    (
        "elementwise/store_cache.cuh",
        "store_cache<false, StoreCacheConfig<96, 8, 256, 0, 2048, 9>>",
        [
            "StoreCacheConfig: kBlock must be a power of two in [64, 1024]",
            "StoreCacheConfig: kSmallUnroll: 1..16",
            "StoreCacheConfig: kSpreadBlocksPerSm: 1..8",
        ],
    ),
]


@pytest.mark.parametrize("header,export,messages", CASES, ids=[c[0] for c in CASES])
def test_bad_config_fails_the_build_naming_the_parameter(
    header, export, messages, tmp_path, monkeypatch
):
    monkeypatch.setenv("JIT_KERNEL_CACHE_DIR", str(tmp_path / "cache"))
    with override_arch("9.0"), build_only(), pytest.raises(JitCompileError) as info:
        load_jit(
            "config_errors",
            header.split("/")[-1].removesuffix(".cuh"),
            cuda_files=[header],
            cuda_wrappers=[("entry", export)],
        )
    for message in messages:
        assert message in str(info.value)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
