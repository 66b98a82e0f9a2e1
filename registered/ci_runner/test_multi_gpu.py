"""Multi-GPU suites with fake GPU ids: gpus-per-file = "all", min_gpus=, and files skipped for
want of GPUs (reported in the console, JUnit, timings and step summary; never a failure)."""

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cpu_ci
from ci_runner.catalog import load_catalog
from ci_runner.collect import collect
from ci_runner.execution.gpu_slots import SlotSet, skip_reason
from ci_runner.maintenance.junit_merge import Entry, Plan, check, summary_lines
from ci_runner.model import Registration
from ci_runner.select import gpu_need, select

register_cpu_ci(est_time=12, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from execution_tree import gpu_recorder, make_tree, run_suite  # noqa: E402

from testing.tree_builder import catalog_toml, suite_toml, write_tree  # noqa: E402


def records(log: Path) -> dict[str, dict]:
    return {Path(r["file"]).name: r for r in map(json.loads, log.read_text().splitlines())}


def overlap(a: dict, b: dict) -> bool:
    return a["start"] < b["end"] and b["start"] < a["end"]


# --- scheduling with fake GPU ids ----------------------------------------------------------------


def test_two_one_gpu_files_run_in_parallel_each_on_its_own_gpu(tmp_path):
    files = {"test_a.py": gpu_recorder(5, 1.0), "test_b.py": gpu_recorder(4, 1.0)}
    root = make_tree(tmp_path / "tree", files)
    log = tmp_path / "log.jsonl"
    proc = run_suite(
        root, "--gpu-ids", "0,1", hw="cuda", suite="gpu-suite", env={"SLOT_LOG": str(log)}
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = records(log)
    assert {seen["test_a.py"]["gpus"], seen["test_b.py"]["gpus"]} == {"0", "1"}
    assert overlap(seen["test_a.py"], seen["test_b.py"])


def test_all_gpus_file_sees_every_gpu_of_the_runner_and_runs_alone(tmp_path):
    files = {
        "test_allreduce.py": gpu_recorder(9, 0.5, suite="gpu-all-suite"),
        "test_allgather.py": gpu_recorder(8, 0.5, suite="gpu-all-suite"),
    }
    root = make_tree(tmp_path / "tree", files)
    log = tmp_path / "log.jsonl"
    proc = run_suite(
        root, "--gpu-ids", "0,1,2,3", hw="cuda", suite="gpu-all-suite", env={"SLOT_LOG": str(log)}
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = records(log)
    assert seen["test_allreduce.py"]["gpus"] == "0,1,2,3"
    assert seen["test_allgather.py"]["gpus"] == "0,1,2,3"
    assert not overlap(seen["test_allreduce.py"], seen["test_allgather.py"])
    assert "[gpu 0,1,2,3]" in proc.stdout


@pytest.mark.parametrize("visible", ["4,5", "4,5,6,7", "0,1,2,3,4,5,6,7"])
def test_the_same_all_gpus_suite_runs_on_2_4_and_8_gpu_runners(tmp_path, visible):
    """No flag: the runner detects its GPUs from CUDA_VISIBLE_DEVICES; the file gets them all."""
    root = make_tree(tmp_path / "tree", {"test_ar.py": gpu_recorder(3, 0, suite="gpu-all-suite")})
    log = tmp_path / "log.jsonl"
    env = {"SLOT_LOG": str(log), "CUDA_VISIBLE_DEVICES": visible}
    proc = run_suite(root, hw="cuda", suite="gpu-all-suite", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert records(log)["test_ar.py"]["gpus"] == visible


def test_min_gpus_raises_a_fixed_suites_count(tmp_path):
    files = {"test_tp3.py": gpu_recorder(3, 0, suite="gpu2-suite", extra=", min_gpus=3")}
    root = make_tree(tmp_path / "tree", files)
    log = tmp_path / "log.jsonl"
    proc = run_suite(
        root, "--gpu-ids", "0,1,2,3", hw="cuda", suite="gpu2-suite", env={"SLOT_LOG": str(log)}
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert records(log)["test_tp3.py"]["gpus"] == "0,1,2"


def test_file_needing_more_gpus_than_the_runner_has_is_skipped_in_every_report(tmp_path):
    files = {
        "test_needs4.py": gpu_recorder(5, 0, suite="gpu-all-suite", extra=", min_gpus=4"),
        "test_any.py": gpu_recorder(4, 0, suite="gpu-all-suite"),
        "test_pair.py": gpu_recorder(3, 0, suite="gpu2-suite"),
    }
    root = make_tree(tmp_path / "tree", files)
    log, junit, timings = tmp_path / "log.jsonl", tmp_path / "j.xml", tmp_path / "t.jsonl"
    summary = tmp_path / "summary.md"
    proc = run_suite(
        root,
        *("--gpu-ids", "6", "--junit-xml", str(junit), "--timings-out", str(timings)),
        hw="cuda",
        suite="gpu-all-suite,gpu2-suite",
        env={"SLOT_LOG": str(log), "GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert set(records(log)) == {"test_any.py"}  # ran, on the one GPU there is
    reason4 = (
        "needs at least 4 GPUs (min_gpus=4 in its gpu-all-suite registration) but this runner "
        "has 1 slot(s): GPU 6 (--gpu-ids); run it on a runner with 4 or more GPUs"
    )
    reason2 = (
        "needs 2 GPUs (gpus-per-file = 2 of suite gpu2-suite) but this runner has 1 slot(s): "
        "GPU 6 (--gpu-ids); run it on a runner with 2 or more GPUs"
    )
    # console: a line as soon as the shard starts, the results table, the skipped list
    assert f"[skipped] registered/test_needs4.py  skipped  [{reason4}]" in proc.stdout
    assert f"  registered/test_pair.py [skipped]: {reason2}" in proc.stdout
    assert "files: 1 passed, 2 skipped" in proc.stdout
    assert proc.stdout.rstrip().endswith("summary: 1 passed, 0 failed, 2 skipped")
    # JUnit: a <skipped> case with the reason, status and reason properties
    suites = {s.get("name"): s for s in ET.parse(junit).getroot().iter("testsuite")}
    needs4 = suites["registered/test_needs4.py"]
    props = {p.get("name"): p.get("value") for p in needs4.iter("property")}
    assert (props["status"], props["reason"]) == ("skipped", reason4)
    assert needs4.find("testcase/skipped").get("message") == f"skipped: {reason4}"
    # timings and the step summary
    lines = {r["path"]: r for r in map(json.loads, timings.read_text().splitlines())}
    assert lines["registered/test_pair.py"]["status"] == "skipped"
    assert lines["registered/test_pair.py"]["reason"] == reason2
    text = summary.read_text()
    assert "### Skipped on this runner (2)" in text
    assert f"- `registered/test_needs4.py`: {reason4}" in text
    assert "| `registered/test_pair.py` | ➖ skipped |" in text


def test_without_any_gpu_an_all_gpus_file_runs_unpinned_and_a_multi_gpu_one_is_skipped(tmp_path):
    files = {
        "test_any.py": gpu_recorder(4, 0, suite="gpu-all-suite"),
        "test_two.py": gpu_recorder(3, 0, suite="gpu-all-suite", extra=", min_gpus=2"),
    }
    root = make_tree(tmp_path / "tree", files)
    log = tmp_path / "log.jsonl"
    (tmp_path / "bin").mkdir()  # a PATH without nvidia-smi, and no CUDA_VISIBLE_DEVICES
    env = {"SLOT_LOG": str(log), "PATH": str(tmp_path / "bin")}
    proc = run_suite(root, hw="cuda", suite="gpu-all-suite", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert records(log)["test_any.py"]["gpus"] is None  # environment left alone
    assert (
        "[skipped] registered/test_two.py  skipped  [needs at least 2 GPUs (min_gpus=2 in its "
        "gpu-all-suite registration) but this runner has 1 slot (no GPU found: one file at a "
        "time); run it on a runner with 2 or more GPUs]"
    ) in proc.stdout


def test_dry_run_shows_what_each_file_gets(tmp_path):
    files = {
        "test_all.py": gpu_recorder(5, 0, suite="gpu-all-suite", extra=", min_gpus=2"),
        "test_pair.py": gpu_recorder(3, 0, suite="gpu2-suite"),
    }
    root = make_tree(tmp_path / "tree", files)
    proc = run_suite(root, "--dry-run", hw="cuda", suite="gpu-all-suite,gpu2-suite")
    assert "  - registered/test_all.py (est 5.0s, every GPU (at least 2))" in proc.stdout
    assert "  - registered/test_pair.py (est 3.0s, 2 GPUs)" in proc.stdout
    proc = run_suite(
        root, "--dry-run", "--format", "json", hw="cuda", suite="gpu-all-suite,gpu2-suite"
    )
    files = {f["path"]: f for f in json.loads(proc.stdout)["files"]}
    assert (
        files["registered/test_all.py"]["gpus"],
        files["registered/test_all.py"]["all_gpus"],
    ) == (
        2,
        True,
    )
    assert files["registered/test_pair.py"]["all_gpus"] is False


# --- the rule itself -----------------------------------------------------------------------------

CATALOG = catalog_toml(
    suite_toml("cpu", "cpu", gpus_per_file=0),
    suite_toml("one", "cuda"),
    suite_toml("eight", "cuda", gpus_per_file=8),
    suite_toml("all", "cuda", gpus_per_file="all"),
)


def reg(suite: str, min_gpus: int | None = None) -> Registration:
    return Registration("registered/test_x.py", "cuda", suite, 1.0, min_gpus=min_gpus)


@pytest.mark.parametrize(
    "regs,expected",
    [
        ([reg("one")], (1, False, "gpus-per-file = 1 of suite one")),
        ([reg("all")], (1, True, 'gpus-per-file = "all" of suite all')),
        ([reg("all", 2)], (2, True, "min_gpus=2 in its all registration")),
        ([reg("one", 4)], (4, False, "min_gpus=4 in its one registration")),
        ([reg("one"), reg("eight")], (8, False, "gpus-per-file = 8 of suite eight")),
        ([reg("eight"), reg("all", 2)], (8, True, "gpus-per-file = 8 of suite eight")),
    ],
)
def test_gpu_need_of_a_file_is_the_largest_of_its_registrations(tmp_path, regs, expected):
    catalog = load_catalog(write_tree(tmp_path, CATALOG, {}))
    assert gpu_need(regs, catalog) == expected


@pytest.mark.parametrize(
    "gpus,all_gpus,slots,expected",
    [
        (1, False, SlotSet(("0",), True, "x"), None),
        (0, False, SlotSet(("0",), False, "sequential"), None),
        (1, True, SlotSet(("0",), False, "no GPU found"), None),
        (8, True, SlotSet(tuple("01234567"), True, "x"), None),
        (8, False, SlotSet(tuple("0123"), True, "x"), "needs 8 GPUs (why) but this runner has 4"),
        (3, True, SlotSet(("0", "1"), True, "x"), "needs at least 3 GPUs (why) but this runner"),
    ],
)
def test_skip_reason(gpus, all_gpus, slots, expected):
    reason = skip_reason(gpus, all_gpus, "why", slots)
    assert reason == expected if expected is None else reason.startswith(expected)


def test_min_gpus_in_a_suite_without_gpus_is_a_registration_problem(tmp_path):
    source = (
        "import sys\nfrom ci_runner import register_cpu_ci\n\n"
        'register_cpu_ci(est_time=1, suite="cpu", min_gpus=2)\n\n'
        'if __name__ == "__main__":\n    sys.exit(0)\n'
    )
    root = write_tree(tmp_path, CATALOG, {"registered/test_c.py": source})
    problems = [str(p) for p in collect(load_catalog(root)).problems]
    assert problems == [
        "registered/test_c.py:4:1: min_gpus=2 cannot be honoured: suite 'cpu' runs its files "
        "without GPUs (gpus-per-file = 0 in the catalog)"
    ]


def test_selection_carries_the_gpu_need(tmp_path):
    catalog = load_catalog(write_tree(tmp_path, CATALOG, {}))
    selection = select([reg("all", 2)], catalog, hw="cuda", suite_names=["all"], nightly=False)
    (only,) = selection.files
    assert (only.gpus, only.all_gpus) == (2, True)


def test_the_projects_multi_gpu_suites_take_every_gpu():
    from helpers_tree import REPO_ROOT

    catalog = load_catalog(REPO_ROOT)
    for name in ("base-b-kernel-unit-8-gpu-h200", "nightly-kernel-8-gpu-h200"):
        assert catalog.get(name).gpus_per_file == "all"


def test_the_aggregate_check_lists_skipped_files_without_failing():
    def entry(path: str, status: str, reason: str = "") -> Entry:
        return Entry(path, "s", status, 0.0, "0/1", "r.xml", None, reason)  # type: ignore[arg-type]

    plan = Plan(files={("a.py", "s"), ("b.py", "s")})
    result = check(plan, [entry("a.py", "passed"), entry("b.py", "skipped", "needs 8 GPUs")])
    assert result.ok
    lines = summary_lines(result)
    assert "SKIPPED: 1 file(s) needed more GPUs than their runner:" in lines
    assert "  b.py [s] (shard 0/1): needs 8 GPUs" in lines
    assert lines[-1] == "OK: every planned file was reported exactly once; none failed"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
