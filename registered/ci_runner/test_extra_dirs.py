"""``extra-dirs``: directories collected beside registered-dir (issue 24, SGLang's runner at
d0c38329b2 also globs kernel tests and benchmarks next to the kernel source).

Generated trees only; the runner file beside them is a few lines of our own carrying the facts
``init`` reads (it uses collect_tests, filters on ``t.nightly == nightly`` and globs its
directories). Expected selections are written out by hand.
"""

import json
import sys
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci
from ci_runner.adoption.runner_globs import collected_dirs
from ci_runner.catalog import CatalogError, load_catalog
from ci_runner.catalog.extra_dirs import ExtraDir
from ci_runner.cli import main

register_cpu_ci(est_time=8, suite="base-a-test-cpu")

REG = "test/registered"
KERNELS = "src/kern"
MAIN = '\n\nif __name__ == "__main__":\n    sys.exit(0)\n'
RUNNER = """import glob
import os

from sglang.test.ci.ci_register import collect_tests

script_dir = os.path.dirname(os.path.abspath(__file__))
repo_root = os.path.dirname(script_dir)
kernel_dir = os.path.join(repo_root, "src", "kern")


def run(hw, suite, nightly):
    files = glob.glob(os.path.join(script_dir, "registered", "**", "*.py"), recursive=True)
    files += glob.glob(os.path.join(kernel_dir, "tests", "**", "test_*.py"), recursive=True)
    files += glob.glob(os.path.join(kernel_dir, "benchmark", "**", "bench_*.py"), recursive=True)
    files += glob.glob(os.path.join(repo_root, "gone", "**", "test_*.py"), recursive=True)
    tests = collect_tests(files)
    return [t for t in tests if t.backend == hw and t.effective_suite == suite and t.nightly == nightly]
"""


def source(registration: str) -> str:
    return f"import sys\n\n{registration}{MAIN}"


TREE = {
    "test/run_suite.py": RUNNER,
    f"{REG}/cpu/test_a.py": source('register_cpu_ci(est_time=5, suite="base-a-test-cpu")'),
    f"{KERNELS}/tests/norm/test_norm.py": source(
        'register_cuda_ci(est_time=30, suite="kernel-unit")'
    ),
    f"{KERNELS}/tests/helpers.py": "VALUE = 1\n",  # not test_*.py: never collected
    f"{KERNELS}/benchmark/bench_norm.py": source(
        'register_cuda_ci(est_time=40, suite="kernel-bench")'
    ),
    f"{KERNELS}/benchmark/test_not_a_bench.py": "VALUE = 2\n",  # bench_*.py only there
}


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def dry(root: Path, capsys, hw: str, suite: str) -> tuple[int, dict | None, str]:
    rc = main(["--root", str(root), "--hw", hw, "--suite", suite, "--dry-run", "--format", "json"])
    captured = capsys.readouterr()
    return rc, json.loads(captured.out) if rc == 0 else None, captured.err


def test_init_reads_the_runners_globs_and_the_suites_select_those_files(tmp_path, capsys):
    root = write(tmp_path, TREE)
    assert main(["init", "--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert (
        f"extra-dirs: test/run_suite.py also collects {KERNELS}/tests/**/test_*.py (1 file(s))"
        in out
    )
    assert "gone/**/test_*.py, not a directory here: not collected" in out
    catalog = load_catalog(root)
    assert catalog.extra_dirs == (
        ExtraDir(f"{KERNELS}/tests", ("test_*.py",)),
        ExtraDir(f"{KERNELS}/benchmark", ("bench_*.py",)),
    )
    rc, unit, _ = dry(root, capsys, "cuda", "kernel-unit")
    assert rc == 0
    assert [f["path"] for f in unit["files"]] == [f"{KERNELS}/tests/norm/test_norm.py"]
    rc, bench, _ = dry(root, capsys, "cuda", "kernel-bench")
    assert rc == 0
    assert [f["path"] for f in bench["files"]] == [f"{KERNELS}/benchmark/bench_norm.py"]
    rc, cpu, _ = dry(root, capsys, "cpu", "base-a-test-cpu")
    assert rc == 0 and [f["path"] for f in cpu["files"]] == [f"{REG}/cpu/test_a.py"]


def test_an_extra_dir_file_that_registers_nothing_is_reported_by_its_path(tmp_path, capsys):
    root = write(tmp_path, TREE)
    assert main(["init", "--root", str(root)]) == 0
    capsys.readouterr()
    write(root, {f"{KERNELS}/tests/test_silent.py": "VALUE = 3\n"})
    rc, _, err = dry(root, capsys, "cuda", "kernel-unit")
    assert rc == 2
    assert (
        f"{KERNELS}/tests/test_silent.py:1:1: no register_<backend>_ci(...) call: every "
        f"test_*.py file under {KERNELS}/tests/ (extra-dirs) must register" in err
    )


def test_the_glob_reader_resolves_paths_and_skips_what_it_cannot_read():
    text = RUNNER + (
        'other = glob.glob("registered/**/bench_*.py", recursive=True)\n'
        'flat = glob.glob(os.path.join(repo_root, "flat", "test_*.py"))\n'
        "twice = 1\ntwice = 2\n"
        'odd = glob.glob(os.path.join(twice, "**", "test_*.py"), recursive=True)\n'
    )
    assert collected_dirs(text, "test/run_suite.py") == [
        ("test/registered", "*.py"),
        ("src/kern/tests", "test_*.py"),
        ("src/kern/benchmark", "bench_*.py"),
        ("gone", "test_*.py"),
        ("test/registered", "bench_*.py"),  # a literal path counts from the runner's directory
    ]
    assert collected_dirs("def (", "test/run_suite.py") == []


BAD = [
    ('extra-dirs = "src"', "extra-dirs: must be a list of tables"),
    ('extra-dirs = ["src"]', "extra-dirs[0]: must be a table"),
    ('extra-dirs = [{path = "src"}]', "extra-dirs[0]: needs exactly the keys path, files; missing: files"),
    ('extra-dirs = [{path = "src", files = ["t*.py"], glob = 1}]',
     "extra-dirs[0]: needs exactly the keys path, files; unknown: glob"),
    ('extra-dirs = [{path = "../x", files = ["test_*.py"]}]',
     "extra-dirs[0]: path must be a directory relative to the repository root (not absolute, no "
     "'..', no glob characters), got '../x'"),
    ('extra-dirs = [{path = "/abs", files = ["test_*.py"]}]', "got '/abs'"),
    ('extra-dirs = [{path = "src/*", files = ["test_*.py"]}]', "got 'src/*'"),
    ('extra-dirs = [{path = "src", files = []}]', "extra-dirs[0]: files must be a non-empty list"),
    ('extra-dirs = [{path = "src", files = ["**/test_*.py"]}]', "got ['**/test_*.py']"),
    ('extra-dirs = [{path = "src", files = ["test_*.txt"]}]', "got ['test_*.txt']"),
    ('extra-dirs = [{path = "registered/sub", files = ["test_*.py"]}]',
     "extra-dirs[0]: path 'registered/sub' overlaps the registered-dir 'registered'; a file "
     "would be collected twice"),
    ('extra-dirs = [{path = "src", files = ["test_*.py"]}, {path = "src/a", files = ["b_*.py"]}]',
     "extra-dirs[1]: path 'src/a' overlaps the extra-dirs path 'src'"),
]  # fmt: skip


@pytest.mark.parametrize(("line", "message"), BAD)
def test_a_bad_extra_dirs_entry_names_file_entry_and_key(tmp_path, line, message):
    (tmp_path / "registered").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.ci-runner]\n{line}\n\n[[tool.ci-runner.suites]]\nname = "a"\nhw = "cpu"\n'
    )
    with pytest.raises(CatalogError) as info:
        load_catalog(tmp_path)
    assert str(info.value).startswith("pyproject.toml [tool.ci-runner] extra-dirs")
    assert message in str(info.value)


def test_a_missing_extra_dir_is_a_catalog_error_naming_file_and_key(tmp_path, capsys):
    write(tmp_path, {"registered/test_a.py": source('register_cpu_ci(est_time=1, suite="a")')})
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ci-runner]\nextra-dirs = [{path = "src/tests", files = ["test_*.py"]}]\n\n'
        '[[tool.ci-runner.suites]]\nname = "a"\nhw = "cpu"\n'
    )
    rc, _, err = dry(tmp_path, capsys, "cpu", "a")
    assert rc == 2
    assert (
        "pyproject.toml extra-dirs[0] path 'src/tests' from [tool.ci-runner] is not a directory "
        f"under {tmp_path}" in err
    )


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
