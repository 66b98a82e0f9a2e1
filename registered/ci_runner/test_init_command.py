"""run_suite.py init: a starting catalog from an existing tree, its conflicts, where it writes and
when it refuses."""

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci
from ci_runner.catalog import load_catalog
from ci_runner.cli import main
from ci_runner.collect import collect

register_cpu_ci(est_time=4, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from helpers_tree import REPO_ROOT  # noqa: E402

MAIN = '\nif __name__ == "__main__":\n    sys.exit(pytest.main([__file__]))\n'
HEAD = "import sys\n\nimport pytest\n\nfrom sglang.test.ci.ci_register import *  # noqa\n\n"
FILES = {
    "test/registered/a/test_one.py": HEAD
    + 'register_cuda_ci(est_time=30, stage="base-b", runner_config="1-gpu-large")\n'
    + 'register_cuda_ci(est_time=60, suite="nightly-kernel-1-gpu", nightly=True)\n'
    + MAIN,
    "test/registered/a/test_two.py": HEAD
    + 'register_cuda_ci(20, "nightly-kernel-1-gpu", True)\n'
    + 'register_amd_ci(est_time=20, suite="nightly-kernel-1-gpu", nightly=True)\n'
    + 'register_cpu_ci(est_time=5, suite="base-a-test-cpu", in_process_group="cpu-group")\n'
    + MAIN,
    "test/registered/b/test_three.py": HEAD
    + 'register_cuda_ci(est_time=40, suite="nightly-kernel-1-gpu")\n'
    + 'register_cuda_ci(est_time=40, stage="base-c", runner_config="8-gpu-h200")\n'
    + 'register_mlx_ci(est_time=4, suite="stage-a-unit-test-mlx")\n'
    + MAIN,
    "test/registered/b/helpers_x.py": "from sglang.test.ci.ci_register import *  # noqa\n"
    'register_cuda_ci(est_time=0, suite="", disabled="helper")\n',
    "test/registered/b/test_silent.py": "VALUE = 1\n",
    "test/registered/b/test_broken.py": HEAD + "register_cuda_ci(est_time=EST, suite='x')\n" + MAIN,
}
PYPROJECT = '[project]\nname = "adopter"\n\n[tool.ruff]\nline-length = 100\n'


def make(root: Path, files=FILES, pyproject: str | None = PYPROJECT) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    if pyproject is not None:
        (root / "pyproject.toml").write_text(pyproject)
    return root


def init(root: Path, *flags: str) -> int:
    return main(["init", "--root", str(root), *flags])


def test_init_appends_a_catalog_that_loads_and_keeps_the_rest(tmp_path, capsys):
    root = make(tmp_path)
    assert init(root) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        f"wrote the catalog to {root.resolve() / 'pyproject.toml'} (the root pyproject.toml): "
        "5 suite(s) on cpu, cuda, mlx, from 9 registration(s) in 6 file(s) under "
        "test/registered/\n"
    )
    text = (root / "pyproject.toml").read_text()
    assert text.startswith(PYPROJECT)
    data = tomllib.loads(text)
    assert data["tool"]["ruff"] == {"line-length": 100}
    table = data["tool"]["ci-runner"]
    assert table["registered-dir"] == "test/registered"
    assert table["suite-template"] == "{stage}-test-{runner_config}"
    assert table["ignored-arguments"] == ["in_process_group"]
    assert table["extra-markers"] == {"register_mlx_ci": "mlx"}
    assert table["file-patterns"] == ["*.py"]
    suites = {s["name"]: s for s in table["suites"]}
    assert suites["base-b-test-1-gpu-large"] == {
        "name": "base-b-test-1-gpu-large",
        "hw": "cuda",
        "nightly": False,
        "gpus-per-file": 1,
    }
    assert suites["base-c-test-8-gpu-h200"]["gpus-per-file"] == "all"
    assert suites["base-a-test-cpu"]["gpus-per-file"] == 0
    assert suites["nightly-kernel-1-gpu"]["nightly"] is True  # 2 of 3 cuda registrations
    assert suites["stage-a-unit-test-mlx"]["hw"] == "mlx"
    catalog = load_catalog(root)
    assert catalog.get("nightly-kernel-1-gpu").hw == "cuda"
    assert (
        "next: python run_suite.py --hw cuda --suite nightly-kernel-1-gpu --nightly --dry-run"
        in out
    )


def test_conflicts_are_printed_and_written_as_comments(tmp_path, capsys):
    root = make(tmp_path)
    assert init(root) == 0
    out = capsys.readouterr().out
    expected = [
        "suite 'nightly-kernel-1-gpu' is registered for cuda (3), amd (1); wrote hw = 'cuda', a "
        "suite has one backend: rename the suite in these registrations: "
        "test/registered/a/test_two.py:8",
        "suite 'nightly-kernel-1-gpu': 2 registration(s) say nightly=True, 1 say False; wrote "
        "nightly = true (the majority); until they agree the runner reports: "
        "test/registered/b/test_three.py:7",
        "ignored-arguments = ['in_process_group']: registrations pass these keywords",
        "1 file(s) match the file patterns but register nothing; the runner reports each until "
        "it registers or is renamed: test/registered/b/test_silent.py",
    ]
    text = (root / "pyproject.toml").read_text()
    for conflict in expected:
        assert f"  - {conflict}" in out
        assert f"#   - {conflict}" in text
    assert (
        "1 registration problem(s) in 1 file(s) that no catalog can fix (the runner reports them "
        "until the files change):\n  test/registered/b/test_broken.py:7:27: est_time must be a "
        "literal"
    ) in out
    problems = {str(p).split(": ", 1)[0] for p in collect(load_catalog(root)).problems}
    assert problems == {
        "test/registered/a/test_two.py:8:1",  # amd registration of a cuda suite
        "test/registered/b/test_three.py:7:1",  # nightly minority
        "test/registered/b/test_silent.py:1:1",
        "test/registered/b/test_broken.py:7:27",
    }


def test_existing_catalog_is_kept_without_force(tmp_path, capsys):
    root = make(tmp_path)
    assert init(root) == 0
    before = (root / "pyproject.toml").read_text()
    capsys.readouterr()
    assert init(root) == 2
    assert capsys.readouterr().err == (
        f"run_suite.py init: error: {root.resolve() / 'pyproject.toml'} already has a "
        "[tool.ci-runner] catalog; pass --update to merge the new draft into it, --force to "
        "replace it, or --output FILE to write the new one elsewhere\n"
    )
    assert (root / "pyproject.toml").read_text() == before


def test_force_replaces_the_catalog_and_nothing_else(tmp_path):
    old_catalog = (
        '[tool.ci-runner]\nregistered-dir = "elsewhere"\n\n[tool.ci-runner.extra-markers]\n'
        'register_tpu_ci = "tpu"\n\n[[tool.ci-runner.suites]]\nname = "old"\nhw = "tpu"\n\n'
    )
    root = make(tmp_path, pyproject=PYPROJECT + "\n" + old_catalog + "[tool.black]\nx = 1\n")
    assert init(root, "--force") == 0
    data = tomllib.loads((root / "pyproject.toml").read_text())
    assert data["tool"]["black"] == {"x": 1} and data["project"] == {"name": "adopter"}
    assert data["tool"]["ci-runner"]["registered-dir"] == "test/registered"
    assert "old" not in {s["name"] for s in data["tool"]["ci-runner"]["suites"]}


def test_output_writes_elsewhere_or_to_stdout(tmp_path, capsys):
    root = make(tmp_path)
    assert init(root, "--output", str(tmp_path / "out" / "catalog.toml")) == 0
    assert (root / "pyproject.toml").read_text() == PYPROJECT
    assert "ci-runner" in tomllib.loads((tmp_path / "out" / "catalog.toml").read_text())["tool"]
    capsys.readouterr()
    assert init(root, "--output", "-") == 0
    captured = capsys.readouterr()
    assert "[tool.ci-runner]" in captured.out and "wrote the catalog to stdout" in captured.err


def test_no_pyproject_yet_creates_one(tmp_path):
    root = make(tmp_path, pyproject=None)
    assert init(root) == 0
    assert load_catalog(root).registered_dir == "test/registered"


def test_custom_suite_template(tmp_path):
    files = {
        "registered/test_a.py": "import sys\nimport pytest\n"
        'register_cuda_ci(est_time=3, area="kernels", gpu="h100")\n' + MAIN
    }
    root = make(tmp_path, files)
    assert init(root, "--suite-template", "{area}-on-{gpu}") == 0
    catalog = load_catalog(root)
    assert catalog.syntax.suite_template.text == "{area}-on-{gpu}"
    assert catalog.get("kernels-on-h100").hw == "cuda"
    assert collect(catalog).problems == []


@pytest.mark.parametrize(
    ("flags", "files", "message"),
    [
        (
            ["--registered-dir", "nope"],
            FILES,
            "--registered-dir nope: not a directory under ",
        ),
        (
            ["--suite-template", "fixed"],
            FILES,
            "suite-template 'fixed' has no {field}",
        ),
        (
            [],
            {"registered/test_a.py": "VALUE = 1\n"},
            "no registration found under registered/ (1 file(s) looked at): nothing to write",
        ),
        ([], {"src/x.py": ""}, "no registered directory found under "),
    ],
)
def test_init_errors_are_one_line(tmp_path, capsys, flags, files, message):
    root = make(tmp_path, files)
    assert init(root, *flags) == 2
    err = capsys.readouterr().err
    assert err.startswith("run_suite.py init: error: ") and message in err
    assert err.count("\n") == 1


def test_unreadable_pyproject_is_refused(tmp_path, capsys):
    root = make(tmp_path, pyproject="[broken\n")
    assert init(root) == 2
    assert "pyproject.toml: invalid TOML: Expected ']'" in capsys.readouterr().err
    assert (root / "pyproject.toml").read_text() == "[broken\n"


def test_run_suite_py_init_end_to_end(tmp_path):
    root = make(tmp_path)
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "run_suite.py"), "init"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("wrote the catalog to ")
    help_text = subprocess.run(
        [sys.executable, str(REPO_ROOT / "run_suite.py"), "init", "--help"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    for flag in ("--root", "--registered-dir", "--suite-template", "--output", "--force"):
        assert flag in help_text


PYTEST_ONLY = 'from ci_runner import register_cpu_ci\n\nregister_cpu_ci(est_time=2, suite="unit")\n\n\ndef test_a():\n    pass\n'


def test_a_tree_without_main_blocks_gets_the_pytest_launcher(tmp_path, capsys):
    root = make(
        tmp_path,
        {"registered/test_a.py": PYTEST_ONLY, "registered/sub/test_b.py": PYTEST_ONLY},
    )
    assert init(root) == 0
    out = capsys.readouterr().out
    assert (
        '[tool.ci-runner.execution] launcher = "pytest": none of the 2 registered file(s) has an '
        '`if __name__ == "__main__":` block that runs its tests, so each runs as python -m pytest '
        "<file>" in out
    )
    catalog = load_catalog(root)
    assert catalog.execution.launcher == "pytest"
    assert collect(catalog).problems == []  # a pytest-launched file needs no __main__ block


def test_a_tree_where_some_files_lack_main_blocks_is_asked(tmp_path, capsys):
    main_file = (
        PYTEST_ONLY.replace("from ci_runner", "import sys\n\nimport pytest\n\nfrom ci_runner")
        + MAIN
    )
    root = make(tmp_path, {"registered/test_a.py": PYTEST_ONLY, "registered/test_b.py": main_file})
    assert init(root) == 0
    out = capsys.readouterr().out
    assert (
        '1 of 2 registered file(s) have no `if __name__ == "__main__":` block that runs their '
        "tests, so `python <file>` runs no test (the runner reports each as no_tests): add the "
        'block, or give their suites launcher = "pytest": registered/test_a.py' in out
    )
    assert load_catalog(root).execution.launcher == "python"


def test_main_help_points_at_init(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "run_suite.py init --help" in textwrap.dedent(out).replace("\n", " ")
    assert "--scoped-validation" in out


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
