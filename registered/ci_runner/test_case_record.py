"""The child bootstrap on its own: what the case record holds for unittest and pytest runs
however they are started, the stack dumps it makes ready, and the sitecustomize it shadows.

Each test runs generated files in a fresh interpreter with the variables the runner sets
(``CI_RUNNER_CASE_RECORD`` and friends, the bootstrap first on ``PYTHONPATH``), then reads the
record with the runner's own reader.
"""

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from ci_runner import register_cpu_ci
from ci_runner.execution.case_record import read_record, running_case
from ci_runner.execution.child import CHILD_DIR
from ci_runner.execution.stacks import catches_signal, dump_stacks

register_cpu_ci(est_time=12, suite="base-a-test-cpu")

REPO = Path(__file__).resolve().parents[2]


def run(tmp_path, argv, extra_path=(), check=True, **env):
    """Run ``argv`` in ``tmp_path`` as a file's process is run; return (process, record)."""
    record = tmp_path / "run.cases"
    record.unlink(missing_ok=True)
    (tmp_path / "stacks").mkdir(exist_ok=True)
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "CI_RUNNER_"))}
    environ.update(
        PYTHONPATH=os.pathsep.join([str(CHILD_DIR), str(REPO), *map(str, extra_path)]),
        CI_RUNNER_CASE_RECORD=str(record),
        CI_RUNNER_CASE_ROOT=str(tmp_path),
        CI_RUNNER_CASE_DEPTH="0",
        CI_RUNNER_STACK_PREFIX=str(tmp_path / "stacks" / "dump."),
        PYTEST_ADDOPTS="-p no:cacheprovider -p ci_runner_pytest_plugin",
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
        **env,
    )
    done = subprocess.run(
        [sys.executable, *argv], cwd=tmp_path, env=environ, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    if check:
        assert done.returncode in (0, 1), done.stdout + done.stderr
    return done, read_record(record)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def outcomes(record):
    return {case.id: (case.outcome, case.detail) for case in record.cases}


UNITTEST_FILE = """
    import unittest


    class Basic(unittest.TestCase):
        def test_pass(self):
            pass

        def test_fail(self):
            self.assertEqual(1, 2)

        def test_error(self):
            raise ValueError("boom")

        @unittest.skip("not today")
        def test_skip(self):
            pass

        @unittest.expectedFailure
        def test_expected(self):
            self.assertEqual(1, 2)

        @unittest.expectedFailure
        def test_unexpected(self):
            pass

        def test_subtests(self):
            for i in range(3):
                with self.subTest(i=i):
                    self.assertLess(i, 2)


    @unittest.skip("whole class")
    class Skipped(unittest.TestCase):
        def test_a(self):
            pass

        def test_b(self):
            pass


    class BadFixture(unittest.TestCase):
        @classmethod
        def setUpClass(cls):
            raise RuntimeError("fixture broke")

        def test_never_runs(self):
            pass


    if __name__ == "__main__":
        unittest.main()
"""

UNITTEST_EXPECTED = {
    "test_u.py::Basic::test_pass": ("passed", ""),
    "test_u.py::Basic::test_fail": ("failed", ""),
    "test_u.py::Basic::test_error": ("error", ""),
    "test_u.py::Basic::test_skip": ("skipped", ""),
    "test_u.py::Basic::test_expected": ("skipped", "xfail"),
    "test_u.py::Basic::test_unexpected": ("failed", "xpass"),
    "test_u.py::Basic::test_subtests": ("failed", "subtest"),
    "test_u.py::Skipped::test_a": ("skipped", ""),
    "test_u.py::Skipped::test_b": ("skipped", ""),
    "test_u.py::BadFixture::setUpClass": ("error", ""),
}


@pytest.mark.parametrize("argv", [["test_u.py"], ["-m", "unittest", "test_u"]])
def test_unittest_cases_are_recorded_however_unittest_is_started(tmp_path, argv):
    write(tmp_path, "test_u.py", UNITTEST_FILE)
    done, record = run(tmp_path, argv)
    assert "Ran 9 tests" in done.stderr  # unittest's own count: the fixture error is extra
    assert record.runners == ("unittest",)
    assert outcomes(record) == UNITTEST_EXPECTED
    by_id = {case.id: case for case in record.cases}
    assert by_id["test_u.py::Basic::test_fail"].message == "AssertionError: 1 != 2"
    assert "Traceback" in by_id["test_u.py::Basic::test_fail"].text
    assert by_id["test_u.py::Basic::test_pass"].line == 6
    assert by_id["test_u.py::Basic::test_subtests"].message.startswith("(i=2) AssertionError")
    assert by_id["test_u.py::BadFixture::setUpClass"].message == "RuntimeError: fixture broke"


CUSTOM_FILE = """
    import sys
    import unittest


    class CustomTestCase(unittest.TestCase):
        '''Like SGLang's: wraps setUpClass, retries the test method, prints in setUp.'''

        def __init_subclass__(cls, **kwargs):
            super().__init_subclass__(**kwargs)
            setup = cls.setUpClass.__func__

            def safe(klass):
                setup(klass)

            cls.setUpClass = classmethod(safe)

        def _callTestMethod(self, method):
            for attempt in range(2):
                try:
                    return super()._callTestMethod(method)
                except AssertionError:
                    if attempt:
                        raise

        def setUp(self):
            print(f"[CI Test Method] {self.__class__.__name__}.{self._testMethodName}")


    class TestThing(CustomTestCase):
        def test_one(self):
            pass

        def test_two(self):
            self.fail("always")


    class Result(unittest.TextTestResult):
        def addSuccess(self, test):
            super().addSuccess(test)


    if __name__ == "__main__":
        runner = unittest.TextTestRunner(resultclass=Result)
        sys.exit(not unittest.main(testRunner=runner, exit=False).result.wasSuccessful())
"""


def test_a_projects_own_test_case_and_result_classes_are_counted(tmp_path):
    write(tmp_path, "sub/test_custom.py", CUSTOM_FILE)
    _, record = run(tmp_path, ["sub/test_custom.py"])
    assert outcomes(record) == {
        "sub/test_custom.py::TestThing::test_one": ("passed", ""),
        "sub/test_custom.py::TestThing::test_two": ("failed", ""),
    }


def test_pytest_running_unittest_classes_counts_each_case_once(tmp_path):
    write(tmp_path, "test_u.py", UNITTEST_FILE)
    _, record = run(tmp_path, ["-m", "pytest", "-q", "test_u.py"])
    assert record.runners == ("pytest",)  # the unittest hook stood down
    ids = [case.id for case in record.cases]
    assert len(ids) == len(set(ids)) == 10  # 7 + 2, and pytest errors BadFixture's one test
    assert outcomes(record)["test_u.py::Basic::test_pass"] == ("passed", "")


PYTEST_FILE = """
    import pytest


    @pytest.fixture
    def broken_teardown():
        yield
        raise RuntimeError("teardown broke")


    @pytest.mark.parametrize("n", [1, 2])
    def test_param(n):
        assert n == 1, f"n is {n}"


    class TestGroup:
        def test_method(self):
            pass


    @pytest.mark.xfail(reason="known")
    def test_xfail():
        assert False


    @pytest.mark.xfail(reason="fixed")
    def test_xpass():
        pass


    def test_teardown(broken_teardown):
        pass


    @pytest.fixture
    def broken_setup():
        raise RuntimeError("setup broke")


    def test_setup(broken_setup):
        pass


    def test_skip():
        pytest.skip("not here")
"""


def test_pytest_cases_outcomes_lines_and_collection(tmp_path):
    write(tmp_path, "tests/test_p.py", PYTEST_FILE)
    write(tmp_path, "tests/test_broken.py", "import missing_module_xyz\n")
    done, record = run(tmp_path, ["-m", "pytest", "-q", "tests"], check=False)
    assert done.returncode == 2
    assert outcomes(record) == {
        "tests/test_broken.py": ("error", "collection"),
    }
    assert record.collection_errors == 1 and record.exitstatus == 2
    _, record = run(tmp_path, ["-m", "pytest", "-q", "tests/test_p.py"])
    assert outcomes(record) == {
        "tests/test_p.py::test_param[1]": ("passed", ""),
        "tests/test_p.py::test_param[2]": ("failed", ""),
        "tests/test_p.py::TestGroup::test_method": ("passed", ""),
        "tests/test_p.py::test_xfail": ("skipped", "xfail"),
        "tests/test_p.py::test_xpass": ("passed", "xpass"),
        "tests/test_p.py::test_teardown": ("error", ""),
        "tests/test_p.py::test_setup": ("error", ""),
        "tests/test_p.py::test_skip": ("skipped", ""),
    }
    by_id = {case.id: case for case in record.cases}
    assert by_id["tests/test_p.py::test_param[2]"].message == "AssertionError: n is 2"
    assert by_id["tests/test_p.py::TestGroup::test_method"].line == 17
    assert by_id["tests/test_p.py::test_skip"].message == "not here"
    assert record.collected == tuple(by_id)
    assert record.exitstatus == 1


NESTED = """
    import subprocess
    import sys


    def test_outer():
        inner = subprocess.run([sys.executable, "-m", "pytest", "-q", "inner_check.py"])
        assert inner.returncode == 0
"""


def test_a_test_that_runs_pytest_in_a_subprocess_adds_no_cases(tmp_path):
    write(tmp_path, "test_outer.py", NESTED)
    write(tmp_path, "inner_check.py", "def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    _, record = run(tmp_path, ["-m", "pytest", "-q", "test_outer.py"])
    assert outcomes(record) == {"test_outer.py::test_outer": ("passed", "")}
    text = (tmp_path / "run.cases").read_text()
    assert '"depth": 1' in text  # the inner session wrote, one level down, and is not counted


def test_the_shadowed_sitecustomize_still_runs(tmp_path):
    write(tmp_path, "theirs/sitecustomize.py", "import os\nos.environ['THEIRS_RAN'] = 'yes'\n")
    code = "import os, sys; print(os.environ.get('THEIRS_RAN'), 'sitecustomize' in sys.modules)"
    done, _ = run(tmp_path, ["-c", code], extra_path=[tmp_path / "theirs"])
    assert done.stdout.split() == ["yes", "True"]
    write(tmp_path, "broken/sitecustomize.py", "raise RuntimeError('their bug')\n")
    done, _ = run(tmp_path, ["-c", "print('still runs')"], extra_path=[tmp_path / "broken"])
    assert done.stdout.strip() == "still runs"
    assert "Error in sitecustomize; set PYTHONVERBOSE for traceback:" in done.stderr
    assert "RuntimeError: their bug" in done.stderr


HANGS = """
    import multiprocessing
    import os
    import sys
    import threading
    import time


    def sleeper():
        time.sleep(600)


    if __name__ == "__main__":
        threading.Thread(target=sleeper, name="helper", daemon=True).start()
        child = multiprocessing.get_context("fork").Process(target=sleeper)
        child.start()
        pid = os.fork()
        if pid == 0:  # a Python process that becomes another program
            os.execvp("sleep", ["sleep", "600"])
        while open(f"/proc/{pid}/comm").read().strip() != "sleep":
            time.sleep(0.01)
        print("ready", flush=True)
        time.sleep(600)
"""


def test_stacks_of_every_python_process_and_no_signal_for_the_others(tmp_path):
    write(tmp_path, "hangs.py", HANGS)
    environ = {**os.environ, "PYTHONPATH": f"{CHILD_DIR}{os.pathsep}{REPO}"}
    environ.update(
        CI_RUNNER_CASE_RECORD=str(tmp_path / "r"), CI_RUNNER_STACK_PREFIX=f"{tmp_path}/d."
    )
    proc = subprocess.Popen(
        [sys.executable, "hangs.py"], cwd=tmp_path, env=environ, stdout=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stdout.readline() == b"ready\n"
        root = psutil.Process(proc.pid)
        tree = [root, *root.children(recursive=True)]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not all(
            p.name() == "sleep" or catches_signal(p.pid, signal.SIGUSR2) for p in tree
        ):
            time.sleep(0.05)
        sleeper = next(p for p in tree if p.name() == "sleep")
        assert not catches_signal(sleeper.pid, signal.SIGUSR2)
        stacks, omitted = dump_stacks(tree, lambda pid: tmp_path / f"d.{pid}", proc.pid)
        assert omitted == 0
        assert [s.pid for s in stacks] == [proc.pid, stacks[1].pid]  # root first, forked child
        # the main thread is past the print of "ready" (line 22) or asleep (line 23)
        assert re.search(r"line 2[23] in <module>", stacks[0].text), stacks[0].text
        assert "in sleeper" in stacks[0].text
        assert "in sleeper" in stacks[1].text and "multiprocessing" in stacks[1].text
        assert stacks[0].command.endswith("hangs.py")
        assert sleeper.is_running()  # the exec'ed process got no signal, so it lives
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_the_reader_flags_bad_lines_and_finds_the_running_case(tmp_path):
    path = tmp_path / "r.cases"
    lines = [
        '{"event": "session", "runner": "pytest", "pid": 5, "depth": 0}',
        '{"event": "start", "id": "a.py::t1", "file": "a.py", "line": 3, "pid": 5, "depth": 0}',
        '{"event": "end", "id": "a.py::t1", "outcome": "passed", "pid": 5, "depth": 0}',
        '{"event": "start", "id": "a.py::t2", "file": "a.py", "line": 9, "pid": 5, "depth": 0}',
    ]
    path.write_text("\n".join(lines) + "\n" + '{"event": "end", "id": "a.py::t2", "outc')
    record = read_record(path)
    assert [(c.id, c.outcome) for c in record.running] == [("a.py::t2", None)]
    assert record.problem == ""  # a last line cut short is ignored
    assert running_case(path) == "a.py::t2"
    path.write_text(
        "\n".join([lines[0], "[1, 2]", lines[1], '{"event": "start", "pid": 5, "depth": 0}']) + "\n"
    )
    assert read_record(path).problem == "line 2: not an object with an 'event'"
    assert read_record(tmp_path / "absent").cases == []


def test_nothing_is_recorded_or_changed_without_the_runners_variables(tmp_path):
    write(tmp_path, "test_u.py", UNITTEST_FILE)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CI_RUNNER_")}
    environ["PYTHONPATH"] = str(CHILD_DIR)
    code = "import os, unittest; print(os.environ.get('CI_RUNNER_CASE_DEPTH'))"
    done = subprocess.run(
        [sys.executable, "-c", code], env=environ, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "None"
    assert list(tmp_path.iterdir()) == [tmp_path / "test_u.py"]


def test_the_bootstrap_reads_the_variables_the_record_module_defines():
    from ci_runner.execution.child import ci_runner_case_record as record

    source = (CHILD_DIR / "sitecustomize.py").read_text()
    for name in ("RECORD_VARIABLE", "DEPTH_VARIABLE", "STACK_PREFIX_VARIABLE", "STACK_SIGNAL"):
        assert f'"{getattr(record, name)}"' in source, name


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
