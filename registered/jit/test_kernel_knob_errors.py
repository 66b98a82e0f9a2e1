"""A bad value of a kernel's compile-time knob (-DSGL_ROPE_*, -DSGL_STORE_*, -DSGL_NORM_*) fails
the build with the knob's name and its valid range (static_assert), never a wrong kernel."""

import sys

import pytest
from helpers_jit_toolchain import nvcc_missing_reason

from ci_runner import register_cpu_ci
from jit_kernel.compiler import build_only, load_jit, override_arch
from jit_kernel.compiler.load import JitCompileError

register_cpu_ci(est_time=15, suite="base-a-test-cpu")

pytestmark = pytest.mark.skipif(
    nvcc_missing_reason() is not None, reason=str(nvcc_missing_reason())
)

# (header, export, bad knob values, the messages they must produce)
CASES = [
    (
        "elementwise/rope.cuh",
        "apply_rope_inplace<bf16_t, false>",
        ["-DSGL_ROPE_BLOCK=48", "-DSGL_ROPE_GPTJ_UNROLL=9", "-DSGL_ROPE_SPREAD=3"],
        [
            "SGL_ROPE_BLOCK must be a multiple of 32 in [64, 512]",
            "SGL_ROPE_GPTJ_UNROLL: 1..8",
            "SGL_ROPE_SPREAD must be 0, 1 or 2",
        ],
    ),
    (
        "elementwise/rope.cuh",
        "apply_rope_inplace<bf16_t, false>",
        ["-DSGL_ROPE_MAX_SIDE=-1", "-DSGL_ROPE_MAX_REGS=16"],
        ["SGL_ROPE_MAX_SIDE: 0..64", "SGL_ROPE_MAX_REGS: 0 or 32..128"],
    ),
    (
        "elementwise/rope.cuh",
        "apply_rope_inplace<bf16_t, false>",
        [
            "-DSGL_ROPE_LEAN=3",
            "-DSGL_ROPE_LEAN_HEADS=9",
            "-DSGL_ROPE_LEAN_BLOCK=48",
            "-DSGL_ROPE_LEAN_NEOX_LIMIT=-1",
        ],
        [
            "SGL_ROPE_LEAN must be 0, 1 or 2",
            "SGL_ROPE_LEAN_HEADS: 1..8",
            "SGL_ROPE_LEAN_BLOCK must be a multiple of 32 in [64, 512]",
            "SGL_ROPE_LEAN_NEOX_LIMIT must be >= 0",
        ],
    ),
    (
        "elementwise/rope.cuh",
        "apply_rope_inplace<bf16_t, false>",
        ["-DSGL_ROPE_LEAN_ORDER=2", "-DSGL_ROPE_CACHE_HINT=8"],
        ["SGL_ROPE_LEAN_ORDER: 0 or 1", "SGL_ROPE_CACHE_HINT: 0..7"],
    ),
    (
        "elementwise/store_cache.cuh",
        "store_cache<false>",
        ["-DSGL_STORE_LOAD_HINT=3", "-DSGL_STORE_SMALL_UNROLL=0", "-DSGL_STORE_FEW_ROWS=9"],
        [
            "SGL_STORE_LOAD_HINT: 0, 1 or 2",
            "SGL_STORE_SMALL_UNROLL: 1..16",
            "SGL_STORE_FEW_ROWS: 0..8",
        ],
    ),
    (
        "elementwise/store_cache.cuh",
        "store_cache<false>",
        ["-DSGL_STORE_BLOCK=96", "-DSGL_STORE_UNROLL=0", "-DSGL_STORE_PERSISTENT=3"],
        [
            "SGL_STORE_BLOCK must be a power of two in [64, 1024]",
            "SGL_STORE_UNROLL: 1..16",
            "SGL_STORE_PERSISTENT must be 0, 1 or 2",
        ],
    ),
    (
        "elementwise/rmsnorm.cuh",
        "rmsnorm<bf16_t, false>",
        ["-DSGL_NORM_MIN_BLOCKS=32", "-DSGL_NORM_LANE_PACKS=3", "-DSGL_NORM_WEIGHT_GLOBAL=3"],
        [
            "SGL_NORM_MIN_BLOCKS * SGL_NORM_WARP_CTA_THREADS must be at most 2048 threads per SM",
            "SGL_NORM_LANE_PACKS must be 1 or 2",
            "SGL_NORM_WEIGHT_GLOBAL must be 0, 1 or 2",
        ],
    ),
]


@pytest.mark.parametrize(
    "header,export,flags,messages", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_bad_knob_value_fails_the_build_naming_the_knob(
    header, export, flags, messages, tmp_path, monkeypatch
):
    monkeypatch.setenv("JIT_KERNEL_CACHE_DIR", str(tmp_path / "cache"))
    with override_arch("9.0"), build_only(), pytest.raises(JitCompileError) as info:
        load_jit(
            "knob_errors",
            header.split("/")[-1].removesuffix(".cuh"),
            cuda_files=[header],
            cuda_wrappers=[("entry", export)],
            extra_cuda_cflags=flags,
        )
    for message in messages:
        assert message in str(info.value)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
