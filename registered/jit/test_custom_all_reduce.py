"""CustomAllReduce (jit_kernel.all_reduce) across the GPUs of the runner, against NCCL and the
exact sum.

World sizes: 2, and every visible GPU (torch.cuda.device_count()) when there are more than 2.
Spawning ranks costs seconds (process start, NCCL init), so for each world size ONE set of worker
processes (jit_kernel.distributed.launch.run_on_gpus) runs every check of
testing.all_reduce_checks and sends the results back; each test below asserts one
group of them, with the rank, case, dtype, and the max error / first bad index of a failure:

* sizes-<dtype>: 1 element, odd sizes, partial 16-byte packs, around the one-shot/two-shot
  threshold, block and chunk boundaries, max_bytes; algo auto / one_shot / two_shot; outputs
  NaN-poisoned between guard regions; input unchanged; result bit-identical on every rank;
* in_place, shapes (N-d and 0-d), empty tensors (nothing launched);
* repeat: hundreds of back-to-back calls without a host sync, inputs cycling through 5 data
  sets, some ranks delayed (a fast rank runs into the next call while a slow one still reads
  the previous call's staging data), one-shot, two-shot and alternating; the device epoch;
* mixed: different sizes, dtypes and algorithms back to back;
* graph: CUDA-graph capture, replays with new data, eager calls between replays;
* second_communicator: a second communicator (3 blocks, always two-shot) interleaved;
* largest_communicator: one at max_bytes = MAX_BYTES_LIMIT (2 GiB of buffers per rank) reduces;
* bad_inputs: wrong dtype, too large, non-contiguous, misaligned, CPU, another GPU, non-tensor
  input/out, mismatched out, overlapping out, unknown algo: each a clear error, and the next good
  call still works; close: calls after close() raise.

Tolerances (see all_reduce_checks): against the exact float64 sum, half an ulp of the dtype plus
the fp32 accumulation error of W terms (u |exact| + 2 W 2^-24 sum|x| + 1e-7, u = 2^-11 fp16,
2^-8 bf16, 0 fp32); against NCCL, which may round after each of its W - 1 hops in the tensor's
dtype, additionally W u sum|x|.

A rank that raises or hangs fails these tests with its traceback (the launcher's timeout kills
it); without 2 GPUs, or without peer access between them, the module skips and says which pair.
"""

import sys

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)
import torch

from ci_runner import register_cuda_ci
from jit_kernel.env import get_ci_test_range
from testing.skip import skip_module_unless

register_cuda_ci(est_time=150, suite="base-b-kernel-unit-8-gpu-h200", min_gpus=2)
register_cuda_ci(est_time=420, suite="nightly-kernel-8-gpu-h200", nightly=True, min_gpus=2)

GPU_COUNT = torch.cuda.device_count() if torch.cuda.is_available() else 0
skip_module_unless(
    GPU_COUNT >= 2, f"custom all-reduce tests need at least 2 CUDA GPUs, found {GPU_COUNT}"
)

from jit_kernel.all_reduce import MAX_WORLD_SIZE, p2p_problems, precompile_custom_all_reduce  # noqa: E402
from jit_kernel.distributed import run_on_gpus  # noqa: E402
from jit_kernel.distributed.topology import describe_topology  # noqa: E402
from testing.all_reduce_checks import (  # noqa: E402
    GROUPS,
    CheckPlan,
    CheckResult,
    run_checks,
)

WORLD_SIZES = sorted({2, min(GPU_COUNT, MAX_WORLD_SIZE)})
FULL = get_ci_test_range(True, False)  # the full size grid locally and nightly
PLAN = CheckPlan(full=FULL, repeat_calls=get_ci_test_range(500, 300))
TIMEOUT = 900.0 if FULL else 600.0  # seconds per world size (the suite allows 1800 per file)

_outcomes: dict[int, tuple[str, object]] = {}


def _outcome(world_size: int) -> tuple[str, object]:
    """Run every check once per world size (first test to ask); cache results/skip/error."""
    if world_size in _outcomes:
        return _outcomes[world_size]
    devices = list(range(world_size))
    problems = p2p_problems(devices)
    if problems:
        outcome: tuple[str, object] = (
            "skip",
            f"custom all-reduce needs peer (P2P) access between every pair of GPUs {devices}: "
            + "; ".join(problems)
            + "\n"
            + describe_topology(devices, smi=False),
        )
    else:
        try:
            precompile_custom_all_reduce()  # once here, not in every rank
            per_rank = run_on_gpus(world_size, run_checks, PLAN, timeout=TIMEOUT)
            outcome = ("ok", [result for rank in per_rank for result in rank])
        except Exception as error:
            outcome = ("error", f"{type(error).__name__}: {error}")
    _outcomes[world_size] = outcome
    return outcome


def results_for(world_size: int) -> list[CheckResult]:
    kind, value = _outcome(world_size)
    if kind == "skip":
        pytest.skip(str(value))
    if kind == "error":
        pytest.fail(f"world_size={world_size}: the ranks did not complete:\n{value}", pytrace=False)
    assert isinstance(value, list)
    return value


@pytest.mark.parametrize("world_size", WORLD_SIZES, ids=lambda size: f"world{size}")
@pytest.mark.parametrize("group", GROUPS)
def test_custom_all_reduce(group: str, world_size: int) -> None:
    results = [result for result in results_for(world_size) if result.group == group]
    assert results, f"world_size={world_size}: no '{group}' checks ran"
    ranks = sorted({result.rank for result in results})
    assert ranks == list(range(world_size)), f"'{group}' checks came back from ranks {ranks} only"
    failures = [result for result in results if not result.ok]
    assert not failures, (
        f"world_size={world_size}, {group}: {len(failures)} of {len(results)} checks failed:\n"
        + "\n".join(failure.describe() for failure in failures[:25])
    )


def test_peer_access_report() -> None:
    """The P2P matrix and interconnect of this machine, in the log (-s) for whoever reads it."""
    report = describe_topology()
    print(report)
    assert "peer access" in report


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v", "-s"]))
