"""Crash resume: a file whose third of six cases kills its process (os.abort, SIGSEGV, os._exit, a
lost CUDA context) reports that case as crashed and the other five as passed, each run once
(counters the test files keep; a generated tree, one run of the real CLI)."""

import sys
from pathlib import Path

import pytest
from junitparser import Error, JUnitXml

from ci_runner import register_cpu_ci
from ci_runner.execution.case_record import CaseRecord, RecordedCase
from ci_runner.execution.case_resume import RESUME_LIMIT, CrashResume
from ci_runner.execution.case_selection import CaseSelection
from ci_runner.model import CRASHED, AttemptResult

register_cpu_ci(est_time=8, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from execution_tree import make_tree, pytest_file, run_suite  # noqa: E402
from test_case_retries import COUNTER  # noqa: E402

CRASHES = {
    "abort": "import os\n    os.abort()",
    "segv": "import ctypes\n    ctypes.string_at(0)",
    "exit": "import os\n    os._exit(3)",
}
# A torch stand-in whose CUDA context is lost once case 3 ran: what a kernel's illegal memory
# access does (the GPU verification uses a real one: verification/verify_crash_resume.py).
FAKE_TORCH = """
import types

torch = types.ModuleType("torch")
torch.cuda = types.SimpleNamespace(lost=False, is_initialized=lambda: True)


def _synchronize():
    if torch.cuda.lost:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")


torch.cuda.synchronize = _synchronize
sys.modules["torch"] = torch
"""


def six_cases(crash: str) -> str:
    body = COUNTER
    for i in range(1, 7):
        body += f"\n\ndef test_{i}():\n    count('{i}')\n"
        if i == 3:
            body += f"    {crash}\n"
    return body


FILES = {
    **{f"test_{kind}.py": pytest_file(six_cases(crash)) for kind, crash in CRASHES.items()},
    "test_cuda_lost.py": pytest_file(FAKE_TORCH + six_cases("torch.cuda.lost = True")),
    "test_unittest_abort.py": (
        "import os\nimport sys\nimport unittest\n\nfrom ci_runner import register_cpu_ci\n\n"
        'register_cpu_ci(est_time=1, suite="cpu-suite")\n'
        + COUNTER
        + "\n\nclass TestSix(unittest.TestCase):\n"
        + "".join(
            f"    def test_{i}(self):\n        count('{i}')\n"
            + ("        os.abort()\n" if i == 3 else "")
            for i in range(1, 7)
        )
        + '\n\nif __name__ == "__main__":\n    unittest.main()\n'
    ),
}


@pytest.fixture(scope="module")
def crashed(tmp_path_factory):
    root = make_tree(tmp_path_factory.mktemp("crashes"), FILES)
    proc = run_suite(root, "--continue-on-error", "--junit-xml", str(root / "junit.xml"))
    return root, proc


@pytest.mark.parametrize(
    "stem", [*(f"test_{k}" for k in CRASHES), "test_cuda_lost", "test_unittest_abort"]
)
def test_the_culprit_is_crashed_and_the_other_five_passed(crashed, stem):
    root, proc = crashed
    counts = {
        p.name.split(".")[1]: int(p.read_text())
        for p in (root / "registered").glob(f"{stem}.*.count")
    }
    assert counts == {str(i): 1 for i in range(1, 7)}, proc.stdout
    (suite,) = [
        s for s in JUnitXml.fromfile(str(root / "junit.xml")) if s.name.endswith(f"/{stem}.py")
    ]
    props = {p.name: p.value for p in suite.properties()}
    assert props["status"] == "failed"
    assert "3 case(s) not run yet then ran in 1 fresh process(es)" in props["reason"]
    assert "test_3" in props["reason"]
    outcomes = {}
    for case in suite:
        results = [r for r in case.result if isinstance(r, Error)]
        outcomes[case.name] = results[0].type if results else ("passed" if case.is_passed else "?")
    assert outcomes == {**{f"test_{i}": "passed" for i in (1, 2, 4, 5, 6)}, "test_3": "crashed"}


def test_each_crash_is_named_with_its_cause(crashed):
    _, proc = crashed
    failed = proc.stdout.split("\nfailed:\n")[1]
    assert (
        "registered/test_abort.py::test_3 [failed]: killed by SIGABRT while running this case"
        in failed
    )
    assert (
        "registered/test_segv.py::test_3 [failed]: killed by SIGSEGV while running this case"
        in failed
    )
    assert (
        "registered/test_exit.py::test_3 [failed]: exited with code 3 while running this case"
        in failed
    )
    assert (
        "registered/test_cuda_lost.py::test_3 [failed]: the CUDA context was lost: RuntimeError: "
        "CUDA error: an illegal memory access was encountered after this case ran"
    ) in failed
    assert proc.stdout.rstrip().splitlines()[-1] == "summary: 25 passed, 5 failed, 0 skipped"
    assert (
        "(resumed after a crash in registered/test_segv.py::test_3: the cases not run yet)"
        in proc.stdout
    )


def _attempt(log: Path) -> AttemptResult:
    log.write_text("output\n")
    return AttemptResult(
        1, CRASHED, 0.1, None, "killed by SIGABRT", True, (), True, str(log), 7, "", False, 60.0
    )


def _record(crashed_id: str, done: list[str], collected: list[str] | None = None) -> CaseRecord:
    cases = [RecordedCase(id=i, outcome="passed") for i in done] + [RecordedCase(id=crashed_id)]
    return CaseRecord(
        runners=("pytest",), cases=cases, collected=None if collected is None else tuple(collected)
    )


def test_resuming_stops_after_its_bound_and_names_what_never_ran(tmp_path):
    ids = [f"r/test_x.py::test_{i}" for i in range(RESUME_LIMIT + 3)]
    resume = CrashResume(CaseSelection(), _attempt(tmp_path / "0.log"), _record(ids[0], [], ids))
    for number in range(1, RESUME_LIMIT + 1):
        left = resume.next_selection(60, interrupted=False)
        assert left is not None and set(ids[:number]) <= left.skip
        resume.add(_attempt(tmp_path / f"{number}.log"), _record(ids[number], []))
    assert resume.next_selection(60, interrupted=False) is None
    assert resume.stopped == f"{RESUME_LIMIT} fresh processes after crashes were spent"
    merged = resume.merged("r/test_x.py")
    assert [c.case_id for c in merged.cases if c.outcome == "skipped"] == ids[RESUME_LIMIT + 1 :]
    assert "no more fresh processes: 10 fresh processes after crashes were spent" in merged.reason
    assert (tmp_path / "0.log").read_text().count("output") == RESUME_LIMIT + 1
    assert not (tmp_path / "1.log").exists()


@pytest.mark.parametrize(
    "seconds_left, interrupted, stopped",
    [(0, False, "the attempt's time limit was spent"), (30, True, "the run was interrupted")],
)
def test_no_fresh_process_without_time_or_after_an_interruption(
    tmp_path, seconds_left, interrupted, stopped
):
    ids = ["r/test_x.py::test_1", "r/test_x.py::test_2"]
    resume = CrashResume(CaseSelection(), _attempt(tmp_path / "a.log"), _record(ids[0], [], ids))
    assert resume.next_selection(seconds_left, interrupted) is None
    assert resume.stopped == stopped


def test_nothing_left_to_run_is_no_resume(tmp_path):
    ids = ["r/test_x.py::test_1", "r/test_x.py::test_2"]
    resume = CrashResume(
        CaseSelection(), _attempt(tmp_path / "a.log"), _record(ids[1], [ids[0]], ids)
    )
    assert resume.next_selection(60, interrupted=False) is None
    assert resume.stopped == ""


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
