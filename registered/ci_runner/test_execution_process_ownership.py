"""Every process a file starts ends with it, however it forks; no file's cleanup touches another's.

Each test runs the real CLI on a generated tree with the ownership proofs (what GitHub-hosted
runners get) and, where this machine lets the runner create cgroups, most also with a cgroup per
file; afterwards it looks for survivors by the marker every generated process carries in its
argv, and by the beat file every hopping chain keeps touching.
"""

import json
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_runner import register_cpu_ci
from ci_runner.execution.cgroup_v2 import create_shard_cgroup

register_cpu_ci(est_time=45, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from execution_tree import (  # noqa: E402
    RUN_SUITE,
    make_tree,
    processes_with_marker,
    run_suite,
    runner_env,
    script_file,
)
from process_shapes import start_tree_source, survivors, write_node  # noqa: E402


def _cgroups_here() -> bool:
    shard, _ = create_shard_cgroup()
    if shard is not None:
        shard.remove()
    return shard is not None


MECHANISMS = {"proofs": ("0", "processes: subreaper and ownership proofs")}
if _cgroups_here():
    MECHANISMS["cgroup"] = ("1", "processes: a cgroup per file")

BOTH = sorted(MECHANISMS)
PROOFS = ["proofs"]  # where the shape exercises the proofs only (a cgroup ends anything alike)
HOPPER = {"detach": True, "hop": True}
QUIET_HOPPER = {"detach": True, "hop": True, "clear_env": True, "setsid": True, "ignore_term": True}


def new_marker() -> str:
    return f"ci-runner-owner-{uuid.uuid4().hex}"


@pytest.fixture
def markers():
    made: list[str] = []

    def make() -> str:
        made.append(new_marker())
        return made[-1]

    yield make
    for marker in made:  # never leave anything behind, even when a test fails
        for proc in processes_with_marker(marker):
            proc.kill()


def tree_file(node: Path, argv_marker: str, spec: dict, then: str, est: float = 1, **kw) -> str:
    """A registered file that starts ``spec`` below itself, waits 0.5 s, then runs ``then``."""
    body = (
        "import os\nimport time\n\n"
        + start_tree_source(node, argv_marker, spec)
        + f"\n\ndef main():\n    start_tree()\n    time.sleep(0.5)\n    {then}\n"
    )
    return script_file(body, est=est, **kw)


def run(root: Path, mechanism: str, *args: str, env: dict | None = None, **kw):
    flag, header = MECHANISMS[mechanism]
    env = {"CI_RUNNER_CGROUPS": flag, **(env or {})}
    proc = run_suite(root, "--kill-grace-seconds", "0.5", *args, env=env, **kw)
    assert header in proc.stdout, proc.stdout + proc.stderr
    assert "kept appearing" not in proc.stdout, proc.stdout  # every fixpoint converged
    return proc


def passes_and_ends_its_tree(tmp_path: Path, mechanism: str, name: str, spec: dict) -> str:
    """Run a passing file ``name`` that starts ``spec``; assert that nothing of it is left."""
    marker = new_marker()
    node = write_node(tmp_path)
    try:
        files = {name: tree_file(node, marker, spec, "return 0")}
        proc = run(make_tree(tmp_path, files), mechanism)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"registered/{name}  passed" in proc.stdout
        assert survivors(node, marker) == []
    finally:
        for leftover in processes_with_marker(marker):
            leftover.kill()
    return proc.stdout


@pytest.mark.parametrize("mechanism", PROOFS)
def test_hopping_chains_of_a_passing_file_end_with_it(tmp_path, mechanism):
    spec = {"children": [HOPPER, HOPPER, HOPPER, QUIET_HOPPER]}
    output = passes_and_ends_its_tree(tmp_path, mechanism, "test_hops.py", spec)
    assert re.search(r"test_hops.py  passed .*\[killed \d+ leftover process", output)


@pytest.mark.parametrize("mechanism", BOTH)
def test_hopping_chains_of_a_timed_out_file_end_with_it(tmp_path, markers, mechanism):
    marker = markers()
    spec = {"ignore_term": True, "children": [HOPPER, HOPPER, QUIET_HOPPER]}
    node = write_node(tmp_path)
    files = {"test_hangs.py": tree_file(node, marker, spec, "time.sleep(600)")}
    proc = run(make_tree(tmp_path, files), mechanism, "--timeout-per-file", "3")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "registered/test_hangs.py  timeout" in proc.stdout
    assert survivors(node, marker) == []


RETRIED = """
import os
import time

import psutil

{start_tree}

def main():
    if os.environ["CI_RUNNER_ATTEMPT"] == "1":
        start_tree()
        time.sleep(0.5)
        return 1
    left = [
        p.pid for p in psutil.process_iter(["cmdline", "status"])
        if p.info["status"] != psutil.STATUS_ZOMBIE and {marker!r} in " ".join(p.info["cmdline"] or ())
    ]
    with open(os.environ["LEFT_BY_ATTEMPT_1"], "w") as out:
        out.write(str(len(left)))
    return 0
"""


@pytest.mark.parametrize("mechanism", PROOFS)
def test_an_attempt_ends_before_its_retry_starts(tmp_path, markers, mechanism):
    marker = markers()
    spec = {"children": [HOPPER, QUIET_HOPPER, {"detach": True, "clear_env": True}]}
    node = write_node(tmp_path)
    start = start_tree_source(node, marker, spec)
    body = script_file(RETRIED.format(start_tree=start, marker=marker))
    left = tmp_path / "left.txt"
    proc = run(
        make_tree(tmp_path, {"test_retried.py": body}), mechanism,
        "--enable-retry", "--retry-wait-seconds", "0", env={"LEFT_BY_ATTEMPT_1": str(left)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "registered/test_retried.py  flaky" in proc.stdout, proc.stdout
    assert left.read_text() == "0"
    assert survivors(node, marker) == []


@pytest.mark.parametrize("mechanism", PROOFS)
def test_a_hopping_chain_with_an_empty_environment_ends_with_its_file(tmp_path, mechanism):
    spec = {"children": [{"detach": True, "hop": True, "clear_env": True}]}
    passes_and_ends_its_tree(tmp_path, mechanism, "test_quiet.py", spec)


@pytest.mark.parametrize("mechanism", PROOFS)
def test_a_fork_bomb_and_a_lone_forking_thread_end_with_their_file(tmp_path, mechanism):
    spec = {
        "children": [
            {"bomb": 6},
            {"detach": True, "clear_env": True, "bomb": 5},
            {"detach": True, "lone_thread": True, "ignore_term": True},  # a "zombie" that forks
        ]
    }
    passes_and_ends_its_tree(tmp_path, mechanism, "test_bomb.py", spec)


@pytest.mark.parametrize("mechanism", BOTH)
def test_hopping_chains_end_when_the_runner_is_stopped(tmp_path, markers, mechanism):
    first, second = markers(), markers()
    node = write_node(tmp_path)
    spec = {"children": [HOPPER, QUIET_HOPPER]}
    files = {
        "test_a.py": tree_file(node, first, spec, "time.sleep(600)", est=9),
        "test_b.py": tree_file(node, second, spec, "time.sleep(600)", est=8),
    }
    flag, _ = MECHANISMS[mechanism]
    runner = subprocess.Popen(
        [sys.executable, str(RUN_SUITE), "--root", str(make_tree(tmp_path, files)), "--hw",
         "cpu", "--suite", "cpu-suite", "--gpus", "2", "--kill-grace-seconds", "0.5"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=runner_env({"CI_RUNNER_CGROUPS": flag}),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(
            (node.parent / "beats" / m).exists() for m in (first, second)
        ):
            time.sleep(0.05)
        runner.send_signal(signal.SIGTERM)
        output, _ = runner.communicate(timeout=60)
    finally:
        runner.kill()
    assert runner.returncode == 143, output
    assert survivors(node, first) == [] and survivors(node, second) == []


SHORT = {
    "children": [
        {"detach": True, "tag": "proven"},
        {"detach": True, "setsid": True, "clear_env": True, "ignore_term": True},
        {"detach": True, "setsid": True, "clear_env": True, "hop": True},
        {"setsid": True, "clear_env": True},
    ]
}
LONG = {
    "children": [
        {"setsid": True, "clear_env": True, "ignore_term": True},
        {"detach": True, "setsid": True, "clear_env": True, "ignore_term": True},
        {"detach": True, "clear_env": True, "hop": True},
        {"threads": 2},
    ]
}
LONG_CHECKS = """
import json
import os
import time

import psutil

{start_tree}

def mine(marker, tag=None):
    # (pid, start time) of the live processes of marker that do not hop (or of one tag)
    found = set()
    for p in psutil.process_iter(["cmdline", "status", "create_time"]):
        argv = p.info["cmdline"] or []
        if p.info["status"] != psutil.STATUS_ZOMBIE and marker in argv:
            spec = json.loads(argv[-1])
            if not spec.get("hop") and (tag is None or spec.get("tag") == tag):
                found.add((p.pid, p.info["create_time"]))
    return found


def main():
    start_tree()
    deadline = time.time() + 60
    while len(mine({long!r})) < 10 and time.time() < deadline:
        time.sleep(0.05)  # the top node, 2 below it, the threads' node and its 6 children
    before = mine({long!r})
    while mine({short!r}, "proven") and time.time() < deadline:
        time.sleep(0.05)
    short_cleaned = not mine({short!r}, "proven")
    time.sleep(2.0)  # the short file's cleanup (0.5 s grace, then the fixpoint) is over
    after = mine({long!r})
    moved = os.stat({beat!r}).st_mtime_ns
    time.sleep(0.5)
    result = {{
        "before": len(before),
        "survived": len(before & after),
        "hopping": os.stat({beat!r}).st_mtime_ns != moved,
        "short_cleaned": short_cleaned,
    }}
    with open(os.environ["LONG_RESULT"], "w") as out:
        out.write(json.dumps(result))
    return 0
"""


@pytest.mark.parametrize("mechanism", BOTH)
def test_a_files_cleanup_never_touches_a_file_running_beside_it(tmp_path, markers, mechanism):
    short, long = markers(), markers()
    node = write_node(tmp_path)
    checks = LONG_CHECKS.format(
        start_tree=start_tree_source(node, long, LONG),
        long=long,
        short=short,
        beat=str(node.parent / "beats" / long),
    )
    files = {
        "test_short.py": tree_file(node, short, SHORT, "time.sleep(0.5)\n    return 0",
                                   est=2, suite="gpu-suite", marker="cuda"),
        "test_long.py": script_file(checks, est=5, suite="gpu-suite", marker="cuda"),
    }  # fmt: skip
    result = tmp_path / "long.json"
    proc = run(
        make_tree(tmp_path, files), mechanism, "--gpu-ids", "0,1",
        hw="cuda", suite="gpu-suite", env={"LONG_RESULT": str(result)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    checked = json.loads(result.read_text())
    assert checked["short_cleaned"], (checked, proc.stdout)
    assert checked["before"] >= 10 and checked["survived"] == checked["before"], checked
    assert checked["hopping"], checked
    assert re.search(r"test_short.py  passed .*\[killed \d+ leftover process", proc.stdout)
    if mechanism == "proofs":  # the short file's unprovable daemons outlive it, then end
        assert (
            "leftover process(es) of one of registered/test_long.py, registered/test_short.py"
            in proc.stdout
        ), proc.stdout
    assert survivors(node, short) == [] and survivors(node, long) == []


def test_a_cgroups_switch_that_is_no_boolean_stops_the_run(tmp_path):
    root = make_tree(tmp_path, {"test_x.py": script_file("def main():\n    return 0\n")})
    proc = run_suite(root, env={"CI_RUNNER_CGROUPS": "maybe"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "environment variable CI_RUNNER_CGROUPS='maybe' is not a boolean" in proc.stderr


FLAGS = st.fixed_dictionaries(
    {},
    optional={
        "detach": st.booleans(),
        "setsid": st.booleans(),
        "clear_env": st.booleans(),
        "ignore_term": st.booleans(),
        "hop": st.booleans(),
        "stopped": st.booleans(),
        "threads": st.sampled_from([0, 2]),
        "lone_thread": st.booleans(),
    },
)
SHAPES = st.recursive(
    FLAGS,
    lambda below: st.tuples(FLAGS, st.lists(below, min_size=1, max_size=2)).map(
        lambda pair: {**pair[0], "children": pair[1]}
    ),
    max_leaves=4,
)


@settings(max_examples=4, deadline=None, database=None, derandomize=True)
@given(shape=SHAPES, mechanism=st.sampled_from(sorted(MECHANISMS)), timed_out=st.booleans())
def test_any_process_tree_ends_with_its_file(tmp_path_factory, shape, mechanism, timed_out):
    tmp_path = tmp_path_factory.mktemp("shape")
    marker = new_marker()
    try:
        then = "time.sleep(600)" if timed_out else "return 0"
        node = write_node(tmp_path)
        files = {"test_shape.py": tree_file(node, marker, shape, then)}
        proc = run(make_tree(tmp_path, files), mechanism, "--timeout-per-file", "4")
        assert proc.returncode == (1 if timed_out else 0), proc.stdout + proc.stderr
        assert survivors(node, marker) == [], shape
    finally:
        for leftover in processes_with_marker(marker):
            leftover.kill()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
