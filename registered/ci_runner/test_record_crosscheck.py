"""tools/record_crosscheck.py: records compared with coverage.py's own run of each test file, and
a recorded selection's drops judged by what coverage.py saw."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import repo_root

sys.path.insert(0, str(Path(__file__).parent))

from impact_tree import git
from recorded_tree import FILES, TESTS, recorded_repo

from ci_runner import register_cpu_ci
from ci_runner.impact.record_format import (
    TESTS_DIR,
    FileRecord,
    record_name,
    write_meta,
    write_test_record,
)

register_cpu_ci(est_time=25, suite="base-a-test-cpu")

STRACE = shutil.which("strace") is not None and subprocess.run(
    ["strace", "-qq", "-o", "/dev/null", "true"], capture_output=True
).returncode == 0  # fmt: skip


def lab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tools.record_crosscheck", *args],
        cwd=repo_root.ROOT, capture_output=True, text=True,
    )  # fmt: skip


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """The generated repository recorded by the runner and run again under coverage.py (and
    strace, where it can trace): (root, record dir, coverage dir)."""
    base = tmp_path_factory.mktemp("crosscheck")
    root, records = recorded_repo(base, FILES)
    listing = base / "tests.txt"
    listing.write_text("".join(f"{test}\n" for test in TESTS))
    done = lab("collect", "--root", str(root), "--hw", "cpu", "--suite", "unit-cpu",
               "--files-from", str(listing), "--out", str(base / "cov"),
               *(["--strace"] if STRACE else []))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(": passed") == len(TESTS), done.stdout
    return root, records, base / "cov"


def judged(root: Path, records: Path, coverage: Path, *more: str) -> str:
    done = lab("judge", "--root", str(root), "--records", str(records),
               "--coverage", str(coverage), *more)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_block_coverage_py_saw_is_in_the_runner_s_record(checked):
    out = judged(*checked)
    assert f"judged {len(TESTS)} test files" in out
    # test_data runs mul() in a child process: coverage.py sees it there, and so does the record
    assert "registered/test_data.py: " in out and "ops.py" not in out
    assert out.count(" blocks run, 0 not in its record") == len(TESTS), out


@pytest.mark.skipif(not STRACE, reason="strace is not installed or cannot trace here")
def test_every_file_strace_saw_opened_is_in_the_record(checked, tmp_path):
    """``test_data`` opens ``data/cfg.json`` by a relative path; ``test_program``'s ``cat``
    reads ``plugins/one.txt``, which its record does not see but keeps it for any change. A
    record that loses the opened file is named."""
    root, records, coverage = checked
    out = judged(root, records, coverage)
    assert out.count(" not in its record") == 2 * len(TESTS), out
    assert out.count("files of the tree opened, 0 not in its record") == len(TESTS), out
    damaged = tmp_path / "records"
    shutil.copytree(records, damaged)
    path = damaged / TESTS_DIR / record_name("registered/test_data.py")
    record = json.loads(path.read_text())
    del record["opened"]["data/cfg.json"]
    path.write_text(json.dumps(record))
    out = judged(root, damaged, coverage)
    assert "    opened data/cfg.json" in out, out


def test_a_block_the_record_lacks_is_named(checked, tmp_path):
    root, records, coverage = checked
    damaged = tmp_path / "records"
    shutil.copytree(records, damaged)
    path = damaged / TESTS_DIR / record_name("registered/test_mul.py")
    record = json.loads(path.read_text())
    del record["code"]["pkg/ops.py"]["mul"]
    path.write_text(json.dumps(record))
    out = judged(root, damaged, coverage)
    assert "registered/test_mul.py: " in out and "1 not in its record" in out
    assert "    pkg/ops.py:mul" in out


def test_a_dropped_test_that_ran_a_changed_block_is_a_miss(checked, tmp_path):
    root, records, coverage = checked
    ops = root / "pkg" / "ops.py"
    before = ops.read_text()
    ops.write_text(before.replace("return a * b", "return b * a"))
    git(root, "commit", "-qam", "mul body")
    try:
        commit = git(root, "rev-parse", "HEAD").strip()
        rows = tmp_path / "rows.jsonl"
        dropped_mul = {"commit": commit, "kept_recorded": [TESTS[0]], "files_recorded": 1}
        everything = {"commit": commit, "kept_recorded": [], "files_recorded": len(TESTS)}
        skipped = {"commit": "0" * 10, "applies": False}
        rows.write_text("".join(json.dumps(r) + "\n" for r in (dropped_mul, everything, skipped)))
        out = judged(root, records, coverage, "--rows", str(rows))
    finally:
        git(root, "reset", "-q", "--hard", "HEAD^")
    assert TESTS[0] == "registered/test_add.py"
    misses = sorted(line.split()[1] for line in out.splitlines() if "MISS" in line)
    assert misses == ["registered/test_data.py", "registered/test_mul.py"], out
    assert "misses: 2" in out


def test_strace_lines_resolve_from_each_process_s_directory(tmp_path):
    """The runner's own opens, directories and ``.git/`` are left out; ``openat`` resolves from
    the directory ``-y`` prints; ``open`` from the directory the process changed to, which a
    vfork child does before its parent's ``vfork`` returns. Judged through the tool's command
    line, against a record that noted none of them."""
    root = tmp_path / "repo"
    root.mkdir()
    records = tmp_path / "records"
    write_meta(records, "abc")
    test = "registered/test_x.py"
    write_test_record(records, FileRecord(test, "abc", "passed"))
    data = tmp_path / "cov" / "x"
    data.mkdir(parents=True)
    (data / "status.txt").write_text(f"{test}\npassed\n")
    (data / "strace.txt").write_text(
        f'10 openat(AT_FDCWD<{root}>, "pkg/a.json", O_RDONLY) = 3\n'
        "10 vfork( <unfinished ...>\n"
        f'11 chdir("{root}/test") = 0\n'
        "10 <... vfork resumed>) = 11\n"
        '11 open("rel.txt", O_RDONLY) = 3\n'
        f'11 openat(AT_FDCWD<{root}/test>, "libx.so", O_RDONLY|O_CLOEXEC) = -1 ENOENT (No such)\n'
        f'11 openat(AT_FDCWD<{root}/test>, "sub", O_RDONLY|O_DIRECTORY) = 4\n'
        f'11 openat(AT_FDCWD<{root}>, ".git/HEAD", O_RDONLY) = 4\n'
        f'11 openat(3<{root}/data>, "cfg.json", O_RDONLY <unfinished ...>\n'
        "11 <... openat resumed>) = 5\n"
        '11 openat(AT_FDCWD</elsewhere>, "x.txt", O_RDONLY) = 6\n'
    )
    out = judged(root, records, tmp_path / "cov")
    assert "strace: 3 files of the tree opened, 3 not in its record" in out, out
    opened = sorted(line.split()[1] for line in out.splitlines() if line.startswith("    opened"))
    assert opened == ["data/cfg.json", "test/libx.so", "test/rel.txt"], out


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
