"""A reader that closes stdout (``run_suite.py ... | head``) ends every entry point quietly: exit
141 (128 + SIGPIPE, what a shell reports for a program SIGPIPE ended), no BrokenPipeError
traceback; a shard that is running stops as on a signal, and its reports are written."""

import io
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci
from ci_runner.cli_errors import OutputClosed, _ClosableOutput, on_output_closed
from ci_runner.exit_codes import EXIT_OUTPUT_CLOSED
from ci_runner.maintenance.__main__ import COMMANDS

sys.path.insert(0, str(Path(__file__).parent))
from helpers_tree import REPO_ROOT, make_repo, registered_source, script_file

register_cpu_ci(est_time=11, suite="base-a-test-cpu")

RUN_SUITE = [sys.executable, str(REPO_ROOT / "run_suite.py")]


def closed_stdout(command: list[str], cwd: Path, read_until: bytes = b"") -> tuple[int, str, list]:
    """Run ``command`` and close its stdout, after the line that starts with ``read_until``
    when given: (exit code, stderr, the lines read)."""
    proc = subprocess.Popen(
        command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0
    )
    assert proc.stdout is not None and proc.stderr is not None
    lines = []
    while read_until and not (lines and lines[-1].startswith(read_until)):
        lines.append(proc.stdout.readline())
        assert lines[-1], lines  # the runner printed the line before it ended
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(timeout=120), err, lines


@pytest.fixture
def repo(tmp_path):
    files = {
        f"registered/test_{i}.py": registered_source(
            f'register_cpu_ci(est_time={i + 1}, suite="unit-cpu")'
        )
        for i in range(40)
    }
    return make_repo(tmp_path / "repo", files)


def test_a_dry_run_into_a_closed_pipe_ends_quietly_with_141(repo):
    for extra in (["--dry-run"], ["--dry-run", "--format", "json"], ["--print-matrix"], ["-h"]):
        command = [*RUN_SUITE, "--root", str(repo), "--hw", "cpu", "--suite", "unit-cpu"]
        code, err, _ = closed_stdout([*command, *extra], repo)
        assert (code, err) == (EXIT_OUTPUT_CLOSED, ""), extra


def test_init_into_a_closed_pipe_ends_quietly_with_141(repo):
    command = [*RUN_SUITE, "init", "--root", str(repo), "--output", "-", "--force"]
    assert closed_stdout(command, repo)[:2] == (EXIT_OUTPUT_CLOSED, "")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_maintenance_command_into_a_closed_pipe_ends_quietly(repo, command):
    code, err, _ = closed_stdout(
        [sys.executable, "-m", "ci_runner.maintenance", command, "-h"], repo
    )
    assert (code, err) == (EXIT_OUTPUT_CLOSED, "")


def test_a_maintenance_report_into_a_closed_pipe_ends_quietly(repo):
    command = [sys.executable, "-m", "ci_runner.maintenance", "check-registered-tests"]
    assert closed_stdout(command, repo)[:2] == (EXIT_OUTPUT_CLOSED, "")


def test_a_running_shard_stops_as_on_a_signal_and_writes_its_reports(tmp_path):
    root = make_repo(
        tmp_path / "run",
        {
            "registered/test_quick.py": script_file(
                'register_cpu_ci(est_time=9, suite="unit-cpu")'
            ),
            "registered/test_slow.py": script_file(
                'register_cpu_ci(est_time=8, suite="unit-cpu")', sleep=60
            ),
        },
    )
    command = [*RUN_SUITE, "--root", str(root), "--hw", "cpu", "--suite", "unit-cpu"]
    command += ["--gpus", "2", "--timings-out", str(root / "t.jsonl")]
    started = time.monotonic()
    # closed once the quick file's result is out (under load it may end after a close at the
    # start of execution), while the slow one still runs
    code, err, _ = closed_stdout(command, root, read_until=b"[1/2] registered/test_quick.py ")
    assert code == EXIT_OUTPUT_CLOSED and "Traceback" not in err
    assert time.monotonic() - started < 45  # the sleeping file was stopped, not waited for
    rows = {row["path"]: row for row in map(json.loads, (root / "t.jsonl").read_text().split("\n")[:-1])}  # fmt: skip
    assert rows["registered/test_quick.py"]["status"] == "passed"
    assert rows["registered/test_slow.py"]["status"] == "not_run"
    assert "SIGPIPE" in rows["registered/test_slow.py"]["reason"]


class PipeToNobody(io.StringIO):
    """A stream whose reader has gone: every write and flush raises BrokenPipeError."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")


def test_the_first_closed_write_ends_the_main_thread_and_later_writes_are_dropped():
    stream = _ClosableOutput(PipeToNobody())
    with pytest.raises(OutputClosed) as exc:
        print("a line", file=stream)
    assert exc.value.code == EXIT_OUTPUT_CLOSED
    assert stream.write("more") == 4  # dropped, no second exit
    stream.flush()


def test_while_a_shard_listens_a_closed_write_only_tells_it():
    told: list[str] = []
    stream = _ClosableOutput(PipeToNobody())
    with on_output_closed(lambda: told.append("closed")):
        print("a line", file=stream)  # no OutputClosed: the shard stops itself
        thread = threading.Thread(target=print, args=("from a worker",), kwargs={"file": stream})
        thread.start()
        thread.join()
    assert told == ["closed"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
