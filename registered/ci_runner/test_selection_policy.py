"""[tool.ci-runner.policy]: each of SGLang's selection rules (issue 24) on a generated tree, under
the strict policy (this project's) and the compatible one ``init`` writes for SGLang's runner.

The trees are written here; the runner beside them is a few lines of our own that only carry
the facts ``init`` reads (it uses ci_register, filters on ``t.nightly == nightly``, names its
suite tables). Expected selections are written out by hand from the rules, not computed by us.
"""

import json
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)

from ci_runner import register_cpu_ci
from ci_runner.adoption.catalog_text import catalog_text
from ci_runner.adoption.draft import draft_catalog
from ci_runner.catalog import CatalogError, load_catalog
from ci_runner.catalog.location import CatalogLocation
from ci_runner.catalog.policy import COMPATIBLE, STRICT
from ci_runner.cli import main

register_cpu_ci(est_time=8, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from testing.tree_builder import write_tree  # noqa: E402

IMPORT = "import sys\n\nfrom sglang.test.ci.ci_register import *  # noqa\n\n"
MAIN = '\n\nif __name__ == "__main__":\n    sys.exit(0)\n'
REG = "test/registered"
RUNNER = """from sglang.test.ci.ci_register import HWBackend, collect_tests

HW_MAPPING = {"cpu": HWBackend.CPU, "cuda": HWBackend.CUDA, "amd": HWBackend.AMD}
PER_COMMIT_SUITES = {HWBackend.CPU: ["base-a-test-cpu"], HWBackend.CUDA: [%s]}


def filter_tests(tests, hw, suite, nightly):
    return [t for t in tests if t.backend == hw and t.effective_suite == suite and t.nightly == nightly]
"""


def source(*registrations: str, main: str = MAIN) -> str:
    return IMPORT + "\n".join(registrations) + main


def sglang_tree(root: Path, files: dict[str, str], table: tuple[str, ...] = ()) -> Path:
    """A tree shaped like SGLang's: test/run_suite.py (ours, see the module doc) + files."""
    runner = RUNNER % ", ".join(json.dumps(name) for name in table)
    write_tree(root, "", {"test/run_suite.py": runner, **files})
    (root / "pyproject.toml").unlink()
    return root


def init(root: Path, capsys) -> str:
    assert main(["init", "--root", str(root)]) == 0
    return capsys.readouterr().out


def strict(root: Path) -> None:
    """The catalog init writes, with the strict policy instead: every suite listed, no policy
    table (so no suites-from)."""
    draft = draft_catalog(root, REG)
    draft.policy = STRICT
    draft.tables = [t for t in draft.tables if t.name != "policy"]
    location = CatalogLocation(root / "ci-runner.toml", True)
    location.path.write_text(catalog_text(draft, location))


SUITES_FROM = replace(COMPATIBLE, suites_from="test/run_suite.py")


def dry(root: Path, capsys, hw: str, suite: str, *flags: str) -> tuple[int, dict | None, str]:
    argv = ["--root", str(root), "--hw", hw, "--suite", suite, *flags, "--dry-run"]
    rc = main([*argv, "--format", "json"])
    captured = capsys.readouterr()
    return rc, json.loads(captured.out) if rc == 0 else None, captured.err


def files(document: dict) -> list[str]:
    return sorted(f["path"].removeprefix(f"{REG}/") for f in document["files"])


def disabled(document: dict) -> list[str]:
    return sorted(d["path"].removeprefix(f"{REG}/") for d in document["disabled"])


# --- rule 1: nightly is a filter per registration ----------------------------------------------

CADENCES = {
    f"{REG}/cpu/test_commit.py": source('register_cpu_ci(est_time=5, suite="base-a-test-cpu")'),
    f"{REG}/cpu/test_both.py": source(
        'register_cpu_ci(est_time=5, suite="base-a-test-cpu")',
        'register_cpu_ci(est_time=9, suite="base-a-test-cpu", nightly=True)',
    ),
    f"{REG}/cpu/test_nightly.py": source(
        'register_cpu_ci(est_time=7, suite="base-a-test-cpu", nightly=True)'
    ),
    f"{REG}/gpu/test_sched.py": source(
        'register_cuda_ci(est_time=60, stage="nightly", runner_config="8-gpu-h200")'
    ),
}


def test_nightly_per_registration_selects_by_each_flag(tmp_path, capsys):
    root = sglang_tree(tmp_path, CADENCES)
    out = init(root, capsys)
    assert "t.nightly == nightly" in out and "1 suite(s) hold both cadences" in out
    assert load_catalog(root).policy == SUITES_FROM
    rc, doc, _ = dry(root, capsys, "cpu", "base-a-test-cpu")
    assert rc == 0 and files(doc) == ["cpu/test_both.py", "cpu/test_commit.py"]
    rc, doc, _ = dry(root, capsys, "cpu", "base-a-test-cpu", "--nightly")
    assert rc == 0 and files(doc) == ["cpu/test_both.py", "cpu/test_nightly.py"]
    # the stage="nightly" form: selected by name, without --nightly
    rc, doc, _ = dry(root, capsys, "cuda", "nightly-test-8-gpu-h200")
    assert rc == 0 and files(doc) == ["gpu/test_sched.py"]
    rc, doc, err = dry(root, capsys, "cuda", "nightly-test-8-gpu-h200", "--nightly")
    assert rc == 0 and files(doc) == [] and "notice: no enabled file" in err


def test_strict_policy_reports_a_mixed_cadence_suite(tmp_path, capsys):
    root = sglang_tree(tmp_path, CADENCES)
    init(root, capsys)
    strict(root)
    assert load_catalog(root).policy == STRICT
    rc, _, err = dry(root, capsys, "cpu", "base-a-test-cpu")
    assert rc == 2
    assert "suite 'base-a-test-cpu' is a per-commit suite: remove nightly=True" in err


# --- rule 2: suite names are per backend --------------------------------------------------------

SHARED = {
    f"{REG}/test_cuda_a.py": source(
        'register_cuda_ci(est_time=5, suite="base-b-test-2-gpu-large")'
    ),
    f"{REG}/test_cuda_b.py": source(
        'register_cuda_ci(est_time=6, suite="base-b-test-2-gpu-large")'
    ),
    f"{REG}/test_amd.py": source('register_amd_ci(est_time=7, suite="base-b-test-2-gpu-large")'),
}


def test_suite_names_per_backend_keep_each_backend_to_its_files(tmp_path, capsys):
    root = sglang_tree(tmp_path, SHARED)
    init(root, capsys)
    catalog = load_catalog(root)
    assert catalog.suite_for("base-b-test-2-gpu-large", "amd").hw == "amd"
    assert catalog.suite_for("base-b-test-2-gpu-large", "cuda").hw == "cuda"
    rc, doc, _ = dry(root, capsys, "amd", "base-b-test-2-gpu-large")
    assert rc == 0 and files(doc) == ["test_amd.py"]
    rc, doc, _ = dry(root, capsys, "cuda", "base-b-test-2-gpu-large")
    assert rc == 0 and files(doc) == ["test_cuda_a.py", "test_cuda_b.py"]


def test_strict_policy_refuses_one_name_on_two_backends(tmp_path, capsys):
    root = sglang_tree(tmp_path, SHARED)
    init(root, capsys)
    with pytest.raises(CatalogError, match="suite name 'base-b-test-2-gpu-large' is used twice"):
        strict(root)
        load_catalog(root)


# --- rule 3: est_time=0 ---------------------------------------------------------------------------


@pytest.mark.parametrize("keep_strict", [False, True])
def test_est_time_zero_is_valid_and_planned(tmp_path, capsys, keep_strict):
    tree = {
        f"{REG}/test_zero.py": source('register_cpu_ci(est_time=0, suite="base-a-test-cpu")'),
        f"{REG}/test_ten.py": source('register_cpu_ci(est_time=10, suite="base-a-test-cpu")'),
    }
    root = sglang_tree(tmp_path, tree)
    init(root, capsys)
    if keep_strict:
        strict(root)
    rc, doc, _ = dry(
        root, capsys, "cpu", "base-a-test-cpu", "--auto-partition-id", "0",
        "--auto-partition-size", "2",
    )  # fmt: skip
    assert rc == 0 and files(doc) == ["test_ten.py", "test_zero.py"]
    assert {f["path"].rsplit("/", 1)[-1]: f["est_time"] for f in doc["files"]} == {
        "test_ten.py": 10,
        "test_zero.py": 0,
    }
    assert doc["makespan"] == 10 and sorted(len(s["files"]) for s in doc["shards"]) == [1, 1]


# --- rule 4: an empty selection is a notice ------------------------------------------------------

EMPTY = {
    f"{REG}/test_cpu.py": source('register_cpu_ci(est_time=5, suite="base-a-test-cpu")'),
    f"{REG}/test_off.py": source(
        'register_cuda_ci(est_time=5, suite="base-b-test-1-gpu-small", disabled="flaky")'
    ),
    f"{REG}/npu/test_placeholder.py": source(
        'register_amd_ci(est_time=0, suite="", nightly=True, disabled="not yet")'
    ),
}


def test_empty_selection_is_a_notice_in_console_and_step_summary(tmp_path, capsys, monkeypatch):
    root = sglang_tree(tmp_path / "repo", EMPTY, table=("base-b-kernel-unit-test-8-gpu-h200",))
    init(root, capsys)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    # a suite of the runner's table that no file registers yet (pr-test-jit-kernel.yml's case)
    rc, doc, err = dry(root, capsys, "cuda", "base-b-kernel-unit-test-8-gpu-h200")
    assert rc == 0 and files(doc) == []
    notice = (
        "notice: no enabled file registered for --hw cuda --suite "
        "base-b-kernel-unit-test-8-gpu-h200; nothing to run, exit 0"
    )
    assert notice in err
    assert notice in summary.read_text()
    # only disabled files: listed, exit 0
    rc, doc, err = dry(root, capsys, "cuda", "base-b-test-1-gpu-small")
    assert rc == 0 and files(doc) == [] and disabled(doc) == ["test_off.py"]
    assert "(1 disabled, listed as skipped)" in err
    # --suite '': the suite="" placeholders, listed as skipped
    rc, doc, err = dry(root, capsys, "amd", "", "--nightly")
    assert rc == 0 and disabled(doc) == ["npu/test_placeholder.py"] and "--suite ''" in err
    # a name the runner's tables lack: a warning with a did-you-mean, and exit 0, as upstream
    rc, doc, err = dry(root, capsys, "cuda", "base-b-kernel-unit-test-8-gpu-h20")
    assert rc == 0 and files(doc) == []
    assert (
        "warning: --suite 'base-b-kernel-unit-test-8-gpu-h20': test/run_suite.py lists no such "
        "cuda suite (did you mean 'base-b-kernel-unit-test-8-gpu-h200'?)"
    ) in err


def test_strict_policy_makes_an_empty_selection_an_error(tmp_path, capsys):
    root = sglang_tree(tmp_path, EMPTY, table=("base-b-kernel-unit-test-8-gpu-h200",))
    init(root, capsys)
    strict(root)
    rc, _, err = dry(root, capsys, "cuda", "base-b-test-1-gpu-small")
    assert rc == 2 and "selects no enabled file (1 disabled)" in err
    rc, _, err = dry(root, capsys, "amd", "", "--nightly")
    assert rc == 2 and "--suite '' names no suite" in err


# --- rule 5: a marker bound by assignment ---------------------------------------------------------

BOUND = {
    f"{REG}/test_bound.py": "import sys\n\ndef _load(name):\n    return __import__(name)\n\n"
    'register_cpu_ci = _load("ci_register").register_cpu_ci\n'
    'register_cpu_ci(est_time=0, suite="base-a-test-cpu")\n' + MAIN,
    f"{REG}/test_alias.py": "import sys\n\nfrom ci_register import register_cuda_ci as reg\n\n"
    'reg(est_time=3, suite="base-b-test-1-gpu-small")\n' + MAIN,
    f"{REG}/test_broken.py": source(
        'register_cuda_ci(est_time=-1, suite="base-b-test-1-gpu-small")',
        'register_cpu_ci(est_time=1, suite="base-a-test-cpu")',
    ),
}


def test_a_marker_bound_by_assignment_is_collected_and_scoped(tmp_path, capsys):
    root = sglang_tree(tmp_path, BOUND)
    init(root, capsys)
    strict(root)
    rc, _, err = dry(root, capsys, "cpu", "base-a-test-cpu", "--scoped-validation")
    assert rc == 2 and "test_broken.py" in err and "test_bound.py" not in err
    (root / REG / "test_broken.py").unlink()
    rc, doc, _ = dry(root, capsys, "cpu", "base-a-test-cpu")
    assert rc == 0 and files(doc) == ["test_bound.py"]
    rc, doc, _ = dry(root, capsys, "cuda", "base-b-test-1-gpu-small")
    assert rc == 0 and files(doc) == ["test_alias.py"]


def test_scoped_validation_does_not_count_the_assignment_as_every_suite(tmp_path, capsys):
    tree = dict(BOUND)
    tree[f"{REG}/test_bound.py"] = tree[f"{REG}/test_bound.py"].replace("est_time=0", "est_time=-1")
    del tree[f"{REG}/test_broken.py"]
    root = sglang_tree(tmp_path, tree)
    init(root, capsys)
    rc, doc, err = dry(root, capsys, "cuda", "base-b-test-1-gpu-small", "--scoped-validation")
    assert rc == 0 and files(doc) == ["test_alias.py"] and "test_bound.py" in err


# --- stricter checks: warnings under the compatible policy, errors under strict ------------------


def test_strict_checks_are_warnings_under_the_compatible_policy(tmp_path, capsys):
    tree = {
        f"{REG}/test_no_main.py": IMPORT + 'register_cpu_ci(est_time=5, suite="base-a-test-cpu")\n',
        f"{REG}/test_ok.py": source('register_cpu_ci(est_time=5, suite="base-a-test-cpu")'),
    }
    root = sglang_tree(tmp_path, tree)
    init(root, capsys)
    rc, doc, err = dry(root, capsys, "cpu", "base-a-test-cpu")
    assert rc == 0 and files(doc) == ["test_no_main.py", "test_ok.py"]
    assert "warning: test/registered/test_no_main.py:5:1: enabled registration but no" in err
    strict(root)
    rc, _, err = dry(root, capsys, "cpu", "base-a-test-cpu")
    assert rc == 2 and "1 registration problem(s) in 1 file(s); nothing was run" in err


# --- older vocabularies: init + dry run on each ---------------------------------------------------

VOCABULARIES = {
    # 2026-03: before "unify PR test suite naming"; names before the -test- infix
    "march": (
        {
            f"{REG}/test_a.py": source(
                'register_cuda_ci(est_time=5, suite="stage-b-test-small-1-gpu")'
            ),
            f"{REG}/test_b.py": source(
                'register_amd_ci(est_time=5, suite="stage-b-test-small-1-gpu")',
                'register_cpu_ci(est_time=2, suite="stage-a-cpu-only", nightly=True)',
            ),
            f"{REG}/test_c.py": source('register_cpu_ci(est_time=2, suite="stage-a-cpu-only")'),
        },
        [
            ("cuda", "stage-b-test-small-1-gpu", False, ["test_a.py"]),
            ("amd", "stage-b-test-small-1-gpu", False, ["test_b.py"]),
            ("cpu", "stage-a-cpu-only", False, ["test_c.py"]),
            ("cpu", "stage-a-cpu-only", True, ["test_b.py"]),
        ],
    ),
    # 2026-01: no stage=/runner_config=, legacy nightly-* suites with nightly=True
    "january": (
        {
            f"{REG}/test_a.py": source(
                'register_cuda_ci(est_time=5, suite="nightly-8-gpu-common", nightly=True)'
            ),
            f"{REG}/test_b.py": source('register_amd_ci(5, "stage-a-test-1")'),
            f"{REG}/test_c.py": source('register_cuda_ci(5, "stage-a-test-1")'),
        },
        [
            ("cuda", "nightly-8-gpu-common", True, ["test_a.py"]),
            ("cuda", "nightly-8-gpu-common", False, []),
            ("amd", "stage-a-test-1", False, ["test_b.py"]),
            ("cuda", "stage-a-test-1", False, ["test_c.py"]),
        ],
    ),
    # 2026-08-09: stage="nightly" + runner_config, beside base-* composed names
    "stage-nightly": (
        {
            f"{REG}/test_a.py": source(
                'register_cuda_ci(est_time=5, stage="nightly", runner_config="8-gpu-h200")',
                'register_cuda_ci(est_time=5, stage="base-b", runner_config="1-gpu-large")',
            ),
        },
        [
            ("cuda", "nightly-test-8-gpu-h200", False, ["test_a.py"]),
            ("cuda", "base-b-test-1-gpu-large", False, ["test_a.py"]),
            ("cuda", "base-b-test-1-gpu-large", True, []),
        ],
    ),
}


@pytest.mark.parametrize("vocabulary", sorted(VOCABULARIES))
def test_each_suite_vocabulary_selects_as_its_runner_does(tmp_path, capsys, vocabulary):
    tree, expected = VOCABULARIES[vocabulary]
    root = sglang_tree(tmp_path, tree)
    init(root, capsys)
    for hw, suite, nightly, wanted in expected:
        rc, doc, err = dry(root, capsys, hw, suite, *(["--nightly"] if nightly else []))
        assert (rc, files(doc) if doc else None) == (0, wanted), (hw, suite, nightly, err)


# --- init without a runner, exclude-files, and the table's errors --------------------------------


def test_a_tree_without_a_registry_runner_keeps_the_strict_policy(tmp_path, capsys):
    root = sglang_tree(tmp_path, CADENCES)
    (root / "test/run_suite.py").write_text("print('no registry here')\n")
    init(root, capsys)
    assert "policy" not in tomllib.loads((root / "ci-runner.toml").read_text())
    assert load_catalog(root).policy == STRICT


def test_init_excludes_files_that_register_nothing(tmp_path, capsys):
    tree = dict(CADENCES)
    tree[f"{REG}/cpu/utils.py"] = "HELPER = 1\n"  # collected by *.py, registers nothing
    tree[f"{REG}/cpu/fixtures.py"] = source('register_cpu_ci(est_time=1, suite="base-a-test-cpu")')
    root = sglang_tree(tmp_path, tree)
    out = init(root, capsys)
    assert "exclude-files: 1 file(s) register nothing" in out
    catalog = load_catalog(root)
    assert catalog.file_patterns == ("*.py",) and catalog.exclude_files == ("cpu/utils.py",)
    rc, doc, _ = dry(root, capsys, "cpu", "base-a-test-cpu")
    assert rc == 0 and files(doc) == ["cpu/fixtures.py", "cpu/test_both.py", "cpu/test_commit.py"]


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('nightly = "per-file"', "policy: nightly must be 'suite' or 'registration' (default "
         "'suite'), got 'per-file'"),
        ("strict-checks = true", "policy: strict-checks must be 'error' or 'warning' (default "
         "'error'), got True"),
        ('nigthly = "suite"', "policy: unknown key(s) nigthly; known keys: nightly, suite-names, "
         "empty-selection, strict-checks, suites-from"),
    ],
)  # fmt: skip
def test_a_bad_policy_key_or_value_names_file_key_and_choices(tmp_path, table, message):
    (tmp_path / "registered").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.ci-runner]\n\n[tool.ci-runner.policy]\n{table}\n\n[[tool.ci-runner.suites]]\nname = "a"\nhw = "cpu"\n'
    )
    with pytest.raises(CatalogError) as info:
        load_catalog(tmp_path)
    assert str(info.value) == f"pyproject.toml [tool.ci-runner] {message}"


def test_per_backend_names_still_refuse_a_name_twice_on_one_backend(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ci-runner]\n\n[tool.ci-runner.policy]\nsuite-names = "per-backend"\n\n'
        + '[[tool.ci-runner.suites]]\nname = "a"\nhw = "cpu"\n' * 2
    )
    with pytest.raises(CatalogError, match="suite name 'a' is used twice of hw 'cpu'"):
        load_catalog(tmp_path)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
