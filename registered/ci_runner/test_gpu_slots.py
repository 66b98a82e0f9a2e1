"""Slots: where the ids come from, the pool, concurrent pinned files with fake ids, and
``--jobs`` (CPU files side by side)."""

import json
import sys
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci
from ci_runner.execution.gpu_slots import SlotError, SlotPool, parse_id_list, resolve_slots

register_cpu_ci(est_time=12, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from execution_tree import gpu_recorder, make_tree, run_suite  # noqa: E402


def test_gpu_ids_flag_wins():
    ids = parse_id_list("3, 1", "--gpu-ids")
    slots = resolve_slots("cuda", None, ids, environ={"CUDA_VISIBLE_DEVICES": "0"})
    assert (slots.ids, slots.pinned) == (("3", "1"), True)


def test_gpus_takes_the_first_visible_devices():
    slots = resolve_slots("cuda", 2, None, environ={"CUDA_VISIBLE_DEVICES": "4,5,6"})
    assert slots.ids == ("4", "5")


def test_gpus_without_visible_devices_counts_from_zero():
    assert resolve_slots("cpu", 3, None, environ={}).ids == ("0", "1", "2")


def test_cuda_default_is_every_visible_device():
    slots = resolve_slots("cuda", None, None, environ={"CUDA_VISIBLE_DEVICES": "GPU-a,GPU-b"})
    assert slots.ids == ("GPU-a", "GPU-b") and slots.source == "CUDA_VISIBLE_DEVICES"


def test_cuda_default_counts_nvidia_smi():
    slots = resolve_slots("cuda", None, None, environ={}, nvidia_smi_count=8)
    assert len(slots.ids) == 8 and slots.source == "nvidia-smi -L"


def test_cuda_without_any_gpu_runs_one_file_at_a_time_unpinned():
    slots = resolve_slots("cuda", None, None, environ={}, nvidia_smi_count=0)
    assert (slots.ids, slots.pinned) == (("0",), False)


def test_cpu_default_is_one_unpinned_slot():
    assert resolve_slots("cpu", None, None, environ={}).pinned is False


def test_jobs_gives_a_cpu_backend_that_many_unpinned_slots():
    slots = resolve_slots("cpu", None, None, environ={"CUDA_VISIBLE_DEVICES": "0"}, jobs=3)
    assert (slots.ids, slots.pinned, slots.describe()) == (
        ("0", "1", "2"), False, "3 slots (--jobs 3)",
    )  # fmt: skip
    assert resolve_slots("cpu", None, None, environ={}, jobs=1).describe() == "1 slot (sequential)"


@pytest.mark.parametrize(
    ("gpus", "ids", "env", "message"),
    [
        (None, "0,,1", {}, "--gpu-ids='0,,1': expected a comma-separated list of device ids"),
        (None, "1,1", {}, "--gpu-ids='1,1': duplicate device id(s) 1"),
        (3, None, {"CUDA_VISIBLE_DEVICES": "0,1"}, "--gpus=3: only 2 device(s) in"),
        (0, None, {}, "--gpus=0: expected a positive number of GPUs"),
    ],
)
def test_bad_slot_requests_are_explained(gpus, ids, env, message):
    with pytest.raises(SlotError, match=None) as info:
        resolve_slots("cuda", gpus, ids and parse_id_list(ids, "--gpu-ids"), environ=env)
    assert message in str(info.value)


def test_pool_hands_out_lowest_free_ids():
    pool = SlotPool(["0", "1", "2", "3"])
    assert pool.try_take(2) == ("0", "1")
    assert pool.try_take(3) is None
    assert pool.try_take(1) == ("2",)
    pool.give_back(["1", "0"])
    assert pool.try_take(2) == ("0", "1")


def sleeper(est: float, seconds: float, suite: str = "gpu-suite") -> str:
    return gpu_recorder(est, seconds, suite)


def test_files_run_concurrently_each_pinned_to_free_gpus(tmp_path):
    files = {f"test_g{i}.py": sleeper(est=10 - i, seconds=1.0) for i in range(4)}
    files["test_pair.py"] = sleeper(est=20, seconds=1.0, suite="gpu2-suite")
    root = make_tree(tmp_path / "tree", files)
    log = tmp_path / "slots.jsonl"
    proc = run_suite(
        root, "--gpu-ids", "0,1,2,3", hw="cuda", suite="gpu-suite,gpu2-suite",
        env={"SLOT_LOG": str(log)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    records = [json.loads(line) for line in log.read_text().splitlines()]
    by_file = {Path(r["file"]).name: r for r in records}
    assert by_file["test_pair.py"]["gpus"] == "0,1"  # longest first, and it needs two
    assert all(len(r["gpus"].split(",")) == 1 for n, r in by_file.items() if n != "test_pair.py")
    # never two files on one GPU at the same time
    for a in records:
        for b in records:
            if a is not b and a["start"] < b["end"] and b["start"] < a["end"]:
                assert not set(a["gpus"].split(",")) & set(b["gpus"].split(","))
    # 5 one-second files on 4 GPUs (one needing 2): two waves, not five
    span = max(r["end"] for r in records) - min(r["start"] for r in records)
    assert span < 3.5, span
    assert "[gpu 0,1]" in proc.stdout


def cpu_sleeper(est: float, seconds: float) -> str:
    return (
        gpu_recorder(est, seconds)
        .replace("register_cuda_ci", "register_cpu_ci")
        .replace('suite="gpu-suite"', 'suite="cpu-suite"')
    )


@pytest.mark.parametrize("jobs", [None, "2"])
def test_jobs_runs_cpu_files_side_by_side_with_the_environment_untouched(tmp_path, jobs):
    files = {f"test_c{i}.py": cpu_sleeper(est=10 - i, seconds=1.0) for i in range(4)}
    root = make_tree(tmp_path / "tree", files)
    log = tmp_path / "slots.jsonl"
    flags = ("--jobs", jobs) if jobs else ()
    proc = run_suite(
        root, *flags, hw="cpu", suite="cpu-suite",
        env={"SLOT_LOG": str(log), "CUDA_VISIBLE_DEVICES": "7"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    records = sorted((json.loads(line) for line in log.read_text().splitlines()),
                     key=lambda r: r["start"])  # fmt: skip
    assert len(records) == 4 and all(r["gpus"] == "7" for r in records)  # not pinned
    overlapping = max(
        sum(1 for b in records if b["start"] < a["end"] and a["start"] < b["end"]) for a in records
    )
    if jobs:  # two at a time, never three: two waves of two one-second files
        assert overlapping == 2, records
        assert "2 slots (--jobs 2)" in proc.stdout
    else:
        assert overlapping == 1, records
        assert "1 slot (sequential)" in proc.stdout


def test_jobs_is_refused_for_cuda_and_bad_counts(tmp_path):
    root = make_tree(tmp_path / "tree", {"test_c.py": cpu_sleeper(est=1, seconds=0)})
    cuda = run_suite(root, "--jobs", "2", hw="cuda", suite="gpu-suite")
    assert cuda.returncode == 2
    assert "--jobs 2: runs files side by side on a backend other than cuda" in cuda.stderr
    zero = run_suite(root, "--jobs", "0", hw="cpu", suite="cpu-suite")
    assert zero.returncode == 2
    assert "argument --jobs: expected a whole number from 1 to 1024, got '0'" in zero.stderr
    both = run_suite(root, "--jobs", "2", "--gpus", "2", hw="cpu", suite="cpu-suite")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
    twice = run_suite(root, "--jobs", "2", "--jobs", "3", hw="cpu", suite="cpu-suite")
    assert twice.returncode == 2
    assert "--jobs given twice ('2', then '3'); give it once" in twice.stderr
    word = run_suite(root, "--jobs", "x", hw="cpu", suite="cpu-suite")
    assert word.returncode == 2
    assert "argument --jobs: expected a whole number, got 'x'" in word.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
