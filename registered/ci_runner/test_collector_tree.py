"""collect(): discovery of a whole tree, entry-point checks and catalog validation."""

import sys
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci
from ci_runner.catalog import CatalogError, load_catalog
from ci_runner.collect import collect, discover_files

sys.path.insert(0, str(Path(__file__).parent))
from helpers_tree import make_repo, registered_source

register_cpu_ci(est_time=3, suite="base-a-test-cpu")

OK = 'register_cpu_ci(est_time=1, suite="unit-cpu")'


def collect_tree(tmp_path, files):
    return collect(load_catalog(make_repo(tmp_path, files)))


def problems_of(tmp_path, files):
    return [str(p) for p in collect_tree(tmp_path, files).problems]


# --- discovery ---------------------------------------------------------------------------------


def test_discovers_test_and_bench_files_recursively_sorted_posix(tmp_path):
    collection = collect_tree(
        tmp_path,
        {
            "registered/z/test_b.py": registered_source(OK),
            "registered/a/bench_x.py": registered_source(OK),
            "registered/test_a.py": registered_source(OK),
            "registered/a/helpers.py": "x = 1\n",
            "registered/a/conftest_like.py": "x = 1\n",
            "registered/__pycache__/cached.py": "x = 1\n",  # not entered; no test file there
            "registered/.hidden/notes.py": "x = 1\n",
            "registered/test_notes.txt": "x\n",
            "other/test_outside.py": "x = 1\n",
        },
    )
    assert collection.files == [
        "registered/a/bench_x.py",
        "registered/test_a.py",
        "registered/z/test_b.py",
    ]
    assert collection.problems == []
    assert collection.ok
    assert [r.path for r in collection.registrations] == collection.files


def test_missing_registered_dir_is_a_catalog_error(tmp_path):
    root = make_repo(tmp_path, {})
    (root / "registered").rmdir()
    with pytest.raises(CatalogError) as info:
        discover_files(load_catalog(root))
    assert str(info.value).startswith("registered-dir 'registered' from [tool.ci-runner]")
    assert "is not a directory" in str(info.value)


NO_REG = (
    "no register_<backend>_ci(...) call: every test_*.py/bench_*.py file under the registered "
    "directory must register (rename helper modules so they do not start with test_ or bench_)"
)


@pytest.mark.parametrize(
    "source",
    ["def test_x():\n    pass\n", "# register_cpu_ci is mentioned only in a comment\nx = 1\n"],
    ids=["no-marker-text", "marker-text-but-no-call"],
)
def test_file_without_registration_is_an_error(tmp_path, source):
    assert problems_of(tmp_path, {"registered/test_x.py": source}) == [
        f"registered/test_x.py:1:1: {NO_REG}"
    ]


def test_syntax_error_is_reported_with_its_position(tmp_path):
    (problem,) = problems_of(tmp_path, {"registered/bench_x.py": f"{OK}\nif (:\n"})
    assert problem.startswith("registered/bench_x.py:2:")
    assert ": syntax error: " in problem


def test_non_utf8_file_is_reported_not_raised(tmp_path):
    root = make_repo(tmp_path, {})
    (root / "registered" / "test_x.py").write_bytes(b'x = "\xff"\n' + OK.encode() + b"\n")
    (problem,) = [str(p) for p in collect(load_catalog(root)).problems]
    assert problem.startswith("registered/test_x.py:1:")
    assert "syntax error: (unicode error) 'utf-8' codec can't decode byte 0xff" in problem


# --- the __main__ block ------------------------------------------------------------------------


def test_enabled_registration_without_main_block_is_an_error(tmp_path):
    assert problems_of(tmp_path, {"registered/test_x.py": f"import x\n{OK}\n"}) == [
        'registered/test_x.py:2:1: enabled registration but no `if __name__ == "__main__":` '
        "block, so `python registered/test_x.py` would run no test; end the file with: "
        'if __name__ == "__main__": sys.exit(pytest.main([__file__, "-v"]))'
    ]


def test_disabled_only_file_needs_no_main_block(tmp_path):
    source = 'register_cpu_ci(est_time=1, suite="unit-cpu", disabled="needs 2 GPUs")\n'
    assert problems_of(tmp_path, {"registered/test_x.py": source}) == []


@pytest.mark.parametrize(
    "main,runner,line,col",
    [
        ('if __name__ == "__main__":\n    pytest.main([__file__])\n', "pytest.main", 10, 5),
        (
            'if __name__ == "__main__":\n    code = pytest.main([__file__])\n    print(code)\n',
            "pytest.main",
            10,
            12,
        ),
        (
            'if __name__ == "__main__":\n    unittest.main(exit=False)\n',
            "unittest.main(exit=False)",
            10,
            5,
        ),
    ],
    ids=["bare", "assigned-not-exited", "unittest-exit-false"],
)
def test_main_block_that_drops_the_exit_code_is_an_error(tmp_path, main, runner, line, col):
    wrapped = runner.split("(")[0]
    assert problems_of(tmp_path, {"registered/test_x.py": registered_source(OK, main=main)}) == [
        f"registered/test_x.py:{line}:{col}: the exit code of {runner} is dropped, so the file exits "
        f"0 even when tests fail; wrap it: sys.exit({wrapped}(...))"
    ]


def test_main_block_that_calls_nothing_is_an_error(tmp_path):
    source = registered_source(OK, main='if __name__ == "__main__":\n    pass\n')
    assert problems_of(tmp_path, {"registered/test_x.py": source}) == [
        "registered/test_x.py:9:1: the __main__ block calls nothing, so no test runs; end the "
        'file with: if __name__ == "__main__": sys.exit(pytest.main([__file__, "-v"]))'
    ]


@pytest.mark.parametrize(
    "main",
    [
        'if __name__ == "__main__":\n    sys.exit(pytest.main([__file__, "-v"]))\n',
        'if "__main__" == __name__:\n    sys.exit(pytest.main([__file__]))\n',
        'if __name__ == "__main__":\n    raise SystemExit(pytest.main([__file__]))\n',
        'if __name__ == "__main__":\n    rc = pytest.main([__file__])\n    sys.exit(rc)\n',
        'if __name__ == "__main__":\n    sys.exit((rc := pytest.main([__file__])))\n',
        'if __name__ == "__main__":\n    unittest.main()\n',
        'if __name__ == "__main__":\n    run_benchmarks()\n',
    ],
    ids=["sys-exit", "reversed", "raise", "via-name", "walrus", "unittest", "custom-main"],
)
def test_main_blocks_that_propagate_the_exit_code_are_accepted(tmp_path, main):
    source = registered_source(OK, main=main)
    assert problems_of(tmp_path, {"registered/test_x.py": source}) == []


# --- catalog validation ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "registration,message",
    [
        (
            'register_cpu_ci(est_time=1, suite="unit-cpx")',
            "unknown cpu suite 'unit-cpx'; did you mean 'unit-cpu'?",
        ),
        (
            'register_cpu_ci(est_time=1, suite="zzz")',
            "unknown cpu suite 'zzz'; known cpu suites: unit-cpu, extra-cpu",
        ),
        (
            'register_npu_ci(est_time=1, suite="npu-suite")',
            "unknown npu suite 'npu-suite'; the catalog defines no npu suite",
        ),
        (
            'register_cpu_ci(est_time=1, suite="old-unit-cpu")',
            "suite 'old-unit-cpu' was renamed to 'unit-cpu'; update the registration",
        ),
        (
            'register_cuda_ci(est_time=1, suite="unit-cpu")',
            "suite 'unit-cpu' is a cpu suite, but register_cuda_ci() registers for cuda; "
            "use register_cpu_ci()",
        ),
        (
            'register_cuda_ci(est_time=1, suite="nightly-1-gpu")',
            "suite 'nightly-1-gpu' is a nightly suite: add nightly=True to register_cuda_ci()",
        ),
        (
            'register_cuda_ci(est_time=1, suite="unit-1-gpu", nightly=True)',
            "suite 'unit-1-gpu' is a per-commit suite: remove nightly=True "
            "(or register for a nightly suite)",
        ),
        (
            'register_cpu_ci(est_time=1, suite="unit-cpux", disabled="still validated")',
            "unknown cpu suite 'unit-cpux'; did you mean 'unit-cpu'?",
        ),
    ],
)
def test_registration_checked_against_the_catalog(tmp_path, registration, message):
    source = registered_source(
        registration,
        header="import sys\nimport pytest\nfrom ci_runner import register_cpu_ci, register_npu_ci, register_cuda_ci\n",
    )
    assert problems_of(tmp_path, {"registered/test_x.py": source}) == [
        f"registered/test_x.py:5:1: {message}"
    ]


def test_every_problem_in_the_tree_is_reported_in_one_run_sorted(tmp_path):
    problems = problems_of(
        tmp_path,
        {
            "registered/test_b.py": registered_source('register_cpu_ci(est_time=-1, suite="x")'),
            "registered/test_a.py": "x = 1\n",
            "registered/sub/test_c.py": registered_source(
                'register_cpu_ci(est_time=1, suite="nope")',
                "if True:\n    register_cpu_ci(1, 'unit-cpu')",
            ),
            "registered/test_ok.py": registered_source(OK),
        },
    )
    paths = [p.split(":")[0] for p in problems]
    assert paths == [
        "registered/sub/test_c.py",
        "registered/sub/test_c.py",
        "registered/test_a.py",
        "registered/test_b.py",
    ]
    assert "unknown cpu suite 'nope'" in problems[0]
    assert "inside an if block" in problems[1]
    assert "est_time must be a finite number of seconds, 0 or more" in problems[3]


def test_valid_registrations_survive_next_to_invalid_ones(tmp_path):
    collection = collect_tree(
        tmp_path,
        {"registered/test_x.py": registered_source(OK, "register_cpu_ci(est_time=X, suite='s')")},
    )
    assert [r.suite for r in collection.registrations] == ["unit-cpu"]
    assert len(collection.problems) == 1


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))


def test_parallel_and_serial_collection_agree(tmp_path):
    files = {
        f"registered/d{i % 7}/test_{i:04d}.py": registered_source(
            f'register_cpu_ci(est_time={i % 50 + 1}, suite="unit-cpu")'
        )
        for i in range(600)
    }
    files["registered/d1/test_bad.py"] = registered_source(
        'register_cpu_ci(est_time=-1, suite="x")'
    )
    files["registered/d2/test_none.py"] = "x = 1\n"
    catalog = load_catalog(make_repo(tmp_path, files))
    serial = collect(catalog, workers=1)
    parallel = collect(catalog, workers=2)
    assert serial == parallel
    assert len(serial.files) == 602 and len(serial.registrations) == 600
    assert [p.path for p in serial.problems] == [
        "registered/d1/test_bad.py",
        "registered/d2/test_none.py",
    ]
