"""``--files``, ``--tests`` and ``--from-junit [--failed-only]``: what runs again, validated and
re-planned onto shards (a generated tree; a merged report of a real two-shard run)."""

import json
import sys
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cpu_ci
from ci_runner.cli import main

register_cpu_ci(est_time=8, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from execution_tree import make_tree, pytest_file, run_suite, script_file  # noqa: E402
from test_case_retries import COUNTER  # noqa: E402

from testing.tree_builder import run_maintenance  # noqa: E402

FILES = {
    "test_mix.py": pytest_file(
        COUNTER
        + """

def test_pass():
    count("pass")


def test_fail():
    count("fail")
    assert False


@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    count(f"param{n}")
    assert n == 1
""",
        est=5,
    ),
    "sub/test_class.py": pytest_file(
        COUNTER
        + """

class TestK:
    def test_a(self):
        count("a")

    def test_b(self):
        count("b")
        assert False
""",
        est=4,
    ),
    "test_crash.py": script_file(
        COUNTER + "\n\ndef main():\n    count('main')\n    import os\n    os.abort()\n", est=3
    ),
    "test_ok.py": pytest_file(COUNTER + "\n\ndef test_ok():\n    count('ok')\n", est=2),
    "test_gpu.py": pytest_file(
        "def test_g():\n    pass\n", est=2, suite="gpu-suite", marker="cuda"
    ),
}


@pytest.fixture(scope="module")
def merged(tmp_path_factory):
    """A real two-shard run of the tree and merge-junit's merged report of it."""
    root = make_tree(tmp_path_factory.mktemp("rerun"), FILES)
    for shard in ("0", "1"):
        proc = run_suite(
            root, "--continue-on-error", "--auto-partition-size", "2", "--auto-partition-id",
            shard, "--junit-xml", str(root / f"reports/junit-{shard}.xml"),
        )  # fmt: skip
        assert proc.returncode == 1, proc.stdout + proc.stderr
    plan = root / "plan.json"
    flags = ("--dry-run", "--format", "json", "--auto-partition-size", "2")
    plan.write_text(run_suite(root, *flags, "--auto-partition-id", "0").stdout)
    out = root / "merged.xml"
    merge = run_maintenance(
        "merge-junit", "--plan", str(plan), "--junit-dir", str(root / "reports"), "--out", str(out)
    )
    assert merge.returncode == 1 and "NOT PASSING: 3 file(s)" in merge.stdout, merge.stdout
    return root, out


def dry(root, capsys, *flags):
    code = main(["--root", str(root), "--hw", "cpu", "--suite", "cpu-suite", "--dry-run",
                 "--format", "json", *flags])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out), captured.err


def test_failed_only_names_exactly_the_failed_cases_and_replans_them(merged, capsys):
    root, report = merged
    doc, err = dry(root, capsys, "--from-junit", str(report), "--failed-only",
                   "--auto-partition-size", "2", "--auto-partition-id", "0")  # fmt: skip
    cases = {f["path"]: f["cases"] for f in doc["files"]}
    assert cases == {
        "registered/sub/test_class.py": ["registered/sub/test_class.py::TestK::test_b"],
        "registered/test_crash.py": [],  # a script's failure names no case: it runs whole
        "registered/test_mix.py": [
            "registered/test_mix.py::test_fail",
            "registered/test_mix.py::test_param[2]",
        ],
    }
    assert sorted(p for shard in doc["shards"] for p in shard["files"]) == sorted(cases)
    assert [len(shard["files"]) for shard in doc["shards"]] == [1, 2]
    assert doc["disabled"] == []
    assert err == ""


def test_a_rerun_runs_exactly_the_failed_cases_of_the_merged_report(merged):
    root, report = merged
    for counter in (root / "registered").rglob("*.count"):
        counter.unlink()
    proc = run_suite(root, "--from-junit", str(report), "--failed-only", "--continue-on-error")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    counted = {
        f"{p.parent.name}/{p.name}": int(p.read_text())
        for p in (root / "registered").rglob("*.count")
    }
    assert counted == {
        "registered/test_mix.fail.count": 1,
        "registered/test_mix.param2.count": 1,
        "sub/test_class.b.count": 1,
        "registered/test_crash.main.count": 1,  # a script's failure names no case: it runs whole
    }
    assert proc.stdout.rstrip().splitlines()[-1] == "summary: 0 passed, 4 failed, 0 skipped"


def test_without_failed_only_every_file_of_the_report_runs_whole(merged, capsys):
    root, report = merged
    doc, _ = dry(root, capsys, "--from-junit", str(report))
    assert {f["path"]: f["cases"] for f in doc["files"]} == {
        "registered/sub/test_class.py": [],
        "registered/test_crash.py": [],
        "registered/test_mix.py": [],
        "registered/test_ok.py": [],
    }


def test_a_report_file_of_another_lane_is_left_out_with_a_notice(merged, capsys):
    root, report = merged
    other = report.read_text().replace("registered/test_ok.py", "registered/test_gpu.py")
    (root / "other.xml").write_text(other.replace('value="passed"', 'value="failed"', 1))
    doc, err = dry(root, capsys, "--from-junit", str(root / "other.xml"), "--failed-only")
    assert "registered/test_gpu.py" not in {f["path"] for f in doc["files"]}
    assert (
        f"notice: --from-junit {root / 'other.xml'} --failed-only: registered/test_gpu.py left "
        "out: is not selected by --hw cpu --suite cpu-suite; it registers for: cuda gpu-suite"
    ) in err


def test_a_green_report_reruns_nothing(merged, capsys):
    root, report = merged
    green = root / "green.xml"
    text = report.read_text()
    for status in ("failed", "crashed"):
        text = text.replace(f'name="status" value="{status}"', 'name="status" value="passed"')
    green.write_text(text)
    doc, err = dry(root, capsys, "--from-junit", str(green), "--failed-only")
    assert doc["files"] == [] and doc["shards"] == [{"id": 0, "est_total": 0.0, "files": []}]
    assert "nothing to run in the selection; exit 0" in err


def test_files_and_tests_narrow_and_join(merged, capsys):
    root, _ = merged
    doc, _ = dry(root, capsys, "--files", "registered/test_ok.py", "--tests",
                 "registered/test_mix.py::test_fail", "registered/test_ok.py::test_ok",
                 "--files", str(root / "registered/test_crash.py"))  # fmt: skip
    assert {f["path"]: f["cases"] for f in doc["files"]} == {
        "registered/test_crash.py": [],
        "registered/test_mix.py": ["registered/test_mix.py::test_fail"],
        "registered/test_ok.py": [],  # named whole by --files: the whole file runs
    }


def test_a_path_relative_to_the_current_directory_is_accepted(merged, capsys, monkeypatch):
    root, _ = merged
    monkeypatch.chdir(root / "registered" / "sub")
    doc, _ = dry(root, capsys, "--files", "test_class.py")
    assert [f["path"] for f in doc["files"]] == ["registered/sub/test_class.py"]


@pytest.mark.parametrize(
    "flags, messages",
    [
        (
            ["--files", "registered/test_nope.py", "registered/test_gpu.py", "../x.py"],
            [
                "error: --files '../x.py': expected a .py file's path from the repository root",
            ],
        ),
        (
            ["--files", "registered/test_nope.py", "registered/test_gpu.py"],
            [
                "error: --files registered/test_gpu.py: is not selected by --hw cpu --suite "
                "cpu-suite; it registers for: cuda gpu-suite",
                "error: --files registered/test_nope.py: is not a collected registered file",
            ],
        ),
        (
            ["--tests", "registered/test_mix.py", "registered/test_mix.py::2x"],
            [
                "error: --tests 'registered/test_mix.py': expected FILE::CASE",
                "error: --tests 'registered/test_mix.py::2x': case '2x': expected test_name",
            ],
        ),
        (
            ["--files", "/etc/test_x.py"],
            ["error: --files '/etc/test_x.py': /etc/test_x.py is outside"],
        ),
    ],
)
def test_every_bad_file_or_case_is_named_exit_2(merged, capsys, flags, messages):
    root, _ = merged
    code = main(["--root", str(root), "--hw", "cpu", "--suite", "cpu-suite", "--dry-run", *flags])
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == len(messages), err
    for line, message in zip(sorted(lines), sorted(messages), strict=True):
        assert line.startswith(message), (line, message)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--failed-only"], "--failed-only needs --from-junit REPORT"),
        (["--from-junit", "r.xml", "--files", "a.py"], "--from-junit cannot be combined with"),
        (["--tests", "a.py::t", "--changed-files", "-"], "--tests cannot be combined with"),
        (["--resume-from", "t.jsonl", "--dry-run"], "--resume-from cannot be combined with"),
        (["--from-junit", "a.xml", "--from-junit", "b.xml"], "--from-junit given twice"),
    ],
)
def test_conflicting_rerun_flags_are_usage_errors(flags, message, capsys):
    assert main(["--hw", "cpu", "--suite", "s", *flags]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "cannot read it (No such file or directory)"),
        ("{}", "not a readable JUnit XML file"),
        ("<testsuites><testsuite name='x'/></testsuites>", "no testsuite written by run_suite.py"),
        (
            "<testsuite name='x'><properties><property name='path' value='/etc/x.py'/>"
            "<property name='status' value='failed'/></properties></testsuite>",
            "testsuite path '/etc/x.py': expected a .py file's path",
        ),
    ],
)
def test_an_unusable_report_is_exit_2_naming_it(merged, capsys, content, message):
    root, _ = merged
    report = root / "bad.xml"
    report.unlink(missing_ok=True)
    if content is not None:
        report.write_text(content)
    code = main(["--root", str(root), "--hw", "cpu", "--suite", "cpu-suite", "--dry-run",
                 "--from-junit", str(report)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and message in err, err
    assert str(report) in err


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
