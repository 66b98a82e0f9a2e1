"""Quarantine: ``quarantined=`` in a registration and ``[tool.ci-runner.quarantine]`` cases run and
are reported everywhere, and their failures fail no job (a generated tree, the real CLI)."""

import json
import sys
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)
from junitparser import JUnitXml

from ci_runner import register_cpu_ci
from ci_runner.catalog import CatalogError, load_catalog, parse_catalog
from ci_runner.collect import collect, scan_markers
from ci_runner.select import select

register_cpu_ci(est_time=8, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from execution_tree import CATALOG, make_tree, pytest_file, run_suite  # noqa: E402

from testing.tree_builder import run_maintenance  # noqa: E402

P = "registered/test_x.py"


def quarantined_file(body: str, reason: str, est: float = 1) -> str:
    text = pytest_file(body, est=est)
    return text.replace('suite="cpu-suite")', f'suite="cpu-suite", quarantined="{reason}")', 1)


@pytest.mark.parametrize(
    "call, message",
    [
        (
            "register_cpu_ci(1, 's', quarantined=True)",
            f"{P}:1:37: quarantined must be a reason string (or an issue URL) or None, got True",
        ),
        (
            "register_cpu_ci(1, 's', quarantined='  ')",
            f"{P}:1:37: quarantined must be a non-empty reason string",
        ),
        (
            "register_cpu_ci(1, 's', quarantined=REASON)",
            f"{P}:1:37: quarantined must be a literal (a reason string or None)",
        ),
        (
            "register_cpu_ci(1, 's', disabled='off', quarantined='flaky')",
            f"{P}:1:53: quarantined= and disabled= cannot be combined in register_cpu_ci()",
        ),
    ],
)
def test_a_malformed_quarantined_argument_is_a_problem_at_its_position(call, message):
    registrations, problems = scan_markers(f"{call}\n", P)
    assert registrations == []
    assert any(str(p).startswith(message) for p in problems), problems


def test_a_quarantined_registration_keeps_its_reason():
    registrations, problems = scan_markers(
        "register_cpu_ci(1, 's', quarantined='https://example.com/issues/7')\n", P
    )
    assert problems == []
    assert registrations[0].quarantined == "https://example.com/issues/7"


@pytest.mark.parametrize(
    "table, message",
    [
        ('quarantine = ["registered/test_a.py"]', "quarantine: must be a table of node id"),
        (
            '[tool.ci-runner.quarantine]\n"registered/test_a.py::t" = 3',
            "'registered/test_a.py::t' must be a non-empty reason string",
        ),
        (
            '[tool.ci-runner.quarantine]\n"registered/test_a.py::1x" = "r"',
            "quarantine: key 'registered/test_a.py::1x': case '1x': expected test_name",
        ),
        (
            '[tool.ci-runner.quarantine]\n"/etc/test_a.py" = "r"',
            "quarantine: key '/etc/test_a.py': expected a .py file's path",
        ),
    ],
)
def test_a_malformed_quarantine_table_is_a_catalog_error_naming_the_key(tmp_path, table, message):
    text = CATALOG.replace("[tool.ci-runner]\n", f"[tool.ci-runner]\n{table}\n", 1)
    if table.startswith("[tool"):
        text = CATALOG + "\n" + table + "\n"
    make_tree(tmp_path, {})
    (tmp_path / "pyproject.toml").write_text(text)
    with pytest.raises(CatalogError, match="quarantine") as error:
        load_catalog(tmp_path)
    assert message in str(error.value)


def test_a_stale_quarantine_key_is_a_problem_naming_its_line(tmp_path):
    make_tree(tmp_path, {"test_a.py": pytest_file("def test_a():\n    pass\n")})
    with (tmp_path / "pyproject.toml").open("a") as catalog:
        catalog.write('\n[tool.ci-runner.quarantine]\n"registered/test_gone.py::t" = "old"\n')
    line = (
        (tmp_path / "pyproject.toml")
        .read_text()
        .splitlines()
        .index('"registered/test_gone.py::t" = "old"')
    )
    problems = [str(p) for p in collect(load_catalog(tmp_path)).problems]
    assert problems == [
        f"pyproject.toml:{line + 1}:1: [tool.ci-runner.quarantine] 'registered/test_gone.py::t': "
        "registered/test_gone.py is not a collected registered file; fix the path or remove the "
        "entry"
    ]


def test_a_quarantined_registration_comes_back_from_the_parse_cache(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "cache"))
    root = make_tree(
        tmp_path / "repo", {"test_q.py": quarantined_file("def test_a():\n    pass\n", "i/9")}
    )
    cold = collect(load_catalog(root), workers=1).registrations
    warm = collect(load_catalog(root), workers=1).registrations
    assert [r.quarantined for r in warm] == [r.quarantined for r in cold] == ["i/9"]
    assert list((tmp_path / "cache").glob("scans-*.json"))
    assert "damaged" not in capsys.readouterr().err


def test_a_file_is_quarantined_only_when_every_selected_registration_says_so(tmp_path):
    table = {
        "registered-dir": "registered",
        "suites": [{"name": "a", "hw": "cpu"}, {"name": "b", "hw": "cpu"}],
    }
    catalog = parse_catalog(table, tmp_path, "pyproject.toml [tool.ci-runner]")
    source = (
        "register_cpu_ci(1, 'a', quarantined='flaky in a')\n"
        "register_cpu_ci(2, 'b')\n"
    )  # fmt: skip
    registrations, problems = scan_markers(source, P)
    assert problems == []
    only_a = select(registrations, catalog, "cpu", ["a"], False)
    assert only_a.files[0].quarantined == "flaky in a"
    both = select(registrations, catalog, "cpu", ["a", "b"], False)
    assert both.files[0].quarantined is None


FILES = {
    "test_q_file.py": quarantined_file(
        "def test_broken():\n    assert False, 'known broken'\n", "https://example.com/issues/1", 5
    ),
    "test_q_cases.py": pytest_file(
        """
        def test_ok():
            pass

        @pytest.mark.parametrize("n", [1, 2])
        def test_known(n):
            assert n == 0, "quarantined by its parameters"
        """,
        est=4,
    ),
    "test_q_some.py": pytest_file(
        """
        def test_known():
            assert False, "quarantined"

        def test_real():
            assert False, "a real failure"
        """,
        est=3,
    ),
    "test_pass.py": pytest_file("def test_fine():\n    pass\n", est=1),
}
QUARANTINE = """
[tool.ci-runner.quarantine]
"registered/test_q_cases.py::test_known" = "flaky parameters, issue 2"
"registered/test_q_some.py::test_known" = "issue 3"
"""


@pytest.fixture(scope="module")
def quarantine_run(tmp_path_factory):
    root = make_tree(tmp_path_factory.mktemp("quarantine"), FILES)
    with (root / "pyproject.toml").open("a") as catalog:
        catalog.write(QUARANTINE)
    summary = root / "summary.md"
    proc = run_suite(
        root,
        "--continue-on-error",
        "--junit-xml",
        str(root / "junit.xml"),
        "--timings-out",
        str(root / "timings.jsonl"),
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    return root, proc


def test_quarantined_failures_are_reported_and_only_real_ones_fail(quarantine_run):
    _, proc = quarantine_run
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr  # test_q_some.py::test_real
    assert "  quarantined: registered/test_q_file.py [cpu-suite] reason: https://" in out
    assert "registered/test_q_file.py  failed" in out
    assert "[quarantined: https://example.com/issues/1]" in out
    assert "[quarantined: test_known[1]: flaky parameters, issue 2]" in out
    failed = out.split("\nfailed:\n")[1].split("\nquarantined (failing no job):\n")
    assert [line.strip() for line in failed[0].strip().splitlines()] == [
        "registered/test_q_some.py::test_known [failed]: AssertionError: quarantined",
        "registered/test_q_some.py::test_real [failed]: AssertionError: a real failure",
    ]
    listed = failed[1].split("\nexit code")[0].splitlines()
    assert [line.strip().split(" [")[0] for line in listed] == [
        "registered/test_q_file.py",
        "registered/test_q_cases.py",
    ]
    # test_q_some's quarantined case counts as failed: its file failed for a real reason
    assert out.rstrip().splitlines()[-1] == "summary: 2 passed, 2 failed, 0 skipped, 3 quarantined"


def test_every_report_names_the_quarantine(quarantine_run):
    root, _ = quarantine_run
    suites = {s.name: s for s in JUnitXml.fromfile(str(root / "junit.xml"))}
    props = {name: {p.name: p.value for p in s.properties()} for name, s in suites.items()}
    assert props["registered/test_q_file.py"]["quarantined"] == "https://example.com/issues/1"
    assert props["registered/test_q_file.py"]["status"] == "failed"
    assert "quarantined" not in props["registered/test_q_some.py"]
    rows = {
        r["path"]: r for r in map(json.loads, (root / "timings.jsonl").read_text().splitlines())
    }
    assert rows["registered/test_q_cases.py"]["quarantined"].startswith("test_known[1]: flaky")
    assert "quarantined" not in rows["registered/test_pass.py"]
    summary = (root / "summary.md").read_text()
    assert "- test cases: 2 passed, 2 failed, 0 skipped, 3 quarantined (failing no job)" in summary
    assert "| `registered/test_q_file.py` | ❌ failed (quarantined) |" in summary
    assert "### Quarantined, failing no job (2)" in summary


def test_merge_junit_lists_quarantined_files_without_failing_on_them(quarantine_run, tmp_path):
    root, _ = quarantine_run
    planned = ["registered/test_q_file.py", "registered/test_q_cases.py", "registered/test_pass.py"]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"files": planned}))
    reports = tmp_path / "reports"
    reports.mkdir()
    xml = JUnitXml.fromfile(str(root / "junit.xml"))
    kept = JUnitXml()
    for suite in xml:
        if suite.name != "registered/test_q_some.py":
            kept.add_testsuite(suite)
    kept.write(str(reports / "junit.xml"))
    proc = run_maintenance("merge-junit", "--plan", str(plan), "--junit-dir", str(reports))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "QUARANTINED: 2 file(s) did not pass; their failures fail no check:" in proc.stdout
    assert "NOT PASSING" not in proc.stdout
    assert proc.stdout.rstrip().endswith(
        "OK: every planned file was reported exactly once; none failed"
    )


def test_a_quarantined_failure_does_not_stop_a_fail_fast_shard(quarantine_run):
    root, _ = quarantine_run
    proc = run_suite(
        root, "--files", "registered/test_q_file.py", "registered/test_pass.py"
    )  # fail-fast
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "registered/test_pass.py  passed" in proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1] == (
        "summary: 1 passed, 0 failed, 0 skipped, 1 quarantined"
    )


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
