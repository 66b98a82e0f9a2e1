"""Test cases named everywhere, through the real CLI on generated trees: a hanging case, a
crashing case, a flaky case, a plain script, a pytest file without ``__main__`` (the pytest
launcher), a file that collects no test, unittest files with passing, failing and all-skipped
cases; the exact annotation and JUnit shapes; both policies' handling of ``no_tests``."""

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=20, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from execution_tree import FLAKY_CASE, pytest_file, run_suite, script_file  # noqa: E402
from junit_schema import schema_problems  # noqa: E402

from testing.tree_builder import catalog_toml, suite_toml, write_tree  # noqa: E402

HANG = pytest_file(
    "import time\n\n\ndef test_quick():\n    pass\n\n\ndef test_hangs():\n    time.sleep(600)\n",
    est=5,
)
CRASH = pytest_file(
    "import ctypes\n\n\ndef test_before():\n    pass\n\n\n"
    "def test_crash():\n    ctypes.string_at(0)\n",
    est=4,
)
FLAKY = pytest_file(
    "from pathlib import Path\n\n\ndef test_steady():\n    pass\n\n" + FLAKY_CASE, est=3
)
UNITTEST_HEAD = "import sys\nimport unittest\n\nfrom ci_runner import register_cpu_ci\n\n"
UNIT_MIXED = (
    UNITTEST_HEAD + 'register_cpu_ci(est_time=2, suite="cpu-suite")\n\n\n'
    "class TestMixed(unittest.TestCase):\n"
    "    def test_ok(self):\n        pass\n\n"
    "    def test_bad(self):\n        self.assertEqual(1, 2)\n\n"
    "    @unittest.skip('later')\n    def test_later(self):\n        pass\n\n\n"
    'if __name__ == "__main__":\n    unittest.main()\n'
)
UNIT_SKIPPED = (
    UNITTEST_HEAD + 'register_cpu_ci(est_time=2, suite="cpu-suite")\n\n\n'
    "@unittest.skip('needs a GPU')\nclass TestGpu(unittest.TestCase):\n"
    + "".join(f"    def test_{i}(self):\n        pass\n\n" for i in range(3))
    + '\nif __name__ == "__main__":\n    unittest.main()\n'
)
ZERO = pytest_file("def tst_misnamed():\n    pass\n", est=1).replace(
    'sys.exit(pytest.main([__file__, "-q"]))', 'sys.exit(pytest.main([__file__, "-q"]) % 5)'
)
NO_MAIN = (
    "from ci_runner import register_cpu_ci\n\n"
    'register_cpu_ci(est_time=1, suite="pytest-suite")\n\n\n'
    "def test_one():\n    pass\n\n\ndef test_two():\n    pass\n"
)
MODULE_SKIP = (
    "import pytest\n\nfrom ci_runner import register_cpu_ci\n\n"
    'register_cpu_ci(est_time=1, suite="pytest-suite")\n'
    'pytest.skip("needs a GPU", allow_module_level=True)\n\n\n'
    "def test_never():\n    pass\n"
)
SCRIPT = script_file("def main():\n    print('plain script')\n    return 0\n", est=1)

CATALOG = catalog_toml(
    suite_toml("cpu-suite", "cpu", gpus_per_file=0, timeout_per_file=60),
    suite_toml("pytest-suite", "cpu", gpus_per_file=0, timeout_per_file=60, launcher="pytest"),
    registered_dir="registered",
)
GITHUB = {
    "GITHUB_ACTIONS": "true",
    "GITHUB_SERVER_URL": "https://github.com",
    "GITHUB_REPOSITORY": "acme/kernels",
    "GITHUB_SHA": "0123abc",
    "GITHUB_RUN_ID": "77",
    "GITHUB_RUN_ATTEMPT": "2",
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    files = {
        "test_hang_case.py": HANG,
        "test_crash_case.py": CRASH,
        "test_flaky_case.py": FLAKY,
        "test_unit_mixed.py": UNIT_MIXED,
        "test_unit_skipped.py": UNIT_SKIPPED,
        "test_zero.py": ZERO,
        "test_no_main.py": NO_MAIN,
        "test_module_skip.py": MODULE_SKIP,
        "test_script.py": SCRIPT,
    }
    root = write_tree(tmp_path_factory.mktemp("cases"), CATALOG, files, under="registered")
    out = root / "out"
    out.mkdir()
    proc = run_suite(
        root, "--continue-on-error", "--timeout-per-file", "3", "--kill-grace-seconds", "0.5",
        "--enable-retry", "--retry-wait-seconds", "0", "--junit-xml", str(out / "junit.xml"),
        "--timings-out", str(out / "timings.jsonl"), suite="cpu-suite,pytest-suite",
        env={**GITHUB, "GITHUB_STEP_SUMMARY": str(out / "summary.md"), "GITHUB_WORKSPACE": str(root)},
    )  # fmt: skip
    timings = {
        json.loads(line)["path"].removeprefix("registered/"): json.loads(line)
        for line in (out / "timings.jsonl").read_text().splitlines()
    }
    return proc, timings, out


def test_statuses_and_case_counts(run):
    proc, timings, _ = run
    assert {name: row["status"] for name, row in timings.items()} == {
        "test_hang_case.py": "timeout",
        "test_crash_case.py": "crashed",
        "test_flaky_case.py": "flaky",
        "test_unit_mixed.py": "failed",
        "test_unit_skipped.py": "passed",
        "test_zero.py": "no_tests",
        "test_no_main.py": "passed",
        "test_module_skip.py": "passed",  # pytest exits 5, but it reported the module's skip
        "test_script.py": "passed",
    }
    assert proc.returncode == 1
    # passed: quick, before, steady + lucky, ok, one + two, script = 8; failed: hangs, crash,
    # bad, zero's own case = 4; skipped: later + 3 of the skipped class + the skipped module = 5.
    assert proc.stdout.rstrip().splitlines()[-1] == "summary: 8 passed, 4 failed, 5 skipped"


def test_the_case_that_hung_carries_the_timeout_and_its_stacks(run):
    proc, timings, out = run
    assert timings["test_hang_case.py"]["reason"] == (
        "timed out after 3s limit while running registered/test_hang_case.py::test_hangs"
    )
    assert (
        "----- Python stacks of registered/test_hang_case.py before the kill (attempt 1: "
        "timeout; running registered/test_hang_case.py::test_hangs) -----" in proc.stdout
    )
    suite = _testsuite(out, "registered/test_hang_case.py")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert set(cases) == {"test_quick", "test_hangs"}
    error = cases["test_hangs"].find("error")
    assert error.get("type") == "timeout"
    assert error.get("message") == "timed out after 3s limit while running this case"
    assert "===== stacks before the kill =====" in error.text
    assert "in test_hangs" in error.text
    assert cases["test_quick"].find("error") is None


def test_the_crashing_case_is_named(run):
    _, timings, out = run
    assert timings["test_crash_case.py"]["reason"].startswith(
        "killed by SIGSEGV while running registered/test_crash_case.py::test_crash"
    )
    cases = {
        c.get("name"): c for c in _testsuite(out, "registered/test_crash_case.py").iter("testcase")
    }
    assert cases["test_crash"].find("error").get("type") == "crashed"
    assert len(cases["test_crash"].findall("rerunError")) == 1  # attempt 1 crashed there too


def test_annotation_shapes(run):
    proc, _, _ = run
    annotations = [line for line in proc.stdout.splitlines() if line.startswith("::")]
    hang_line = _line_of("registered/test_hang_case.py", "def test_hangs")
    assert (
        f"::error file=registered/test_hang_case.py,line={hang_line},title=registered/"
        "test_hang_case.py%3A%3Atest_hangs::timeout: timed out after 3s limit while running "
        "this case"
    ) in annotations
    bad_line = _line_of("registered/test_unit_mixed.py", "def test_bad")
    assert (
        f"::error file=registered/test_unit_mixed.py,line={bad_line},title=registered/"
        "test_unit_mixed.py%3A%3ATestMixed%3A%3Atest_bad::failed: AssertionError: 1 != 2"
    ) in annotations
    assert (
        "::error file=registered/test_zero.py,title=registered/test_zero.py::no_tests: pytest "
        "ran no test case (collected 0, exit 0)"
    ) in annotations
    lucky = _line_of("registered/test_flaky_case.py", "def test_second_time_lucky")
    assert (
        f"::warning file=registered/test_flaky_case.py,line={lucky},title=registered/"
        "test_flaky_case.py%3A%3Atest_second_time_lucky::flaky: failed, then passed on attempt "
        "2: AssertionError: fails on the first attempt only"
    ) in annotations
    assert len(annotations) == 5  # 4 failing cases and 1 flaky: under the bound of 10 each


def test_junit_flaky_shape_and_schema(run):
    _, _, out = run
    assert schema_problems(out / "junit.xml") == []
    suite = _testsuite(out, "registered/test_flaky_case.py")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    lucky = cases["test_second_time_lucky"]
    assert lucky.get("file") == "registered/test_flaky_case.py"
    assert lucky.get("line") == str(_line_of("registered/test_flaky_case.py", "def test_second"))
    assert [child.tag for child in lucky] == ["system-out", "flakyFailure"]
    assert lucky.find("system-out").text == (
        "flaky: failed: AssertionError: fails on the first attempt only; passed on attempt 2"
    )
    flaky = lucky.find("flakyFailure")
    assert flaky.get("message") == "AssertionError: fails on the first attempt only"
    assert "assert not first" in flaky.find("stackTrace").text
    assert list(cases["test_steady"]) == []  # passed both times: a plain pass


def test_console_names_failing_cases(run):
    proc, _, _ = run
    failed = proc.stdout.split("\nfailed:\n", 1)[1].split("\nflaky:\n", 1)[0].splitlines()
    assert failed == [
        "  registered/test_hang_case.py::test_hangs [timeout]: timed out after 3s limit while "
        "running this case",
        "  registered/test_crash_case.py::test_crash [crashed]: killed by SIGSEGV while running "
        "this case",
        "  registered/test_unit_mixed.py::TestMixed::test_bad [failed]: AssertionError: 1 != 2",
        "  registered/test_zero.py [no_tests]: pytest ran no test case (collected 0, exit 0)",
    ]
    assert "[1/9] start registered/test_hang_case.py (est 5s)" in proc.stdout
    assert "start registered/test_flaky_case.py (est 3s) attempt 2/2" in proc.stdout


def test_step_summary_lists_failures_first_with_links(run):
    _, _, out = run
    text = (out / "summary.md").read_text()
    assert text.index("### Failures (4)") < text.index("### Flaky (1)") < text.index("### Files")
    line = _line_of("registered/test_unit_mixed.py", "def test_bad")
    assert (
        "| [`registered/test_unit_mixed.py::TestMixed::test_bad`](https://github.com/acme/kernels/"
        f"blob/0123abc/registered/test_unit_mixed.py#L{line}) | ❌ failed | AssertionError: 1 != 2 |"
    ) in text
    assert (
        "- job log: [this run's jobs](https://github.com/acme/kernels/actions/runs/77/attempts/2)"
        in text
    )
    assert "attempt 1: Python stacks before the kill" in text


def _testsuite(out: Path, name: str) -> ET.Element:
    root = ET.parse(out / "junit.xml").getroot()
    return next(s for s in root.iter("testsuite") if s.get("name") == name)


def _line_of(path: str, text: str) -> int:
    source = {"registered/test_hang_case.py": HANG, "registered/test_unit_mixed.py": UNIT_MIXED,
              "registered/test_flaky_case.py": FLAKY}[path]  # fmt: skip
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


COMPATIBLE = CATALOG + '\n[tool.ci-runner.policy]\nstrict-checks = "warning"\n'
MAIN_PASS = (
    NO_MAIN.replace("pytest-suite", "cpu-suite") + '\n\nif __name__ == "__main__":\n    pass\n'
)
EXIT5 = pytest_file("HELPER = 1\n", est=1)


def test_the_compatible_policy_keeps_exit_0_but_flags_no_tests_everywhere(tmp_path):
    files = {"test_zero.py": ZERO, "test_main_pass.py": MAIN_PASS, "test_exit5.py": EXIT5}
    root = write_tree(tmp_path, COMPATIBLE, files, under="registered")
    proc = run_suite(
        root, "--continue-on-error", "--junit-xml", str(tmp_path / "j.xml"),
        "--timings-out", str(tmp_path / "t.jsonl"),
        env={**GITHUB, "GITHUB_STEP_SUMMARY": str(tmp_path / "s.md")},
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout  # only the file that exited 5 fails
    rows = {
        json.loads(x)["path"]: json.loads(x)
        for x in (tmp_path / "t.jsonl").read_text().splitlines()
    }
    assert {p: r["status"] for p, r in rows.items()} == dict.fromkeys(
        ["registered/test_zero.py", "registered/test_main_pass.py", "registered/test_exit5.py"],
        "no_tests",
    )
    kept = "not failing: the policy's strict-checks = \"warning\" keeps the file's exit status 0"
    assert rows["registered/test_main_pass.py"]["tolerated"] == kept
    assert "tolerated" not in rows["registered/test_exit5.py"]
    assert rows["registered/test_main_pass.py"]["reason"].startswith(
        "defines 2 test(s) (test_one, test_two) but ran none (exit 0)"
    )
    failed = proc.stdout.split("\nfailed:\n", 1)[1].split("\nran no tests (not failing):\n")
    assert failed[0].splitlines() == [
        "  registered/test_exit5.py [no_tests]: pytest ran no test case (collected 0, exit 5)"
    ]
    assert sorted(failed[1].splitlines()[:2]) == [
        "  registered/test_main_pass.py [no_tests]: defines 2 test(s) (test_one, test_two) but "
        'ran none (exit 0): run it with launcher = "pytest", or end it with a __main__ block that '
        f"runs them ({kept})",
        "  registered/test_zero.py [no_tests]: pytest ran no test case (collected 0, exit 0) "
        f"({kept})",
    ]
    assert proc.stdout.rstrip().splitlines()[-1] == "summary: 0 passed, 1 failed, 2 skipped"
    assert (
        "::warning file=registered/test_zero.py,title=registered/test_zero.py%3A ran no tests::"
        in proc.stdout
    )
    suite = next(
        s
        for s in ET.parse(tmp_path / "j.xml").getroot()
        if s.get("name") == "registered/test_zero.py"
    )
    (case,) = suite.iter("testcase")
    assert case.find("skipped").get("message") == "pytest ran no test case (collected 0, exit 0)"
    assert "### Ran no tests (2)" in (tmp_path / "s.md").read_text()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
