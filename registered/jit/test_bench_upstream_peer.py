"""bench_jit_kernels' upstream-SGLang peer and decode targets, checked without a GPU.

* where the sources are found (``--sglang-src`` / ``$BENCH_SGLANG_SRC``) and the errors that
  name the flag or variable;
* the template arguments chosen as upstream's wrappers choose them, the N/A reasons, and the
  generated translation unit and flags;
* a real build with tvm-ffi's builder of a small stand-in for upstream's tree (needs nvcc): the
  arch define and fast-math flag reach the compiler, a failed build names the module and is
  not retried;
* every family has decode rows, a check and an upstream peer (or its reason);
* the decode and memory-bound targets on made-up timings, and the decode table.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)
from helpers_jit_toolchain import nvcc_missing_reason

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=40, suite="base-a-test-cpu")

torch = pytest.importorskip("torch")  # the benchmark imports torch
from benchmarks import bench_jit_kernels  # noqa: E402
from benchmarks.bench_jit_report import (  # noqa: E402
    BandwidthRow,
    OverheadRow,
    check_targets,
    decode_table,
)
from jit_kernel.compiler.arch import parse_arch  # noqa: E402
from testing.upstream_sglang import build, kernels, source  # noqa: E402

needs_nvcc = pytest.mark.skipif(
    nvcc_missing_reason() is not None, reason=str(nvcc_missing_reason())
)
FAKE_KERNEL = """#include <sgl_kernel/base.h>
#include <cstdint>
namespace sglang {
template <int K>
int64_t host_value(int64_t x) { return x + K + SGL_CUDA_ARCH + kBase; }
}  // namespace sglang
"""


def fake_wheel(root: Path, version: str | None = "0.5.23", kernel: str = FAKE_KERNEL) -> Path:
    """A stand-in for the unzipped wheel: sglang/kernels/jit/{include,csrc} (+ METADATA)."""
    jit = root / "sglang" / "kernels" / "jit"
    (jit / "include" / "sgl_kernel").mkdir(parents=True)
    (jit / "include" / "sgl_kernel" / "base.h").write_text(
        "#pragma once\nconstexpr int kBase = 5;\n"
    )
    (jit / "csrc" / "elementwise").mkdir(parents=True)
    (jit / "csrc" / "elementwise" / "fake.cuh").write_text(kernel)
    if version is not None:
        (root / f"sglang-{version}.dist-info").mkdir()
        (root / f"sglang-{version}.dist-info" / "METADATA").write_text(
            f"Name: sglang\nVersion: {version}\n"
        )
    return jit


@pytest.fixture(autouse=True)
def no_configured_source(monkeypatch):
    monkeypatch.delenv(source.SRC_ENV, raising=False)
    source.configure(None)
    yield
    source.configure(None)


# --------------------------------------------------------------------------- the sources


def test_finds_the_jit_folder_from_the_unzip_root_or_itself(tmp_path):
    jit = fake_wheel(tmp_path)
    for given in (tmp_path, jit):
        found = source.locate(given, "--sglang-src")
        assert found.jit_dir == jit.resolve()
        assert found.version == "0.5.23"
        assert found.include_dir == jit.resolve() / "include"


def test_version_is_unknown_without_the_metadata(tmp_path):
    fake_wheel(tmp_path, version=None)
    assert source.locate(tmp_path, "--sglang-src").version == "unknown"


def test_a_wrong_folder_names_the_flag_and_how_to_get_the_sources(tmp_path):
    with pytest.raises(source.UpstreamSourceError) as error:
        source.locate(tmp_path, "--sglang-src")
    message = str(error.value)
    assert message.startswith(f"--sglang-src: {str(tmp_path)!r} holds neither")
    assert "pip download --no-deps sglang==0.5.23" in message


def test_flag_wins_over_the_variable_and_a_bad_variable_is_named(tmp_path, monkeypatch):
    jit = fake_wheel(tmp_path / "wheel")
    monkeypatch.setenv(source.SRC_ENV, str(tmp_path / "nowhere"))
    assert source.configure(str(tmp_path / "wheel")).jit_dir == jit.resolve()
    with pytest.raises(source.UpstreamSourceError, match=r"^\$BENCH_SGLANG_SRC: "):
        source.configure(None)
    monkeypatch.delenv(source.SRC_ENV)
    assert source.configure(None) is None and source.current() is None


def test_main_exits_2_naming_the_flag_for_a_wrong_folder(tmp_path, capsys):
    assert bench_jit_kernels.main(["--sglang-src", str(tmp_path)]) == 2
    assert "bench_jit_kernels: --sglang-src:" in capsys.readouterr().err


def test_decode_only_and_skip_bandwidth_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench_jit_kernels.parse_args(["--decode-only", "--skip-bandwidth"])
    assert exit_info.value.code == 2
    assert "--decode-only and --skip-bandwidth exclude each other" in capsys.readouterr().err


def test_build_peers_only_without_sources_exits_2(capsys):
    assert bench_jit_kernels.main(["--build-peers-only"]) == 2
    assert "upstream SGLang sources not given" in capsys.readouterr().err


# --------------------------------------------------------------------------- template choices


@pytest.mark.parametrize(
    ("hidden", "kernel_class"),
    [
        (64, "RMSNormWarpKernel"),
        (256, "RMSNormWarpKernel"),
        (512, "RMSNormHalfKernel"),
        (768, "RMSNormKernel"),
        (1024, "RMSNormKernel"),
        (1536, "RMSNormKernel"),
        (2048, "RMSNormHalfKernel"),
        (2304, "RMSNormKernel"),
        (4096, "RMSNormHalfKernel"),
        (16384, "RMSNormHalfKernel"),
    ],
)
def test_rmsnorm_kernel_class_follows_the_hidden_size(hidden, kernel_class):
    assert kernels.rmsnorm_supports(hidden)
    assert kernels.rmsnorm_kernel_class(hidden) == kernel_class


@pytest.mark.parametrize(
    ("row_bytes", "threads"), [(256, 32), (1024, 64), (2048, 128), (4096, 256), (96, 32), (48, 32)]
)
def test_store_cache_threads_follow_upstreams_heuristic(row_bytes, threads):
    assert kernels.store_cache_threads(row_bytes, row_bytes) == threads


def test_unsupported_sizes_are_reasons_even_without_sources():
    assert "not 320" in kernels.rmsnorm(320, torch.bfloat16, 1e-6)
    assert "not 16384" in kernels.fused_add_rmsnorm(16384, torch.bfloat16, 1e-6)
    assert "not 96" in kernels.qknorm(96, torch.bfloat16, 1e-6)
    assert kernels.rope(True, 128, torch.bfloat16) == source.NOT_GIVEN


def test_specs_spell_the_upstream_modules(tmp_path, monkeypatch):
    source.configure(str(fake_wheel(tmp_path)))
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")
    expected = {
        kernels.rmsnorm(4096, torch.bfloat16, 1e-6): (
            "sgl_rmsnorm_4096_true_bf16_t",
            ("rmsnorm", "RMSNormHalfKernel<4096, true, bf16_t>::run"),
        ),
        kernels.fused_add_rmsnorm(4096, torch.float16, 1e-6): (
            "sgl_fused_add_rmsnorm_false_fp16_t",
            ("fused_add_rmsnorm", "FusedAddRMSNormKernel<false, fp16_t>::run"),
        ),
        kernels.qknorm(128, torch.bfloat16, 1e-6): (
            "sgl_qknorm_128_true_bf16_t_true",
            ("qknorm", "QKNormKernel<128, true, bf16_t, true>::run"),
        ),
        kernels.rope(False, 128, torch.bfloat16): (
            "sgl_fused_rope_false_128_true_bf16_t_bf16_t",
            ("run_rope", "FusedRopeKernel<false, 128, true, bf16_t, bf16_t>::run"),
        ),
        kernels.store_cache(2048, 2048): (
            "sgl_kvcache_2048_2048_128_true",
            ("store_cache", "StoreKVCacheKernel<2048, 2048, 128, true>::run"),
        ),
        kernels.activation("gelu_and_mul", torch.bfloat16): (
            "sgl_activation_bf16_t_true",
            ("run_activation", "ActivationKernel<bf16_t, true>::run_activation"),
        ),
        kernels.add_constant(7): ("sgl_add_constant_7", ("add_constant", "add_constant<7>")),
    }
    for peer, (name, export) in expected.items():
        spec = peer.spec()
        assert (spec.name, spec.exports) == (name, (export,))
    silu = kernels.activation("silu_and_mul", torch.bfloat16).spec()
    arch = parse_arch("9.0")
    assert build.cuda_flags(silu, arch) == [
        "-DSGL_CUDA_ARCH=900",
        "-std=c++20",
        "-O3",
        "--expt-relaxed-constexpr",
        "--use_fast_math",
    ]
    assert "--use_fast_math" not in build.cuda_flags(kernels.add_constant(7).spec(), arch)
    unit = build.translation_unit(kernels.add_constant(7).spec())
    assert unit.splitlines()[5:] == [
        '#include "elementwise/add_constant.cuh"',
        "namespace sglang {",
        "TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_constant, (add_constant<7>));",
        "}  // namespace sglang",
    ]
    assert unit.startswith("#include <tvm/ffi/container/tensor.h>\n")


def test_every_family_has_decode_rows_checks_and_upstream_peers(tmp_path, monkeypatch):
    source.configure(str(fake_wheel(tmp_path)))
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")
    errors: list[str] = []
    cases, families = bench_jit_kernels.collect_cases(None, memory=True, decode=True, errors=errors)
    assert errors == [] and len(families) == len(bench_jit_kernels.family_modules())
    kernels_with_rows = {case.kernel for case in cases if not case.decode}
    kernels_with_decode = {case.kernel for case in cases if case.decode}
    assert kernels_with_decode == kernels_with_rows
    for case in cases:
        assert case.check is not None, case.shape
        assert "upstream" in case.peers, f"{case.kernel} {case.shape}"
    decode_names = {(case.kernel, case.shape) for case in cases if case.decode}
    assert ("rmsnorm", "16x4096 bf16") in decode_names
    assert ("store_cache", "16x256B bf16") in decode_names
    modules = {peer.spec().name for peer in bench_jit_kernels.upstream_peers(cases)}
    assert {"sgl_kvcache_256_256_32_true", "sgl_add3_bf16_true"} <= modules and len(modules) == 26
    only = bench_jit_kernels.collect_cases(
        {"rope"}, memory=False, decode=True, errors=errors, peers={"upstream", "torch_compile"}
    )[0]
    assert [case.shape for case in only] == ["16x(32+8)x128 bf16 neox", "16x(32+8)x128 bf16 gptj"]
    assert all(set(case.peers) == {"upstream", "torch_compile"} for case in only)


# --------------------------------------------------------------------------- a real build


@pytest.fixture
def fake_upstream(tmp_path, monkeypatch):
    """The stand-in sources, a private cache, and the target sm_90a."""
    monkeypatch.setenv(build.CACHE_ENV, str(tmp_path / "cache"))
    return source.locate(fake_wheel(tmp_path / "wheel"), "--sglang-src"), parse_arch("9.0")


@needs_nvcc
def test_builds_loads_and_reuses_a_module_with_tvm_ffis_builder(fake_upstream):
    upstream, arch = fake_upstream
    plain = build.ModuleSpec(("fake", "3"), "elementwise/fake.cuh", (("value", "host_value<3>"),))
    fast = build.ModuleSpec(
        ("fake", "4"), "elementwise/fake.cuh", (("value", "host_value<4>"),), fast_math=True
    )
    results = build.build_all([plain, fast, plain], upstream, arch, jobs=2)
    assert set(results) == {plain.name, fast.name}
    assert build.load(plain, upstream, arch).value(1) == 1 + 3 + 900 + 5
    assert build.load(fast, upstream, arch).value(1) == 1 + 4 + 900 + 5
    library = build.library_path(plain, upstream, arch)
    assert library.is_file() and not (library.parent / "build").exists()
    plain_commands = library.with_name("build.ninja").read_text()
    fast_commands = build.library_path(fast, upstream, arch).with_name("build.ninja").read_text()
    assert "-gencode=arch=compute_90a,code=sm_90a" in plain_commands
    assert "--use_fast_math" in fast_commands and "--use_fast_math" not in plain_commands
    assert build.build_all([plain], upstream, arch)[plain.name] == library  # found, not rebuilt
    (upstream.include_dir / "sgl_kernel" / "base.h").write_text(
        "#pragma once\nconstexpr int kBase = 6;\n"
    )
    source._tree_digest.cache_clear()
    assert build.library_path(plain, upstream, arch) != library  # the headers are in the key


@needs_nvcc
def test_a_failed_build_names_the_module_and_is_not_retried(fake_upstream, monkeypatch):
    upstream, arch = fake_upstream
    broken = build.ModuleSpec(("fake", "x"), "elementwise/fake.cuh", (("value", "no_such<1>"),))
    error = build.build_all([broken], upstream, arch)[broken.name]
    assert isinstance(error, build.UpstreamBuildError)
    assert str(error).startswith("upstream module sgl_fake_x (elementwise/fake.cuh) did not build")
    assert "no_such" in str(error)
    monkeypatch.setattr(build, "_build_one", lambda *args: pytest.fail("rebuilt"))
    with pytest.raises(build.UpstreamBuildError, match="sgl_fake_x"):
        build.load(broken, upstream, arch)


def test_a_library_without_an_export_is_named():
    with pytest.raises(
        build.UpstreamBuildError, match=r"^upstream module sgl_x: no export run_rope$"
    ):
        build._check_exports(object(), "sgl_x", ["run_rope"])


# --------------------------------------------------------------------------- targets


def row(ours: float, decode: bool, copy: float | None = 0.95, **peers: float) -> BandwidthRow:
    return BandwidthRow("rmsnorm", "16x4096 bf16", 1, ours, 1.0, copy, decode, dict(peers))


def test_decode_target_is_the_best_of_upstream_flashinfer_and_torch_compile():
    within_noise = row(1.30, True, upstream=1.29, torch_compile=1.5, torch=0.5)
    assert check_targets([within_noise], [], None) == []  # torch eager is not a decode target
    slower = row(1.58, True, None, upstream=1.29, flashinfer=1.40, torch_compile=2.0)
    assert check_targets([slower], [], None) == [
        "rmsnorm 16x4096 bf16 (decode): 1.58 us, slower than upstream (1.29 us, 0.82x)"
    ]
    no_peer_ran = row(9.0, True, torch=1.0)
    assert check_targets([no_peer_ran], [], None) == []


def test_memory_bound_rows_must_beat_every_peer_and_90_percent_of_copy():
    assert check_targets([row(100.0, False, 0.95, torch=99.0, upstream=150.0)], [], None) == []
    failures = check_targets([row(100.0, False, 0.85, torch=120.0, upstream=97.0)], [], 31.0)
    assert failures == [
        "rmsnorm 16x4096 bf16: 85.0% of copy bandwidth < 90%",
        "rmsnorm 16x4096 bf16: slower than upstream (0.97x)",
        "warm load 31.0 ms >= 30.0 ms",
    ]
    assert check_targets([row(100.0, False, None)], [], None) == []  # copy not measured


def test_a_broken_upstream_peer_fails_the_row():
    broken = row(1.0, True, torch_compile=2.0)
    broken.peers_na["upstream"] = broken.peer_errors["upstream"] = "wrong result: ..."
    assert check_targets([broken], [], None) == [
        "rmsnorm 16x4096 bf16: peer upstream failed: wrong result: ..."
    ]


def test_host_overhead_targets():
    fine = OverheadRow("store_cache 16x(8x128) bf16", 6.3, 6.2, 22.0, 1.049, 0.29)
    slow = OverheadRow("fused_add_rmsnorm 16x4096 bf16", 5.8, 5.5, 5.0, 1.052, 1.1)
    assert check_targets([], [fine, slow], None) == [
        "host overhead fused_add_rmsnorm 16x4096 bf16: wrapper 1.052x the bare call > 1.05x",
        "host overhead fused_add_rmsnorm 16x4096 bf16: wrapper 1.100x torch eager (not below it)",
    ]


def test_decode_table_shows_the_launch_floor_and_the_gap_above_it():
    first = row(1.58, True, upstream=1.29)
    second = row(1.30, True, upstream=1.30)
    second.peers_na["flashinfer"] = "FlashInfer is not available"
    lines = decode_table([first, second], {"empty kernel": 1.10, "empty kernel, PDL": 0.98})
    assert lines[1] == "launch floor: empty kernel 1.10 us, empty kernel, PDL 0.98 us"
    assert lines[2].split() == [
        "kernel",
        "shape",
        "ours",
        "us",
        "+floor",
        "upstream",
        "us",
        "x",
        "flashinfer",
        "us",
        "x",
    ]
    assert lines[4].split() == [
        "rmsnorm",
        "16x4096",
        "bf16",
        "1.58",
        "0.60",
        "1.29",
        "0.82x",
        "N/A",
    ]
    assert lines[-1] == "  N/A flashinfer: FlashInfer is not available"


class FakePeer:
    def __init__(self, fn):
        self.fn = fn

    def load(self):
        return self.fn


def test_a_peer_is_timed_only_after_its_check_passed():
    def check(fn, inputs):
        assert fn(*inputs) == 3, "wrong sum"

    case = bench_jit_kernels.BandwidthCase(
        "add", "1+2", lambda: (1, 2), lambda a, b: a + b, 0, check=check
    )
    right = FakePeer(lambda a, b: a + b)
    assert bench_jit_kernels.verified_peer(case, right, (1, 2)) is right.fn
    wrong = bench_jit_kernels.verified_peer(case, FakePeer(lambda a, b: a * b), (1, 2))
    assert wrong.startswith("wrong result against testing/references: AssertionError: wrong sum")

    def unbuilt():
        raise build.UpstreamBuildError("upstream module sgl_x did not build")

    failed = FakePeer(None)
    failed.load = unbuilt
    assert bench_jit_kernels.verified_peer(case, failed, (1, 2)) == (
        "UpstreamBuildError: upstream module sgl_x did not build"
    )


def test_bench_case_times_an_upstream_peer_only_after_its_check(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setenv("TVM_FFI_CUDA_ARCH_LIST", "9.0")
    timed = []

    def fake_timer(fn, inputs, rotate, replay_iters=None, sets=None):
        timed.append((fn(*inputs), replay_iters))
        return 2e-6

    monkeypatch.setattr(bench_jit_kernels, "time_graph", fake_timer)
    monkeypatch.setattr(bench_jit_kernels, "shared_sets", lambda timer, inputs, rotate: ())
    monkeypatch.setattr(kernels, "load", lambda spec, upstream, arch: "the module")
    upstream = source.locate(fake_wheel(tmp_path), "--sglang-src")
    spec = build.ModuleSpec(("fake", "1"), "elementwise/fake.cuh", (("value", "host_value<1>"),))

    def peer(fn):
        return kernels.UpstreamPeer(lambda pdl: spec, lambda module: fn, upstream)

    def check(fn, inputs):
        assert fn(*inputs) == 3, "wrong sum"

    case = bench_jit_kernels.BandwidthCase(
        "add",
        "1+2",
        lambda: (1, 2),
        lambda a, b: a + b,
        8,
        peers={"upstream": peer(lambda a, b: a + b), "mul": peer(lambda a, b: a * b), "x": "no"},
        check=check,
        decode=True,
    )
    row = bench_jit_kernels.bench_case(case, None, "graph", 123)
    assert (row.ours_us, row.copy_ratio, row.decode) == (2.0, None, True)
    assert row.peers_us == {"upstream": 2.0}
    assert row.peer_errors == {"mul": row.peers_na["mul"]}
    assert row.peers_na["mul"].startswith("wrong result against testing/references")
    assert row.peers_na["x"] == "no"
    assert timed == [(3, 123), (3, 123)]  # ours and the upstream peer; never the wrong one


def test_bench_case_interleaves_rounds_and_reports_medians(monkeypatch):
    """rounds > 1: ours and each peer once per round, order reversed every other round, the
    median per implementation; a peer that fails in a later round becomes N/A, never fatal."""
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    order = []
    seconds = {"ours": iter([3e-6, 1e-6, 2e-6]), "torch": iter([5e-6, 9e-6, 4e-6])}

    def fake_timer(fn, inputs, rotate, replay_iters=None, sets=None):
        name = fn(*inputs)
        order.append(name)
        if name == "flaky" and order.count("flaky") == 2:
            raise RuntimeError("launch failed")
        return next(seconds[name]) if name in seconds else 1e-6

    monkeypatch.setattr(bench_jit_kernels, "time_graph", fake_timer)
    monkeypatch.setattr(bench_jit_kernels, "shared_sets", lambda timer, inputs, rotate: ())
    case = bench_jit_kernels.BandwidthCase(
        "k",
        "s",
        lambda: (),
        lambda: "ours",
        8,
        peers={"torch": lambda: "torch", "flaky": lambda: "flaky", "x": "absent"},
        decode=True,
    )
    row = bench_jit_kernels.bench_case(case, None, "graph", 10, rounds=3)
    assert order == ["ours", "torch", "flaky", "flaky", "torch", "ours", "ours", "torch"]
    assert row.ours_us == pytest.approx(2.0)
    assert row.peers_us == {"torch": pytest.approx(5.0)}
    assert row.peers_na == {"x": "absent", "flaky": "RuntimeError: launch failed"}
    assert row.peer_errors == {}  # not a built peer
    assert row.rounds_us["ours"] == [3.0, 1.0, 2.0]
    assert row.rounds_us["torch"] == [5.0, 9.0, 4.0]


@pytest.mark.parametrize("timer", ["graph", "loop"])
def test_bench_case_times_every_implementation_of_a_round_over_one_group_of_sets(
    timer, monkeypatch
):
    """A round makes one group of rotated input sets (from the case's inputs and rotate_args)
    and times ours and every peer over that group; the next round makes a new group."""
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    groups, used = [], []

    def make_group(timer_name, inputs, rotate):
        groups.append((timer_name, inputs, rotate))
        return [f"group {len(groups)}"]

    def fake_timer(fn, inputs, rotate, replay_iters=None, sets=None):
        used.append((fn(*inputs), sets))
        return 1e-6

    def fake_loop(fn, inputs, rotate, sets=None):
        used.append((fn(*inputs), sets))
        return 1e-6

    monkeypatch.setattr(bench_jit_kernels, "shared_sets", make_group)
    monkeypatch.setattr(bench_jit_kernels, "time_graph", fake_timer)
    monkeypatch.setattr(bench_jit_kernels, "time_loop", fake_loop)
    case = bench_jit_kernels.BandwidthCase(
        "k",
        "s",
        lambda: ("x",),
        lambda x: "ours",
        8,
        peers={"torch": lambda x: "torch", "flashinfer": lambda x: "flashinfer"},
        decode=True,
        rotate_args=(0,),
    )
    bench_jit_kernels.bench_case(case, None, timer, 10, rounds=2)
    assert groups == [(timer, ("x",), (0,))] * 2
    assert used == [
        ("ours", ["group 1"]),
        ("torch", ["group 1"]),
        ("flashinfer", ["group 1"]),
        ("flashinfer", ["group 2"]),
        ("torch", ["group 2"]),
        ("ours", ["group 2"]),
    ]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
