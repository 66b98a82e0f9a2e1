"""Case-level retries: a retry runs only the cases that did not pass, shown by counters the test
files keep; scripts keep whole-file retries (a generated tree, one run of the real CLI)."""

import json
import sys
from pathlib import Path

import pytest
from junitparser import JUnitXml

from ci_runner import register_cpu_ci
from ci_runner.maintenance.flaky_report import load_flakes

register_cpu_ci(est_time=6, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from execution_tree import make_tree, pytest_file, run_suite, script_file  # noqa: E402

COUNTER = """
from pathlib import Path


def count(name):
    counter = Path(__file__).with_name(f"{Path(__file__).stem}.{name}.count")
    runs = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(runs))
    return runs
"""


def six_cases(flaky: int, failing: int = 0) -> str:
    """Six test functions; ``flaky`` fails on its first run only, ``failing`` always."""
    body = COUNTER
    for i in range(1, 7):
        body += f"\n\ndef test_{i}():\n    runs = count('{i}')\n"
        if i == flaky:
            body += "    assert runs > 1, 'fails the first time'\n"
        if i == failing:
            body += "    assert False, 'always fails'\n"
    return body


UNITTEST = (
    "import sys\nimport unittest\n\nfrom ci_runner import register_cpu_ci\n\n"
    'register_cpu_ci(est_time=1, suite="cpu-suite")\n'
    + COUNTER
    + """

class TestSix(unittest.TestCase):
    def test_1(self):
        count("1")

    def test_2(self):
        self.assertGreater(count("2"), 1)

    def test_3(self):
        count("3")


if __name__ == "__main__":
    unittest.main()
"""
)
FILES = {
    "test_one_flaky.py": pytest_file(six_cases(flaky=4), est=5),
    "test_flaky_and_failing.py": pytest_file(six_cases(flaky=2, failing=5), est=4),
    "test_unittest.py": UNITTEST,
    "test_script.py": script_file(
        COUNTER + "\n\ndef main():\n    return 0 if count('script') > 1 else 1\n", est=2
    ),
}


@pytest.fixture(scope="module")
def retried(tmp_path_factory):
    root = make_tree(tmp_path_factory.mktemp("retries"), FILES)
    proc = run_suite(
        root, "--continue-on-error", "--enable-retry", "--retry-wait-seconds", "0",
        "--max-attempts", "3", "--junit-xml", str(root / "junit.xml"),
    )  # fmt: skip
    return root, proc


def runs(root: Path, stem: str) -> dict[str, int]:
    return {
        p.name.split(".")[1]: int(p.read_text())
        for p in (root / "registered").glob(f"{stem}.*.count")
    }


def suites(root: Path) -> dict:
    return {
        s.name.removeprefix("registered/"): s for s in JUnitXml.fromfile(str(root / "junit.xml"))
    }


def interim(case) -> list[str]:
    return [child.tag for child in case._elem if child.tag.endswith(("Failure", "Error"))]


def test_a_retry_runs_only_the_flaky_case(retried):
    root, proc = retried
    assert runs(root, "test_one_flaky") == {"1": 1, "2": 1, "3": 1, "4": 2, "5": 1, "6": 1}
    assert "registered/test_one_flaky.py  flaky" in proc.stdout
    cases = {c.name: c for c in suites(root)["test_one_flaky.py"]}
    assert len(cases) == 6 and all(c.is_passed for c in cases.values())
    assert interim(cases["test_4"]) == ["flakyFailure"]
    assert all(interim(cases[f"test_{i}"]) == [] for i in (1, 2, 3, 5, 6))


def test_each_case_is_flaky_or_failing_on_its_own(retried):
    root, proc = retried
    # attempts 2 and 3 run test_5 (always failing); test_2 passed on attempt 2 and stops there
    assert runs(root, "test_flaky_and_failing") == {
        "1": 1, "2": 2, "3": 1, "4": 1, "5": 3, "6": 1,
    }  # fmt: skip
    suite = suites(root)["test_flaky_and_failing.py"]
    cases = {c.name: c for c in suite}
    assert interim(cases["test_2"]) == ["flakyFailure"]
    assert interim(cases["test_5"]) == ["rerunFailure", "rerunFailure"]
    assert not cases["test_5"].is_passed and cases["test_2"].is_passed
    props = {p.name: p.value for p in suite.properties()}
    assert props["status"] == "failed" and props["attempts"] == "3"
    assert proc.returncode == 1


def test_flaky_report_reads_the_per_case_flakes_of_the_report(retried):
    root, _ = retried
    data = load_flakes([root / "junit.xml"])
    flaky = {name: t.row()["flake_rate"] for name, t in data.cases.items() if t.flaky}
    assert flaky == {
        "registered/test_one_flaky.py::test_4": 1.0,
        "registered/test_flaky_and_failing.py::test_2": 1.0,
        "registered/test_unittest.py::TestSix::test_2": 1.0,
    }
    assert data.cases["registered/test_flaky_and_failing.py::test_5"].failed == 1


def test_unittest_cases_are_retried_by_name(retried):
    root, _ = retried
    assert runs(root, "test_unittest") == {"1": 1, "2": 2, "3": 1}
    props = {p.name: p.value for p in suites(root)["test_unittest.py"].properties()}
    assert props["status"] == "flaky"


def test_a_script_is_retried_whole(retried):
    root, proc = retried
    assert runs(root, "test_script") == {"script": 2}
    assert "registered/test_script.py  flaky" in proc.stdout


def test_only_the_named_cases_run_with_tests(tmp_path):
    root = make_tree(tmp_path, {"test_one_flaky.py": pytest_file(six_cases(flaky=0))})
    proc = run_suite(
        root, "--tests", "registered/test_one_flaky.py::test_2",
        "registered/test_one_flaky.py::test_5", "--timings-out", str(root / "t.jsonl"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert runs(root, "test_one_flaky") == {"2": 1, "5": 1}
    assert proc.stdout.rstrip().splitlines()[-1] == "summary: 2 passed, 0 failed, 0 skipped"
    typo = run_suite(root, "--tests", "registered/test_one_flaky.py::test_9")
    assert typo.returncode == 1
    line = next(x for x in typo.stdout.splitlines() if x.startswith("  registered/test_one"))
    assert "none of the 1 case(s) asked for ran" in line and "check the node ids" in line
    row = json.loads((root / "t.jsonl").read_text())
    assert row["status"] == "passed"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
