"""The static import closure holds every repository module a CPU test imports at run time.

For every file of the CPU suite, ``import_trace.py`` loads the file in a fresh forked child (as
``python FILE`` would, without running its tests) and records every module in ``sys.modules``
whose file lies in the repository. The change analysis's dependency graph, built from the same
files, must reach each of them from that test: a module it missed is a change that would not
select a test that runs it.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci
from ci_runner.catalog import load_catalog
from ci_runner.execution.child import CHILD_DIR
from ci_runner.impact.config import load_impact_config
from ci_runner.impact.fact_cache import FactCache
from ci_runner.impact.graph import DependencyGraph
from ci_runner.impact.index import RepoIndex

register_cpu_ci(est_time=15, suite="base-a-test-cpu")

ROOT = Path(__file__).resolve().parents[2]
TRACER = Path(__file__).with_name("import_trace.py")


def cpu_suite_files() -> list[str]:
    done = subprocess.run(
        [
            sys.executable,
            "run_suite.py",
            "--hw",
            "cpu",
            "--suite",
            "base-a-test-cpu",
            "--dry-run",
            "--format",
            "json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return [f["path"] for f in json.loads(done.stdout)["files"]]


# --record-deps starts coverage.py with the runner's recorder in every Python process: the
# recorder's plugin (ci_runner.execution.record_child) is harness too
RECORDING = (
    "COVERAGE_PROCESS_START",
    "COVERAGE_PROCESS_CONFIG",
    "CI_RUNNER_RECORD_CASE",
    "CI_RUNNER_RECORD_DEPS",
)


def environment_without_bootstrap() -> dict[str, str]:
    """This process's environment less the runner's child bootstrap and recording: under the
    runner, its ``sitecustomize`` is on ``PYTHONPATH``, and under ``--record-deps`` coverage.py
    loads the recorder's plugin; both are the runner's harness, not a test's import."""
    parts = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    kept = [part for part in parts if part and Path(part).resolve() != CHILD_DIR.resolve()]
    environment = {k: v for k, v in os.environ.items() if k not in RECORDING}
    return {**environment, "PYTHONPATH": os.pathsep.join(kept)}


def closure(graph: DependencyGraph, test: str) -> set[str]:
    reached, pending = {test}, [test]
    while pending:
        for target, _how in graph.edges.get(pending.pop(), ()):
            if target not in reached:
                reached.add(target)
                pending.append(target)
    return reached


@pytest.fixture(scope="module")
def traced() -> dict[str, list[str]]:
    files = cpu_suite_files()
    assert len(files) >= 50
    done = subprocess.run(
        [sys.executable, str(TRACER), str(ROOT), *files],
        cwd=ROOT,
        env=environment_without_bootstrap(),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_every_module_a_cpu_test_imports_is_in_its_static_closure(traced, tmp_path, monkeypatch):
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path))
    config = load_impact_config(load_catalog(ROOT))
    graph = DependencyGraph(config, RepoIndex(ROOT), FactCache(config), traced)
    missing = {}
    for test, imported in traced.items():
        absent = sorted(set(imported) - closure(graph, test))
        if absent:
            missing[test] = absent
    assert not missing, f"imported at run time but outside the static closure: {missing}"
    assert sum(len(modules) for modules in traced.values()) > 5 * len(traced)


def test_the_trace_sees_the_imports_of_a_test(traced):
    assert (
        "ci_runner/impact/graph.py" in traced["registered/ci_runner/test_import_closure_runtime.py"]
    )
    assert "registered/jit/helpers_jit_toolchain.py" in traced["registered/jit/test_precompile.py"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
