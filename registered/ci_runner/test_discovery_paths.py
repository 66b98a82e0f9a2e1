"""What discovery reads, and a problem naming every path it does not: FIFOs and other non-regular
files (never opened: no hang), links out of the registered directory, hidden directories,
unlistable directories, non-UTF-8 names, a registered-dir outside the root, and files nested too
deeply for Python's parser. The runner, the registration lint and ``init`` all see them."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cpu_ci
from ci_runner.catalog import CatalogError, load_catalog
from ci_runner.collect import collect

sys.path.insert(0, str(Path(__file__).parent))
from helpers_tree import make_repo, registered_source

from testing.tree_builder import REPO_ROOT, catalog_toml, suite_toml

register_cpu_ci(est_time=4, suite="base-a-test-cpu")

OK = 'register_cpu_ci(est_time=1, suite="unit-cpu")'
FAILING = registered_source(OK, main='if __name__ == "__main__":\n    sys.exit(1)\n')


def problems(root: Path) -> list[str]:
    return [str(p) for p in collect(load_catalog(root)).problems]


def repo(tmp_path: Path, files: dict[str, str] | None = None) -> Path:
    return make_repo(
        tmp_path / "repo", {"registered/test_ok.py": registered_source(OK), **(files or {})}
    )


def run(root: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run(
        [sys.executable, *args], cwd=root, env=env, capture_output=True, text=True,
        errors="replace", timeout=timeout, check=False,
    )  # fmt: skip


def test_a_fifo_named_like_a_test_is_a_problem_for_every_entry_point_and_never_opened(tmp_path):
    root = repo(tmp_path)
    os.mkfifo(root / "registered" / "test_fifo.py")  # opening it for reading would block
    message = (
        "registered/test_fifo.py:1:1: is a FIFO (named pipe), not a regular file: discovery "
        "reads only regular files (and never opens this one)"
    )
    dry = run(
        root, str(REPO_ROOT / "run_suite.py"), "--hw", "cpu", "--suite", "unit-cpu", "--dry-run"
    )
    assert dry.returncode == 2 and message in dry.stderr, dry.stderr
    lint = run(root, "-m", "ci_runner.maintenance", "check-registered-tests")
    assert lint.returncode == 1 and message in lint.stderr, lint.stderr
    init = run(root, "-m", "ci_runner.cli", "init", "--output", "-")
    assert init.returncode == 0, init.stderr
    assert "registered/test_fifo.py:1:1: is a FIFO (named pipe)" in init.stderr


def test_a_socket_named_like_a_test_is_a_problem(tmp_path):
    root = repo(tmp_path)
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(root / "registered" / "bench_sock.py"))
        assert any(
            "bench_sock.py:1:1: is a socket, not a regular file" in p for p in problems(root)
        )
    finally:
        server.close()


def test_a_linked_directory_out_of_the_registered_dir_is_a_problem_not_a_silent_drop(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "test_bad.py").write_text(FAILING)
    root = repo(tmp_path)
    (root / "registered" / "linked").symlink_to(outside, target_is_directory=True)
    assert problems(root) == [
        f"registered/linked:1:1: symbolic link to the directory {outside.resolve()}, which holds "
        "files matching test_*.py/bench_*.py (first: test_bad.py): discovery does not follow "
        "links out of the registered directory; move the files here"
    ]
    lint = run(root, "-m", "ci_runner.maintenance", "check-registered-tests")
    assert lint.returncode == 1 and "registered/linked:1:1: symbolic link" in lint.stderr


def test_links_out_named_like_tests_and_dangling_links_are_problems(tmp_path):
    outside = tmp_path / "elsewhere.py"
    outside.write_text(FAILING)
    root = repo(tmp_path)
    (root / "registered" / "test_link.py").symlink_to(outside)
    (root / "registered" / "test_gone.py").symlink_to(root / "registered" / "missing.py")
    assert problems(root) == [
        "registered/test_gone.py:1:1: is a dangling symbolic link (its target does not exist); "
        "remove it",
        f"registered/test_link.py:1:1: is a symbolic link to {outside.resolve()}, outside the "
        "registered directory: discovery does not follow links out of it; move the file here",
    ]


def test_links_inside_the_registered_dir_are_skipped_and_their_targets_collected_once(tmp_path):
    root = repo(tmp_path, {"registered/sub/test_sub.py": registered_source(OK)})
    (root / "registered" / "alias").symlink_to(root / "registered" / "sub")
    (root / "registered" / "test_alias.py").symlink_to(root / "registered" / "sub" / "test_sub.py")
    (root / "registered" / "loop").symlink_to(root / "registered")  # a cycle, never followed
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "weights.bin").write_bytes(b"\0")  # a link out holding no test: fine
    (root / "registered" / "data").symlink_to(tmp_path / "data", target_is_directory=True)
    collection = collect(load_catalog(root))
    assert collection.problems == []
    assert collection.files == ["registered/sub/test_sub.py", "registered/test_ok.py"]


def test_a_hidden_directory_holding_tests_is_a_problem_and_one_without_is_not(tmp_path):
    root = repo(
        tmp_path,
        {
            "registered/.hidden/deep/test_bad.py": FAILING,
            "registered/.pytest_cache/README.md": "cache\n",
            "registered/__pycache__/test_stale.py": FAILING,
        },
    )
    assert problems(root) == [
        "registered/.hidden:1:1: hidden directory holding files matching test_*.py/bench_*.py "
        "(first: deep/test_bad.py): discovery does not enter hidden directories or "
        "__pycache__; move the files out, or rename the directory",
        "registered/__pycache__:1:1: hidden directory holding files matching "
        "test_*.py/bench_*.py (first: test_stale.py): discovery does not enter hidden "
        "directories or __pycache__; move the files out, or rename the directory",
    ]


def test_the_run_fails_with_exit_2_instead_of_reporting_only_the_visible_file(tmp_path):
    root = repo(tmp_path, {"registered/.hidden/test_bad.py": FAILING})
    result = run(root, str(REPO_ROOT / "run_suite.py"), "--hw", "cpu", "--suite", "unit-cpu")
    assert result.returncode == 2, result.stdout
    assert result.stderr.rstrip().endswith(
        "1 registration problem(s) in 1 file(s); nothing was run"
    )
    assert "summary:" not in result.stdout


def test_an_unlistable_directory_is_a_problem(tmp_path, monkeypatch):
    root = repo(tmp_path, {"registered/locked/test_x.py": registered_source(OK)})
    real_scandir = os.scandir

    def scandir(path):  # the tests run as root, where chmod cannot take the permission away
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    assert problems(root) == [
        "registered/locked:1:1: cannot list this directory (Permission denied): the files in it "
        "are not collected"
    ]


def test_a_non_utf8_file_name_is_a_problem_named_with_an_escape(tmp_path):
    root = repo(tmp_path)
    path = os.path.join(os.fsencode(root / "registered"), b"test_\xff.py")
    with open(path, "w") as handle:
        handle.write(registered_source(OK))
    assert problems(root) == [
        "registered/test_\\xff.py:1:1: the path is not valid UTF-8, so no report could name the "
        "file; rename it"
    ]


@pytest.mark.parametrize("registered_dir", ["../outside", "/etc", "a/../../b", ""])
def test_a_registered_dir_outside_the_root_is_a_catalog_error(tmp_path, registered_dir):
    (tmp_path / "pyproject.toml").write_text(
        catalog_toml(suite_toml("s", "cpu"), registered_dir=registered_dir)
    )
    with pytest.raises(CatalogError, match="registered-dir must be a relative path inside the"):
        load_catalog(tmp_path)


def test_a_registered_dir_that_links_out_of_the_root_is_a_catalog_error(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    root = tmp_path / "repo"
    root.mkdir()
    (root / "pyproject.toml").write_text(catalog_toml(suite_toml("s", "cpu"), registered_dir="t"))
    (root / "t").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(CatalogError, match=r"leads to .*elsewhere, outside the repository"):
        collect(load_catalog(root))


@pytest.mark.parametrize(
    ("expression", "error"),
    [("+".join(["1"] * 3000), "RecursionError"), ("lambda: " * 3000 + "1", "MemoryError")],
)
def test_a_file_nested_too_deeply_to_parse_is_a_problem_naming_it(tmp_path, expression, error):
    source = registered_source(OK) + f"\nX = {expression}\n"
    root = repo(tmp_path, {"registered/test_deep.py": source})
    (found,) = problems(root)
    assert found.startswith(
        f"registered/test_deep.py:1:1: cannot parse: nested too deeply for Python's parser ({error}"
    )
    assert found.endswith(
        "`python registered/test_deep.py` fails the same way: split the expression"
    )
    lint = run(root, "-m", "ci_runner.maintenance", "check-registered-tests")
    assert lint.returncode == 1 and "registered/test_deep.py:1:1: cannot parse" in lint.stderr


def test_a_deep_argument_expression_is_shown_without_recursing(tmp_path):
    deep = "+".join(["1"] * 600)  # parses, but ast.unparse would overflow Python's stack
    source = registered_source(f'register_cpu_ci(est_time={deep}, suite="unit-cpu")')
    root = repo(tmp_path, {"registered/test_deep.py": source})
    assert (
        "registered/test_deep.py:7:26: est_time must be a literal (a positive number of seconds), "
        "got `<an expression nested too deeply to show>`" in " ".join(problems(root))
    )


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
