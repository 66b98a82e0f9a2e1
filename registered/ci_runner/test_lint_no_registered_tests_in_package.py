"""Lint: a register_*_ci(...) call inside a package (shipped, never collected) fails the commit."""

import sys
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cpu_ci
from ci_runner.maintenance.registration_lints import main_no_tests_in_package as main

sys.path.insert(0, str(Path(__file__).parent))

from testing.tree_builder import catalog_toml, run_script, suite_toml, write_tree

register_cpu_ci(est_time=4, suite="base-a-test-cpu")

ROOT = Path(__file__).resolve().parents[2]
CATALOG = catalog_toml(suite_toml("s", "cuda"), registered_dir="tests/registered")


def make_repo(tmp_path: Path, files: dict[str, str]) -> Path:
    return write_tree(tmp_path, CATALOG, files)


def test_this_repository_is_clean():
    assert main(["--root", str(ROOT)]) == 0


def test_registration_in_package_fails_with_file_line_and_where_tests_belong(tmp_path, capsys):
    make_repo(
        tmp_path,
        {
            "jit_kernel/__init__.py": "",
            "ci_runner/__init__.py": "",
            "jit_kernel/tests/test_x.py": (
                "from ci_runner import register_cuda_ci\n\n"
                'register_cuda_ci(est_time=5, suite="base-b-kernel-unit-1-gpu-large")\n'
            ),
            "jit_kernel/ok.py": "def register_later():\n    return 1\n",
            "ci_runner/markers_doc.py": '"""register_cuda_ci(est_time=1, suite=\'x\') in a docstring"""\n',
        },
    )
    assert main(["--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "error: CI-registered test(s) found inside a package:" in err
    assert (
        "jit_kernel/tests/test_x.py:3:1: registers a CI test (cuda, suite "
        "'base-b-kernel-unit-1-gpu-large')"
    ) in err
    assert "Registered tests belong under tests/registered/" in err
    assert "ok.py" not in err and "markers_doc.py" not in err


def test_catalog_registration_styles_count_in_packages_too(tmp_path, capsys):
    catalog = CATALOG.replace(
        'registered-dir = "tests/registered"\n',
        'registered-dir = "tests/registered"\nsuite-template = "{stage}-test-{runner_config}"\n'
        '[tool.ci-runner.extra-markers]\nregister_mlx_ci = "mlx"\n',
    )
    write_tree(
        tmp_path,
        catalog,
        {
            "pkg/__init__.py": "",
            "pkg/t_mlx.py": 'register_mlx_ci(est_time=1, suite="m")\n',
            "pkg/t_composed.py": 'register_cuda_ci(est_time=1, stage="base-b", runner_config="x")\n',
            "pkg/t_unknown.py": 'register_ppu_ci(est_time=1, suite="p")\n',
        },
    )
    assert main(["--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "pkg/t_mlx.py:1:1: registers a CI test (mlx, suite 'm')" in err
    assert "pkg/t_composed.py:1:1: registers a CI test (cuda, suite 'base-b-test-x')" in err
    assert "pkg/t_unknown.py:1:1: unknown marker register_ppu_ci()" in err


def test_malformed_call_still_counts_as_a_misplaced_test(tmp_path, capsys):
    make_repo(
        tmp_path,
        {
            "ci_runner/__init__.py": "",
            "ci_runner/helpers.py": (
                "from ci_runner import register_cpu_ci\n"
                "SUITE = 'x'\n"
                "register_cpu_ci(est_time=5, suite=SUITE)\n"
                "def f():\n    register_cpu_ci(est_time=5, suite='x')\n"
            ),
            "ci_runner/broken.py": "register_cpu_ci(est_time=5, suite='x'\n",
        },
    )
    assert main(["--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "ci_runner/helpers.py:3:" in err and "suite must be a literal" in err
    assert "ci_runner/helpers.py:5:5: register_cpu_ci() inside function 'f' is not collected" in err
    assert "ci_runner/broken.py:1:" in err and "syntax error" in err


def test_package_option_and_errors(tmp_path, capsys):
    make_repo(
        tmp_path,
        {"mypkg/t.py": "register_npu_ci(1, 'x')\n", "tools/t.py": "register_npu_ci(1, 'x')\n"},
    )
    assert main(["--root", str(tmp_path)]) == 0  # mypkg has no __init__.py: not a package
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    assert main(["--root", str(tmp_path)]) == 1  # found by default now
    assert "mypkg/t.py:1:1" in capsys.readouterr().err
    assert main(["--root", str(tmp_path), "--package", "tools"]) == 1
    assert "tools/t.py:1:1: registers a CI test (npu, suite 'x')" in capsys.readouterr().err
    assert main(["--root", str(tmp_path), "--package", "mypkg"]) == 1
    assert "mypkg/t.py:1:1: registers a CI test (npu, suite 'x')" in capsys.readouterr().err
    assert main(["--root", str(tmp_path), "--package", "nope"]) == 2
    assert "--package nope: not a directory under" in capsys.readouterr().err
    assert main(["--root", str(tmp_path / "missing")]) == 2
    assert "missing: not a directory" in capsys.readouterr().err
    (tmp_path / "pyproject.toml").write_text("[tool.ci-runner]\n")  # broken catalog: still checks
    assert main(["--root", str(tmp_path), "--package", "mypkg"]) == 1
    assert "belong under the registered directory" in capsys.readouterr().err


def test_script_entry_point(tmp_path):
    make_repo(tmp_path, {"src/pkg/__init__.py": "", "src/pkg/t.py": "register_cuda_ci(1, 's')\n"})
    proc = run_script("check_no_registered_tests_in_package.py", tmp_path)
    assert proc.returncode == 1
    assert "src/pkg/t.py:1:1: registers a CI test" in proc.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
