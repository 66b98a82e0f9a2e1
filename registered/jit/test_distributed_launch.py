"""The multi-GPU plumbing without a GPU: jit_kernel.distributed.launch (spawned ranks over gloo),
the custom all-reduce's probes and argument checks, and the pure helpers of its checks, self-test
and benchmark.

The launcher must return results in rank order, turn NVLink multicast off in every child, and
never hang: a rank that raises, crashes or hangs fails the call with its traceback / exit code
and the other ranks are killed after the grace period.
"""

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)
import torch

from ci_runner import register_cpu_ci
from jit_kernel.all_reduce import (
    ALGORITHMS,
    CustomAllReduce,
    _jit_custom_all_reduce_module,
    can_use_custom_all_reduce,
    default_one_shot_max_bytes,
    p2p_problems,
)
from jit_kernel.distributed import NVLS_OFF_ENV, WorkerError, free_port, run_on_gpus
from jit_kernel.distributed.launch import disable_nvlink_multicast, init_from_env
from jit_kernel.distributed.peers import setup_problems
from jit_kernel.wrapper.registry import registered_specs
from testing.all_reduce_checks import (
    _GROUP_FUNCTIONS,
    PAD,
    SENTINEL,
    CheckPlan,
    CheckResult,
    _Runner,
    size_grid,
)
from testing.all_reduce_harness import combine_rows, default_sizes, format_tables
from testing.all_reduce_selftest import summarize

register_cpu_ci(est_time=50, suite="base-a-test-cpu")

REPO_ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ worker functions (ranks)


def report_rank(tag: str) -> dict:
    """Environment and a gloo all-reduce as one rank sees them."""
    import torch.distributed as dist

    total = torch.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(total)
    return {
        "tag": tag,
        "rank": dist.get_rank(),
        "world": dist.get_world_size(),
        "backend": dist.get_backend(),
        "sum": total.item(),
        "env": {key: os.environ.get(key) for key in [*NVLS_OFF_ENV, "EXTRA", "RANK", "LOCAL_RANK"]},
        "constructor_errors": constructor_errors(),
    }


def constructor_errors() -> dict:
    """What CustomAllReduce raises for bad arguments inside a real (gloo, CPU) group."""
    found = {}
    for name, kwargs in {
        "max_bytes=0": {"max_bytes": 0},
        "max_bytes=str": {"max_bytes": "8M"},
        "one_shot=-1": {"one_shot_max_bytes": -1},
        "max_blocks=0": {"max_blocks": 0},
        "max_blocks=65": {"max_blocks": 65},
        "defaults": {},
    }.items():
        try:
            CustomAllReduce(**kwargs)
            found[name] = "no error"
        except Exception as error:
            found[name] = f"{type(error).__name__}: {error}"
    return found


def fail_on_rank_one() -> None:
    import torch.distributed as dist

    if dist.get_rank() == 1:
        raise ValueError("boom on rank 1")
    time.sleep(600)  # like a kernel spinning on a flag that rank 1 never sets


def crash_on_rank_zero() -> None:
    import torch.distributed as dist

    if dist.get_rank() == 0:
        os._exit(3)
    dist.barrier()


def sleep_forever() -> None:
    time.sleep(600)


def unpicklable_result():
    return lambda: None


# ---------------------------------------------------------------------------------- launcher


def test_results_in_rank_order_nvls_off_and_constructor_errors(monkeypatch) -> None:
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")  # the launcher must override it in the children
    results = run_on_gpus(2, report_rank, "hello", backend="gloo", env={"EXTRA": "x"}, timeout=120)
    assert [r["rank"] for r in results] == [0, 1]
    for rank, result in enumerate(results):
        assert result["tag"] == "hello" and result["world"] == 2 and result["backend"] == "gloo"
        assert result["sum"] == 3.0
        env = result["env"]
        assert {key: env[key] for key in NVLS_OFF_ENV} == NVLS_OFF_ENV
        assert env["EXTRA"] == "x" and env["RANK"] == str(rank) == env["LOCAL_RANK"]
        errors = result["constructor_errors"]
        assert errors["max_bytes=0"].startswith("ValueError: CustomAllReduce: max_bytes must be")
        assert errors["max_bytes=str"].startswith("TypeError: CustomAllReduce: max_bytes must be")
        assert errors["one_shot=-1"].startswith("ValueError: CustomAllReduce: one_shot_max_bytes")
        assert "max_blocks must be an int in [1, 64]" in errors["max_blocks=0"]
        assert "max_blocks must be an int in [1, 64]" in errors["max_blocks=65"]
        assert errors["defaults"] == "RuntimeError: CustomAllReduce: no CUDA GPU is visible"
    assert os.environ["NCCL_NVLS_ENABLE"] == "0", "the parent's environment is NVLS-off too"


def test_a_failing_rank_reports_its_traceback_and_the_waiting_rank_is_killed() -> None:
    start = time.monotonic()
    with pytest.raises(WorkerError) as caught:
        run_on_gpus(2, fail_on_rank_one, backend="gloo", timeout=120, grace=3)
    elapsed = time.monotonic() - start
    message = str(caught.value)
    assert "fail_on_rank_one" in message
    assert "--- rank 1: raised:" in message and "ValueError: boom on rank 1" in message
    assert "--- rank 0: did not finish within 3 s after another rank failed" in message
    assert set(caught.value.failures) == {0, 1}
    assert elapsed < 60, f"took {elapsed:.0f} s: the waiting rank was not killed after the grace"


def test_a_crashed_rank_is_reported_with_its_exit_code() -> None:
    with pytest.raises(WorkerError) as caught:
        run_on_gpus(2, crash_on_rank_zero, backend="gloo", timeout=120, grace=3)
    assert "--- rank 0: exited with code 3 without reporting a result" in str(caught.value)
    assert "rank 1" in str(caught.value)


def test_a_hang_times_out_and_every_rank_is_killed() -> None:
    start = time.monotonic()
    with pytest.raises(WorkerError) as caught:
        run_on_gpus(2, sleep_forever, backend="gloo", timeout=8)
    elapsed = time.monotonic() - start
    assert "did not finish within the 8 s timeout" in str(caught.value)
    assert set(caught.value.failures) == {0, 1}
    assert elapsed < 40, f"took {elapsed:.0f} s after an 8 s timeout"


def test_an_unpicklable_result_is_an_error_not_a_hang() -> None:
    with pytest.raises(WorkerError) as caught:
        run_on_gpus(2, unpicklable_result, backend="gloo", timeout=120, grace=3)
    assert "raised:" in str(caught.value) and "pickle" in str(caught.value).lower()


def test_argument_errors() -> None:
    with pytest.raises(TypeError, match="must be picklable; fn must be a module-level function"):
        run_on_gpus(1, lambda: None, backend="gloo", timeout=30)
    with pytest.raises(ValueError, match="world_size must be a positive int, got 0"):
        run_on_gpus(0, report_rank, "x", backend="gloo")
    with pytest.raises(ValueError, match="timeout must be positive"):
        run_on_gpus(1, report_rank, "x", backend="gloo", timeout=0)
    with pytest.raises(ValueError, match=r"2 devices given for world size 3"):
        run_on_gpus(3, report_rank, "x", backend="gloo", devices=[0, 1])
    if torch.cuda.device_count() < 2:
        with pytest.raises(
            ValueError, match=r"world size 2 needs GPUs \[0, 1\] but \d+ are visible"
        ):
            run_on_gpus(2, report_rank, "x")  # nccl: rank r on GPU r


def test_helpers() -> None:
    port = free_port()
    assert 0 < port < 65536
    env = {"NCCL_NVLS_ENABLE": "1"}
    disable_nvlink_multicast(env)
    assert env == NVLS_OFF_ENV


def test_init_from_env_names_missing_variables(monkeypatch) -> None:
    for key in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(RuntimeError, match="RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT"):
        init_from_env("gloo")


def test_init_from_env_rendezvous_of_two_plain_processes() -> None:
    """The memcheck script's path: ranks started separately meet through the variables."""
    code = textwrap.dedent(
        """
        import os, torch, torch.distributed as dist
        from jit_kernel.distributed.launch import init_from_env
        rank, world = init_from_env("gloo", timeout=60)
        total = torch.tensor([rank + 1.0]); dist.all_reduce(total)
        print(f"rank={rank} world={world} sum={total.item()} nvls={os.environ['NCCL_NVLS_ENABLE']}")
        dist.destroy_process_group()
        """
    )
    env = dict(os.environ, WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    env["PYTHONPATH"] = str(REPO_ROOT)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            env=dict(env, RANK=str(rank)),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for rank in range(2)
    ]
    outputs = []
    for proc in procs:
        try:
            outputs.append(proc.communicate(timeout=120)[0])
        finally:
            if proc.poll() is None:
                proc.kill()
    for rank, (proc, output) in enumerate(zip(procs, outputs, strict=True)):
        assert proc.returncode == 0, output
        assert f"rank={rank} world=2 sum=3.0 nvls=0" in output


# ------------------------------------------------------------------- all-reduce, no GPU needed


def test_probes_never_raise_and_say_why() -> None:
    if torch.cuda.is_available():
        pytest.skip("checks the no-GPU answers")
    assert p2p_problems() == ["no CUDA GPU is visible (torch.cuda.is_available() is False)"]
    assert can_use_custom_all_reduce() is False
    assert can_use_custom_all_reduce([0, 1], numel=16, dtype=torch.bfloat16) is False
    assert can_use_custom_all_reduce(["not a device"], dtype=torch.int32) is False
    assert can_use_custom_all_reduce(numel=-1) is False


def test_constructor_needs_a_process_group() -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        pytest.skip("a process group exists in this process")
    with pytest.raises(RuntimeError, match=r"torch\.distributed is not initialized"):
        CustomAllReduce()


def _info(host="h", device=0, uuid="GPU-0", access=None, args=(8, 1, None)):
    return {"host": host, "device": device, "uuid": uuid, "access": access or {}, "args": args}


def test_setup_problems_name_the_ranks_and_the_pair() -> None:
    good = [
        _info(device=0, uuid="A", access={"A": True, "B": True}),
        _info(device=1, uuid="B", access={"A": True, "B": True}),
    ]
    assert setup_problems(good) == []
    no_p2p = [good[0], _info(device=1, uuid="B", access={"A": False, "B": True})]
    assert setup_problems(no_p2p) == [
        "no peer access from rank 1 (cuda:1) to rank 0 (cuda:0 of rank 0's process)"
    ]
    unknown = [good[0], _info(device=0, uuid="B", access={"B": True})]  # peer's GPU not visible
    assert setup_problems(unknown) == []
    shared = [good[0], _info(device=0, uuid="A", access={"A": True})]
    assert setup_problems(shared) == ["ranks 0 and 1 share one GPU (A)"]
    hosts = [good[0], _info(host="other", device=1, uuid="B", access={"A": True})]
    assert setup_problems(hosts) == ["all ranks must run on one host, got ['h', 'other']"]
    args = [good[0], _info(device=1, uuid="B", access={"A": True}, args=(16, 1, None))]
    assert setup_problems(args) == [
        "(max_bytes, one_shot_max_bytes, max_blocks) differ between ranks: "
        "[(8, 1, None), (16, 1, None)]"
    ]


def test_one_module_is_registered_for_precompile() -> None:
    specs = [s for s in registered_specs() if s.fn is _jit_custom_all_reduce_module]
    assert [s.args for s in specs] == [()]


def test_default_thresholds() -> None:
    # 2 GPUs: one-shot at every size (the communicator caps it at max_bytes).
    assert [default_one_shot_max_bytes(w) for w in (2, 3, 4, 5, 8)] == [
        2**62,
        2**19,
        2**19,
        2**18,
        2**18,
    ]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("world", [2, 3, 8])
def test_size_grid_covers_the_boundaries(dtype: torch.dtype, world: int) -> None:
    elem = dtype.itemsize
    threshold, largest = 2**20 // elem, 8 * 2**20 // elem
    ci = size_grid(dtype, 2**20, 8 * 2**20, world, full=False)
    full = size_grid(dtype, 2**20, 8 * 2**20, world, full=True)
    assert set(ci) <= set(full)
    for size in (1, 16 // elem + 1, threshold - 1, threshold, threshold + 1, largest):
        assert size in ci
    assert min(full) == 1 and max(full) == largest
    assert any(size % (16 // elem) for size in ci), "no partial 16-byte pack"


def cpu_runner(world: int) -> _Runner:
    """The comparison helpers of the checks, on CPU tensors (no process group needed)."""
    runner = _Runner.__new__(_Runner)
    runner.plan, runner.rank, runner.world, runner.results = CheckPlan(), 0, world, []
    return runner


class SizeCheckingAllReduce:
    """Stands in for CustomAllReduce on CPU: rejects inputs over ``max_bytes`` and unknown
    algorithms as the real one does, copies instead of summing, counts launches as the epoch."""

    def __init__(self, max_bytes: int, one_shot_max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.one_shot_max_bytes = min(one_shot_max_bytes, max_bytes)  # as the real one caps it
        self.launches = 0
        self.largest = 0

    def epoch(self) -> int:
        return self.launches

    def all_reduce(
        self, input: torch.Tensor, out: torch.Tensor | None = None, algo: str = "auto"
    ) -> torch.Tensor:
        nbytes = input.numel() * input.element_size()
        if nbytes > self.max_bytes:
            raise RuntimeError(f"input has {nbytes} bytes, max_bytes={self.max_bytes}")
        if algo not in ALGORITHMS:
            raise ValueError(f"algo must be one of {ALGORITHMS}")
        self.largest = max(self.largest, nbytes)
        self.launches += input.numel() > 0
        out = torch.empty_like(input) if out is None else out
        out.copy_(input)
        return out


@pytest.mark.parametrize(
    "one_shot_max_bytes",
    [default_one_shot_max_bytes(2), default_one_shot_max_bytes(4), 1 << 20, 0],
    ids=["2-gpus", "4-gpus", "threshold-at-max", "always-two-shot"],
)
def test_check_groups_stay_within_max_bytes(monkeypatch, one_shot_max_bytes: int) -> None:
    """Every message the eager check groups send fits the communicator, whatever the threshold
    (a size past the threshold once overran max_bytes when 2 GPUs took one-shot at every size,
    and each check after it failed)."""
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *args, **kwargs: None)
    max_bytes = 1 << 20
    runner = cpu_runner(world=2)
    runner.plan = CheckPlan(repeat_calls=4, compare_nccl=False, skew=False, max_bytes=max_bytes)
    runner.device = torch.device("cpu")
    runner.gather = lambda value: [value] * runner.world
    runner.car = SizeCheckingAllReduce(max_bytes, one_shot_max_bytes)
    groups = ("sizes-float16", "sizes-bfloat16", "sizes-float32", "in_place", "shapes")
    for group in (*groups, "empty", "repeat", "mixed"):
        _GROUP_FUNCTIONS[group](runner)
    assert runner.car.largest == max_bytes  # the largest size was reached, not overrun
    assert {result.group for result in runner.results} >= {*groups, "empty", "repeat", "mixed"}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_check_tolerances_accept_one_rounding_and_reject_errors(dtype: torch.dtype) -> None:
    runner = cpu_runner(world=4)
    gen = torch.Generator().manual_seed(0)
    inputs = [torch.randn(5000, generator=gen).to(dtype) for _ in range(4)]
    exact = sum(x.double() for x in inputs)
    fp32_sum = inputs[0].float()
    for x in inputs[1:]:
        fp32_sum = fp32_sum + x.float()  # what the kernel does: fp32, rank order, one rounding
    assert runner.compare(fp32_sum.to(dtype), inputs) == []
    assert runner.compare(exact.to(dtype), inputs, nccl=exact.to(dtype)) == []
    # NCCL-like: a rounding to the dtype after every hop stays within the NCCL bound.
    hops = inputs[0]
    for x in inputs[1:]:
        hops = (hops.float() + x.float()).to(dtype)
    assert runner.compare(fp32_sum.to(dtype), inputs, nccl=hops) == []
    wrong = fp32_sum.to(dtype).clone()
    wrong[123] += 0.25
    wrong[4000] = float("nan")  # never written
    [problem] = runner.compare(wrong, inputs)
    assert problem.startswith("2 of 5000 elements differ from the exact fp64 sum")
    assert "first bad index 123" in problem and "worst index 4000" in problem
    stale = inputs[0].clone()  # e.g. a rank that read stale staging data: one rank's values
    [problem] = runner.compare(stale, inputs)
    assert int(problem.split(" of ")[0]) > 4500, problem


def test_check_guard_regions() -> None:
    runner = cpu_runner(world=2)
    base = torch.full((10 + 2 * PAD,), SENTINEL)
    assert runner.guard_problems(base, 10) == []
    base[PAD + 10] = 0.0  # one element past the end
    assert runner.guard_problems(base, 10) == [
        f"wrote 1 element(s) outside out (guard regions of {PAD} elements)"
    ]


def test_bench_rows_and_tables() -> None:
    assert default_sizes(1024, 8192) == (1024, 2048, 4096, 8192)

    def row(rank, impl, us, check="ok"):
        return {
            "world_size": 2,
            "rank": rank,
            "dtype": "bfloat16",
            "bytes": 4096,
            "impl": impl,
            "mode": "graph",
            "us": us,
            "min_us": us,
            "max_us": us,
            "check": check,
            "auto_algo": "one_shot",
        }

    per_rank = [
        [row(0, "auto", 5.0), row(0, "nccl", 15.0)],
        [row(1, "auto", 6.0), row(1, "nccl", 14.0, check="auto: max error 3 vs NCCL")],
    ]
    rows = combine_rows(per_rank)
    auto = next(r for r in rows if r["impl"] == "auto")
    assert auto["us"] == 6.0 and auto["us_fastest_rank"] == 5.0
    assert auto["algbw_gbps"] == pytest.approx(4096 / 6.0 / 1e3)
    table = format_tables(rows)
    assert "world_size=2 mode=graph dtype=bfloat16" in table
    assert "    4 KiB |" in table and "2.50" in table  # nccl/auto = 15 / 6
    assert "CHECK FAILED [4 KiB]: rank 1: auto: max error 3 vs NCCL" in table


def test_selftest_summary() -> None:
    results = [
        CheckResult("repeat", "a", 0, True, "ok"),
        CheckResult("repeat", "a", 1, False, "3 of 300 calls wrong"),
        CheckResult("graph", "b", 0, True, "ok"),
    ]
    text, ok = summarize(results, "world_size=2:")
    assert not ok
    assert "FAIL repeat" in text and "1/2 checks passed" in text
    assert "[rank 1] repeat / a: 3 of 300 calls wrong" in text
    assert summarize(results[2:], "t")[1] is True
    assert summarize([], "t")[1] is False


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
