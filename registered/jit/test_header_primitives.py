"""The header library's primitives that no shipped single-GPU kernel uses, each run by a test
kernel (registered/jit/kernels/header_primitives.cuh, one JIT module) against torch:

* warp.cuh: warp sums (float32, exact int32) and maxima (float32/16, bfloat16) reach every lane;
* cta.cuh: CTA sums and maxima at 1 to 32 warps (all-negative rows: the identity of max);
* math.cuh: max/min/abs exactly, sqrt/rsqrt/exp/sin/cos within rounding, its constants;
* tile.cuh: tile::Memory thread/warp/CTA groups (default and partial sizes) copy exactly their
  range, checked against sentinels on both sides;
* atomic.cuh: atomic::max on floats of both signs from 32,768 threads, and the old values;
* signal.cuh: a consumer CTA waits (wait_at_least_sys) on one stream for the flag a producer CTA
  publishes (store_release_sys) on another after writing data, and sees the data; a flag already
  at or past the target ends the wait. The kernels' handshakes give up after 5 s, and then the
  producer stores a flag past any target, so a broken wait fails the test instead of hanging;
* dtype_dispatch.h: a body that returns a value (sizeof(T)), and the error for another dtype;
* symbolic.h: SymbolicDType::set_value pins an allowed dtype, refuses another and a second pin;
* utils.cuh, vec.cuh: load_as/store_as at default and given offsets, AlignedVector::fill (and
  kBytes, checked when the module compiles);
* ipc.cuh: buffers are zero-filled, exported as 64 bytes, freed (nullptr frees and closes
  succeed), errors name the CUDA call; a second process on the same GPU maps the buffer, reads
  and writes it (CUDA IPC works between processes of one GPU); this process cannot map its own.
"""

import functools
import math
import multiprocessing
import queue
import re
import sys
import time
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)
import torch

from ci_runner import register_cuda_ci
from testing.skip import skip_module_unless

register_cuda_ci(est_time=40, suite="base-b-kernel-unit-1-gpu-large")
register_cuda_ci(est_time=40, suite="nightly-kernel-1-gpu", nightly=True)
skip_module_unless(torch.cuda.is_available(), "header primitive tests need a CUDA GPU")

from jit_kernel.compiler import load_jit  # noqa: E402
from testing.references import ROUNDED_TOL  # noqa: E402

KERNELS = Path(__file__).resolve().parent / "kernels"
EXPORTS = (
    "dispatch_element_size",
    "symbolic_dtype_pin",
    "warp_reduce_sum",
    "warp_reduce_max",
    "cta_reduce",
    "math_ops",
    "math_constants",
    "load_store_fill",
    "tile_copy",
    "atomic_max",
    "signal_load",
    "signal_produce",
    "signal_consume",
    "ipc_allocate",
    "ipc_free",
    "ipc_export",
    "ipc_open",
    "ipc_close",
    "is_device_memory",
    "copy_from_address",
    "copy_to_address",
)
CHILD_TIMEOUT = 120.0  # seconds for the second process (start, torch import, module load)


@functools.cache
def primitives():
    """The JIT module of the test kernels (built once, then loaded from the cache, also by the
    second process of the IPC test)."""
    return load_jit(
        "header_primitives",
        cuda_files=[str(KERNELS / "header_primitives.cuh")],
        cuda_wrappers=[(name, name) for name in EXPORTS],
    )


# ------------------------------------------------------------------------- dtype_dispatch.h


@pytest.mark.parametrize(
    ("dtype", "size"), [(torch.float16, 2), (torch.bfloat16, 2), (torch.float32, 4)]
)
def test_dispatch_dtype_returns_the_bodys_result(dtype: torch.dtype, size: int) -> None:
    x = torch.zeros(4, dtype=dtype, device="cuda")
    assert primitives().dispatch_element_size(x) == size


def test_dispatch_dtype_names_the_operation_tensor_and_supported_dtypes() -> None:
    x = torch.zeros(4, dtype=torch.int32, device="cuda")
    expected = "dispatch_element_size: x has dtype int32; supported: float16, bfloat16, float32"
    with pytest.raises(RuntimeError, match=re.escape(expected)):
        primitives().dispatch_element_size(x)


# ------------------------------------------------------------------------------- symbolic.h


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_symbolic_dtype_set_value_pins_an_allowed_dtype(dtype: torch.dtype) -> None:
    x = torch.zeros(4, dtype=dtype, device="cuda")
    assert primitives().symbolic_dtype_pin(x, 1) == 16


def test_symbolic_dtype_set_value_refuses_a_dtype_outside_the_options() -> None:
    x = torch.zeros(4, dtype=torch.float32, device="cuda")
    expected = "dtype float32 is not among the allowed options"
    with pytest.raises(RuntimeError, match=re.escape(expected)):
        primitives().symbolic_dtype_pin(x, 1)


def test_symbolic_dtype_set_value_refuses_a_second_pin() -> None:
    x = torch.zeros(4, dtype=torch.float16, device="cuda")
    with pytest.raises(RuntimeError, match=re.escape("dtype is already bound to float16")):
        primitives().symbolic_dtype_pin(x, 2)


# --------------------------------------------------------------------------------- warp.cuh


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32])
def test_warp_reduce_sum_gives_every_lane_the_sum(dtype: torch.dtype) -> None:
    if dtype == torch.int32:
        x = torch.randint(-1000, 1000, (64, 32), dtype=dtype, device="cuda")
    else:
        x = torch.randn(64, 32, device="cuda")
    x[0] = 0
    x[0, 31] = 3  # only the last lane contributes
    out = torch.empty_like(x)
    primitives().warp_reduce_sum(out, x)
    expected = x.double().sum(dim=1, keepdim=True).expand_as(x)
    if dtype == torch.int32:
        assert torch.equal(out, expected.to(dtype))  # integer sums are exact in any order
    else:
        torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=1e-3)  # fp32 order


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_warp_reduce_max_gives_every_lane_the_max(dtype: torch.dtype) -> None:
    x = torch.randn(64, 32, device="cuda").to(dtype)
    x[0] = -torch.arange(1, 33, device="cuda").to(dtype)  # all negative: the max is lane 0's
    x[1, 31] = 100  # the max in the last lane
    out = torch.empty_like(x)
    primitives().warp_reduce_max(out, x)
    assert torch.equal(out, x.amax(dim=1, keepdim=True).expand_as(x))


# ---------------------------------------------------------------------------------- cta.cuh


@pytest.mark.parametrize("threads", [32, 64, 96, 160, 256, 992, 1024])
def test_cta_reductions_give_every_thread_the_result(threads: int) -> None:
    x = torch.randn(5, threads, device="cuda")
    x[1] = -x[1].abs() - 1  # all negative: lanes past the warp count hold -inf for max, not 0
    x[2] = 0
    x[2, threads - 1] = 5  # the max in the last warp's last lane
    x[3] = 1  # the sum counts every thread
    sums, maxima = torch.empty_like(x), torch.empty_like(x)
    primitives().cta_reduce(sums, maxima, x)
    expected_sum = x.double().sum(dim=1, keepdim=True).expand_as(x)
    torch.testing.assert_close(sums.double(), expected_sum, rtol=1e-5, atol=1e-3)  # fp32 order
    assert torch.equal(maxima, x.amax(dim=1, keepdim=True).expand_as(x))


def test_cta_reduce_refuses_a_partial_warp() -> None:
    x = torch.randn(2, 100, device="cuda")
    with pytest.raises(RuntimeError, match=r"multiple of 32 columns up to 1024.*got 100"):
        primitives().cta_reduce(torch.empty_like(x), torch.empty_like(x), x)


# --------------------------------------------------------------------------------- math.cuh

MATH_OPS = ("max", "min", "abs", "sqrt", "rsqrt", "exp", "sin", "cos")


def math_reference(x: torch.Tensor, y: torch.Tensor) -> list[torch.Tensor]:
    """The kernel's rows in fp32, in MATH_OPS order (y > 0)."""
    xf, yf = x.float(), y.float()
    return [
        torch.maximum(xf, yf),
        torch.minimum(xf, yf),
        xf.abs(),
        yf.sqrt(),
        yf.rsqrt(),
        xf.exp(),
        xf.sin(),
        xf.cos(),
    ]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_device_math_matches_torch(dtype: torch.dtype) -> None:
    n = 4099
    x = (torch.rand(n, device="cuda") * 8 - 4).to(dtype)  # exp(4) is finite in fp16
    y = (torch.rand(n, device="cuda") * 4 + 0.01).to(dtype)  # overlaps x: max/min pick both
    out = torch.full((len(MATH_OPS), n), float("nan"), dtype=dtype, device="cuda")
    primitives().math_ops(out, x, y)
    tolerance = ROUNDED_TOL[dtype] if dtype != torch.float32 else {"rtol": 1e-5, "atol": 1e-6}
    for name, got, want in zip(MATH_OPS, out, math_reference(x, y), strict=True):
        if name in ("max", "min", "abs"):  # exact in every dtype
            assert torch.equal(got.float(), want), name
        else:  # fp32 math rounded once to the dtype: within a unit of its last place
            torch.testing.assert_close(got.float(), want.to(dtype).float(), **tolerance, msg=name)


def test_math_constants_as_device_code_sees_them() -> None:
    out = torch.zeros(3, device="cuda")
    primitives().math_constants(out)
    log2e, loge2, fp8_max = out.tolist()
    assert log2e == pytest.approx(math.log2(math.e), rel=1e-7)
    assert loge2 == pytest.approx(math.log(2), rel=1e-7)
    assert fp8_max == torch.finfo(torch.float8_e4m3fn).max == 448.0


# ------------------------------------------------------------------------ utils.cuh, vec.cuh


def test_load_as_store_as_and_fill_write_exactly_their_elements() -> None:
    x = torch.tensor([1.5, -2.0, 3.25, 4.0], device="cuda")
    out = torch.full((8,), float("nan"), device="cuda")
    primitives().load_store_fill(out, x, 7.5)
    expected = torch.cat([x, torch.full((4,), 7.5, device="cuda")])
    torch.testing.assert_close(out, expected, rtol=0, atol=0)


# --------------------------------------------------------------------------------- tile.cuh

TILE_THREAD, TILE_WARP, TILE_CTA = 0, 1, 2
TILE_GROUPS = [
    pytest.param(TILE_THREAD, 0, 0, id="thread"),
    pytest.param(TILE_WARP, 0, 0, id="warp"),
    pytest.param(TILE_WARP, 5, 0, id="warp-first-5-lanes"),
    pytest.param(TILE_CTA, 0, 128, id="cta-128"),
    pytest.param(TILE_CTA, 0, 96, id="cta-96"),
    pytest.param(TILE_CTA, 37, 128, id="cta-first-37-threads"),
]
SENTINEL = -7.5  # never x + 1: x is in [0, 1)


@pytest.mark.parametrize(("group", "n", "threads"), TILE_GROUPS)
@pytest.mark.parametrize("count", [0, 1, 5, 31, 32, 33, 100, 1000])
def test_tile_memory_copies_exactly_its_range(group: int, n: int, threads: int, count: int) -> None:
    rows = 3
    start = count + 1030  # room before the range for a wrong index: every write is caught
    length = start + count + 1030
    x = torch.rand(rows, length, device="cuda")
    out = torch.full((rows, length), SENTINEL, device="cuda")
    primitives().tile_copy(out, x, start, count, group, n, threads)
    expected = torch.full_like(out, SENTINEL)
    expected[:, start : start + count] = x[:, start : start + count] + 1
    assert torch.equal(out, expected)


# ------------------------------------------------------------------------------- atomic.cuh

ATOMIC_INITIAL = [float("-inf"), -1e9, -1.0, -0.0, 0.0, 1.0, 50.0, float("inf")]


@pytest.mark.parametrize("signs", ["mixed", "negative", "positive"])
def test_atomic_max_on_floats_from_many_threads(signs: str) -> None:
    groups, per_group = len(ATOMIC_INITIAL), 4096
    values = torch.randn(groups, per_group, device="cuda") * 100
    if signs == "negative":
        values = -values.abs() - 1e-3
    elif signs == "positive":
        values = values.abs() + 1e-3
    initial = torch.tensor(ATOMIC_INITIAL, device="cuda")
    result = initial.clone()
    olds = torch.full_like(values, float("nan"))
    primitives().atomic_max(result, olds, values)
    expected = torch.maximum(initial, values.amax(dim=1))
    assert torch.equal(result, expected)
    # Each thread got back the value before its own update: the initial value or another
    # thread's value, never less than the initial value nor more than the final one.
    assert torch.all(olds >= initial[:, None]) and torch.all(olds <= expected[:, None])
    for group in range(groups):
        seen = torch.cat([initial[group : group + 1], values[group]])
        assert torch.all(torch.isin(olds[group], seen)), f"group {group}: an unknown old value"


# ------------------------------------------------------------------------------- signal.cuh

FLAG, READY, ACK, OBSERVED, STATUS = range(5)
NOT_READY, RESCUED = 1, 2  # the producer's status bits
DATA_BASE = 1000.0


@pytest.mark.parametrize(
    ("initial", "publish", "target"),
    [
        pytest.param(0, 1, 1, id="published-equal-to-the-target"),
        pytest.param(4, 9, 6, id="published-past-the-target"),
        pytest.param(5, 0, 5, id="already-at-the-target"),
        pytest.param(7, 0, 5, id="already-past-the-target"),
    ],
)
def test_a_wait_on_one_stream_sees_what_another_stream_published(
    initial: int, publish: int, target: int
) -> None:
    n = 4096
    control = torch.zeros(5, dtype=torch.int64, device="cuda")
    control[FLAG] = initial
    data = torch.full((n,), -1.0, device="cuda")
    out = torch.full((n,), -2.0, device="cuda")
    producer, consumer = torch.cuda.Stream(), torch.cuda.Stream()
    # Lazy loading would load the consumer only at its launch, behind the spinning producer.
    assert primitives().signal_load() == 0
    torch.cuda.synchronize()
    # The producer first: it waits (at most 5 s) for the consumer to start, so the consumer is
    # already spinning when the flag is published.
    with torch.cuda.stream(producer):
        primitives().signal_produce(control, data, publish, DATA_BASE)
    with torch.cuda.stream(consumer):
        primitives().signal_consume(control, out, data, target)
    torch.cuda.synchronize()
    words = control.tolist()
    final = publish or initial
    assert not words[STATUS] & NOT_READY, (
        "the consumer CTA did not start within 5 s of the producer's: the two streams did not "
        "run concurrently (CUDA_LAUNCH_BLOCKING set?)"
    )
    assert not words[STATUS] & RESCUED, (
        f"wait_at_least_sys(flag, {target}) did not return within 5 s with the flag at {final}"
    )
    assert words[OBSERVED] == final, words
    published = DATA_BASE + torch.arange(n, device="cuda", dtype=torch.float32)
    assert torch.equal(out, published if publish else torch.full_like(out, -1.0))


# ---------------------------------------------------------------------------------- ipc.cuh

CHILD_BYTE = 0x5C


def test_ipc_buffers_are_zero_filled_exportable_and_freed() -> None:
    module, device, nbytes = primitives(), torch.cuda.current_device(), 1 << 20
    first = module.ipc_allocate(device, nbytes)
    assert module.is_device_memory(first)
    stale = torch.full((nbytes,), 0xA5, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    module.copy_to_address(first, stale)
    assert module.ipc_free(device, first) == 0
    assert not module.is_device_memory(first), "free_exportable left the allocation in place"
    second = module.ipc_allocate(device, nbytes)  # often the same memory: stale bytes would show
    try:
        seen = torch.full((nbytes,), 0xFF, dtype=torch.uint8, device="cuda")
        torch.cuda.synchronize()
        module.copy_from_address(seen, second)
        assert torch.count_nonzero(seen).item() == 0, "allocate_exportable did not zero-fill"
        handle = bytes(module.ipc_export(device, second))
        assert len(handle) == 64 and any(handle)
    finally:
        assert module.ipc_free(device, second) == 0
    assert module.ipc_free(device, 0) == 0  # nullptr: nothing to free
    assert module.ipc_close(device, 0) == 0  # nullptr: nothing to unmap


def test_ipc_errors_name_the_cuda_call_and_leave_cuda_usable() -> None:
    module, device = primitives(), torch.cuda.current_device()
    with pytest.raises(RuntimeError, match=r"cudaIpcGetMemHandle failed: cuda\w+: "):
        module.ipc_export(device, 0)
    with pytest.raises(
        RuntimeError, match=r"cudaMalloc of the IPC buffer failed: cudaErrorMemoryAllocation"
    ):
        module.ipc_allocate(device, 1 << 50)
    address = module.ipc_allocate(device, 4096)  # the errors were cleared
    try:
        handle = bytes(module.ipc_export(device, address))
        with pytest.raises(RuntimeError, match=r"cudaIpcOpenMemHandle of our own buffer failed: "):
            module.ipc_open(device, handle, "cudaIpcOpenMemHandle of our own buffer")
    finally:
        assert module.ipc_free(device, address) == 0
    torch.cuda.synchronize()
    assert torch.ones(4, device="cuda").sum().item() == 4


def map_in_child(device: int, handle: bytes, nbytes: int, results) -> None:
    """In a second process: map the buffer, read it, fill it with CHILD_BYTE, unmap it."""
    try:
        torch.cuda.set_device(device)
        module = primitives()
        address = module.ipc_open(device, handle, "cudaIpcOpenMemHandle in the second process")
        seen = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        module.copy_from_address(seen, address)
        filled = torch.full((nbytes,), CHILD_BYTE, dtype=torch.uint8, device="cuda")
        torch.cuda.synchronize()
        module.copy_to_address(address, filled)
        closed = module.ipc_close(device, address)
        results.put(("ok", seen.cpu().tolist(), closed, module.ipc_close(device, 0)))
    except BaseException as error:
        results.put(("error", f"{type(error).__name__}: {error}", None, None))


def run_in_child(target, *args) -> tuple:
    """``target(*args, results)`` in a spawned process; what it put, or a failure after
    CHILD_TIMEOUT seconds or when the process died without reporting (it is then killed)."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    process = context.Process(target=target, args=(*args, results), daemon=True)
    process.start()
    deadline = time.monotonic() + CHILD_TIMEOUT
    try:
        while True:
            try:
                return results.get(timeout=1.0)
            except queue.Empty:
                if not process.is_alive():
                    pytest.fail(f"the second process died (exit code {process.exitcode})")
                if time.monotonic() > deadline:
                    pytest.fail(f"the second process did not report within {CHILD_TIMEOUT} s")
    finally:
        process.join(timeout=30)
        if process.is_alive():
            process.kill()
            process.join()


def test_ipc_a_second_process_on_the_gpu_maps_reads_and_writes_the_buffer() -> None:
    module, device, nbytes = primitives(), torch.cuda.current_device(), 1 << 16
    address = module.ipc_allocate(device, nbytes)
    try:
        pattern = (torch.arange(nbytes, device="cuda") % 251).to(torch.uint8)
        torch.cuda.synchronize()
        module.copy_to_address(address, pattern)
        handle = bytes(module.ipc_export(device, address))
        kind, seen, closed, closed_null = run_in_child(map_in_child, device, handle, nbytes)
        assert kind == "ok", seen
        assert seen == pattern.tolist(), "the second process read other bytes"
        assert closed == 0 and closed_null == 0
        after = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        module.copy_from_address(after, address)
        assert torch.all(after == CHILD_BYTE), "the second process's writes did not land"
    finally:
        assert module.ipc_free(device, address) == 0


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
