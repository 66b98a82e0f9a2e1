"""Where reports and rewrites go: two reports never share a file (compared by real path); a link,
a FIFO, a socket, a device or a file that is not a report is never replaced, followed or opened
for writing; ``merge-junit --out`` and ``init --output`` obey the same rules; ``update-est-time
--write`` never writes outside the repository."""

import json
import os
import socket
import stat
import sys
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci
from ci_runner.cli import main
from ci_runner.file_safety import destination_problem, write_atomic
from ci_runner.maintenance.__main__ import main as maintenance

sys.path.insert(0, str(Path(__file__).parent))
from helpers_tree import CATALOG, make_repo, registered_source

register_cpu_ci(est_time=3, suite="base-a-test-cpu")

OK = registered_source('register_cpu_ci(est_time=1, suite="unit-cpu")')


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return make_repo(tmp_path / "repo", {"registered/test_ok.py": OK})


def dry_run(repo: Path, *flags: str) -> int:
    return main(["--root", str(repo), "--hw", "cpu", "--suite", "unit-cpu", "--dry-run", *flags])


def error_line(capsys) -> str:
    (line,) = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    return line


def test_two_reports_naming_one_file_by_another_spelling_are_refused(repo, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    code = dry_run(repo, "--junit-xml", f"{out}/r.xml", "--timings-out", f"{out}/../out/r.xml")
    assert code == 2
    assert error_line(capsys).endswith(
        "--junit-xml and --timings-out name the same file; give each report its own path"
    )
    assert not (out / "r.xml").exists()


def test_two_reports_naming_one_file_through_a_hard_link_are_refused(repo, tmp_path, capsys):
    (tmp_path / "r.xml").write_text("<testsuites/>")
    os.link(tmp_path / "r.xml", tmp_path / "t.jsonl")
    assert dry_run(repo, "--junit-xml", str(tmp_path / "r.xml"), "--timings-out", str(tmp_path / "t.jsonl")) == 2  # fmt: skip
    assert "--junit-xml and --timings-out name the same file" in error_line(capsys)


def test_the_step_summary_cannot_be_a_report_file_either(repo, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    assert dry_run(repo, "--timings-out", str(tmp_path / "summary.md")) == 2
    assert error_line(capsys).endswith(
        "--timings-out and $GITHUB_STEP_SUMMARY name the same file; give each report its own path"
    )


def test_a_report_path_that_is_a_link_is_refused_and_left_alone(repo, tmp_path, capsys):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    link = tmp_path / "link.xml"
    link.symlink_to(victim)
    assert dry_run(repo, "--junit-xml", str(link)) == 2
    assert f"--junit-xml {link}: is a symbolic link; the file is written by replacing it" in (
        error_line(capsys)
    )
    assert link.is_symlink() and victim.read_text() == "keep me\n"


@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_a_report_path_that_is_a_fifo_or_a_socket_is_refused_without_opening_it(
    repo, tmp_path, capsys, kind
):
    path = tmp_path / f"report.{kind}"
    server = socket.socket(socket.AF_UNIX)
    if kind == "fifo":
        os.mkfifo(path)  # opening it for writing would block until a reader comes
    else:
        server.bind(str(path))
    try:
        assert dry_run(repo, "--timings-out", str(path)) == 2
    finally:
        server.close()
    name = "a FIFO (named pipe)" if kind == "fifo" else "a socket"
    assert f"--timings-out {path}: is {name}, not a regular file" in error_line(capsys)
    mode = path.lstat().st_mode
    assert stat.S_ISFIFO(mode) if kind == "fifo" else stat.S_ISSOCK(mode)


def test_a_device_is_never_a_destination():
    assert destination_problem("/dev/null") == (
        "is a character device, not a regular file; only a regular file is written there"
    )


def test_an_existing_file_that_is_no_report_is_not_replaced(repo, capsys):
    before = (repo / "pyproject.toml").read_bytes()
    assert dry_run(repo, "--junit-xml", str(repo / "pyproject.toml")) == 2
    assert "exists and is not JUnit XML (it starts with b'[tool.ci-runner]" in error_line(capsys)
    assert dry_run(repo, "--timings-out", str(repo / "registered" / "test_ok.py")) == 2
    assert "exists and is not timings JSON lines" in error_line(capsys)
    assert (repo / "pyproject.toml").read_bytes() == before


def test_a_previous_report_is_replaced_keeping_its_mode_and_a_new_one_is_0644(tmp_path):
    old = tmp_path / "junit.xml"
    old.write_text("<testsuites/>")
    old.chmod(0o640)
    assert destination_problem(old) is None
    write_atomic(old, b"<testsuites />")
    write_atomic(tmp_path / "deep" / "new.jsonl", b"{}\n")
    assert stat.S_IMODE(old.stat().st_mode) == 0o640
    assert stat.S_IMODE((tmp_path / "deep" / "new.jsonl").stat().st_mode) == 0o644


def test_a_step_summary_that_is_a_fifo_is_refused_before_anything_runs(
    repo, tmp_path, capsys, monkeypatch
):
    os.mkfifo(tmp_path / "summary.fifo")  # appending would block the end of the run forever
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.fifo"))
    assert dry_run(repo) == 2
    assert "$GITHUB_STEP_SUMMARY" in error_line(capsys)


def test_a_report_under_a_file_is_refused_naming_it(repo, tmp_path, capsys):
    (tmp_path / "plain").write_text("")
    assert dry_run(repo, "--junit-xml", str(tmp_path / "plain" / "j.xml")) == 2
    assert f"cannot be created: {tmp_path / 'plain'} is not a directory" in error_line(capsys)


def test_merge_out_follows_the_same_rules(tmp_path, capsys):
    (tmp_path / "plan.json").write_text(json.dumps({"files": []}))
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "r.xml").write_text("<testsuites/>")
    (tmp_path / "link.xml").symlink_to(tmp_path / "elsewhere.xml")
    base = ["merge-junit", "--plan", str(tmp_path / "plan.json"), "--junit-dir"]
    assert maintenance([*base, str(tmp_path / "reports"), "--out", str(tmp_path / "link.xml")]) == 2
    assert "--out" in error_line(capsys) and not (tmp_path / "elsewhere.xml").exists()
    out = str(tmp_path / "reports" / "r.xml")
    assert maintenance([*base, str(tmp_path / "reports"), "--out", out]) == 2
    assert "is one of the reports it merges" in error_line(capsys)


def test_init_output_follows_the_same_rules(tmp_path, capsys):
    root = make_repo(tmp_path / "repo", {"registered/test_ok.py": OK}, catalog="")
    os.mkfifo(tmp_path / "out.fifo")
    assert main(["init", "--root", str(root), "--output", str(tmp_path / "out.fifo")]) == 2
    assert "is a FIFO (named pipe), not a regular file" in error_line(capsys)
    (root / "pyproject.toml").unlink()
    (tmp_path / "real.toml").write_text("[project]\nname = 'x'\n")
    (root / "pyproject.toml").symlink_to(tmp_path / "real.toml")
    assert main(["init", "--root", str(root)]) == 2
    assert "is a symbolic link" in error_line(capsys)
    assert (tmp_path / "real.toml").read_text() == "[project]\nname = 'x'\n"


def timings(path: Path, rows: list[str]) -> Path:
    path.write_text("".join(rows))
    return path


def row(rel_path: str, elapsed: float = 100) -> str:
    return json.dumps({"path": rel_path, "suite": "unit-cpu", "elapsed": elapsed, "status": "passed"}) + "\n"  # fmt: skip


@pytest.mark.parametrize("rel_path", ["../victim/test_v.py", "/tmp/test_v.py", "a/../../v.py", ""])
def test_update_est_time_refuses_a_path_outside_the_repository(tmp_path, capsys, rel_path):
    repo = make_repo(tmp_path / "repo", {"registered/test_ok.py": OK}, catalog=CATALOG)
    data = timings(tmp_path / "t.jsonl", [row("registered/test_ok.py"), row(rel_path)])
    code = maintenance(["update-est-time", "--root", str(repo), "--timings", str(data), "--write"])
    assert code == 2
    assert error_line(capsys) == (
        f"update-est-time: error: {data}:2: path {rel_path!r} is not a path inside the "
        "repository; expected one relative to the root, such as registered/test_x.py"
    )


def test_update_est_time_never_writes_through_a_link_out_of_the_repository(tmp_path, capsys):
    victim = tmp_path / "victim.py"
    victim.write_text(OK)
    repo = make_repo(tmp_path / "repo", {}, catalog=CATALOG)
    (repo / "registered" / "test_link.py").symlink_to(victim)
    data = timings(tmp_path / "t.jsonl", [row("registered/test_link.py")] * 3)
    code = maintenance(["update-est-time", "--root", str(repo), "--timings", str(data), "--write"])
    assert code == 0
    out = capsys.readouterr().out
    assert f"registered/test_link.py [unit-cpu]: it leads to {victim.resolve()}, outside" in out
    assert victim.read_text() == OK


def test_update_est_time_refuses_timings_it_cannot_trust(tmp_path, capsys):
    repo = make_repo(tmp_path / "repo", {}, catalog=CATALOG)
    nan = timings(tmp_path / "nan.jsonl", ['{"path": "registered/t.py", "suite": "s", "elapsed": NaN}\n'])  # fmt: skip
    assert maintenance(["update-est-time", "--root", str(repo), "--timings", str(nan)]) == 0
    assert (
        "nan.jsonl:1: elapsed must be a number of seconds from 0 to 604800, got nan (float); "
        "this sample is left out"
    ) in capsys.readouterr().out
    os.mkfifo(tmp_path / "fifo.jsonl")
    assert maintenance(["update-est-time", "--root", str(repo), "--timings", str(tmp_path / "fifo.jsonl")]) == 2  # fmt: skip
    assert "fifo.jsonl: cannot read it as UTF-8 text (is a FIFO (named pipe)" in error_line(capsys)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
