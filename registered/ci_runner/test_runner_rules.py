"""[tool.ci-runner.policy] suites-from: the suite names and rules of a repository's own runner,
read from its source on every run, never copied (issue 48).

Each tree here carries a runner file and a registry module of our own, written in the shape of
SGLang's (``test/run_suite.py`` with module-level suite tables, a validated-backends set read by
a function it calls, a ``--hw`` mapping; ``ci_register.py`` with ``REGISTER_MAPPING`` and, in
the newer version, a ``__main__`` check). Every expected selection is written out by hand from
the rules.
"""

import json
import sys
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci
from ci_runner.catalog import CatalogError, load_catalog
from ci_runner.catalog.runner_rules import read_runner_rules
from ci_runner.cli import main

register_cpu_ci(est_time=10, suite="base-a-test-cpu")

REG = "test/registered"
MAIN = '\n\nif __name__ == "__main__":\n    sys.exit(0)\n'
IMPORT = "import sys\n\nfrom sglang.test.ci.ci_register import *  # noqa\n\n"
VALIDATE = """

_SUITE_CHECKED_BACKENDS = {HWBackend.CUDA, HWBackend.CPU}


def validate_all_suites(tests):
    for t in tests:
        if t.backend in _SUITE_CHECKED_BACKENDS:
            pass


def run():
    validate_all_suites([])
"""


def runner(validated: bool = True, tables: dict[str, list[str]] | None = None) -> str:
    tables = tables or {
        "CPU": ["base-a-test-cpu"],
        "CUDA": ["base-b-test-1-gpu-large", "base-c-test-4-gpu-h100"],
        "AMD": ["stage-a-test-1-gpu-small-amd"],
    }
    body = ", ".join(f"HWBackend.{hw}: {json.dumps(names)}" for hw, names in tables.items())
    return (
        "from sglang.test.ci.ci_register import HWBackend, collect_tests\n\n"
        'HW_MAPPING = {"cpu": HWBackend.CPU, "cuda": HWBackend.CUDA, "amd": HWBackend.AMD, '
        '"ppu": HWBackend.PPU}\n'
        f"PER_COMMIT_SUITES = {{{body}}}\n"
        'NIGHTLY_SUITES = {HWBackend.CUDA: ["nightly-test-8-gpu-h200"]}\n'
        + (VALIDATE if validated else "")
        + "\n\ndef filter_tests(tests, hw, suite, nightly):\n"
        "    return [t for t in tests if t.effective_suite == suite and t.nightly == nightly]\n"
    )


def registry(main_check: bool = True) -> str:
    check = (
        "\n\ndef has_main(stmt):\n"
        "    return stmt.test.left.id == '__name__' and stmt.test.comparators[0].value == "
        "'__main__'\n"
    )
    return (
        "from enum import Enum, auto\n\n\nclass HWBackend(Enum):\n    CPU = auto()\n"
        "    CUDA = auto()\n    AMD = auto()\n    PPU = auto()\n\n\n"
        'REGISTER_MAPPING = {"register_cpu_ci": HWBackend.CPU, "register_cuda_ci": '
        'HWBackend.CUDA, "register_amd_ci": HWBackend.AMD, "register_ppu_ci": HWBackend.PPU}\n'
        + (check if main_check else "")
        + "\n\ndef collect_tests(files, sanity_check=True):\n    return []\n"
    )


CATALOG = """registered-dir = "test/registered"
suite-template = "{stage}-test-{runner_config}"

[policy]
nightly = "registration"
suite-names = "per-backend"
empty-selection = "notice"
strict-checks = "warning"
suites-from = "test/run_suite.py"
"""


def tree(root: Path, files: dict[str, str], validated=True, main_check=True, tables=None) -> Path:
    written = {
        "ci-runner.toml": CATALOG,
        "test/run_suite.py": runner(validated, tables),
        "python/sglang/test/ci/ci_register.py": registry(main_check),
        **files,
    }
    for rel, text in written.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def source(*registrations: str, main: str = MAIN) -> str:
    return IMPORT + "\n".join(registrations) + main


def dry(root: Path, capsys, hw: str, suite: str, *flags: str) -> tuple[int, list[str], str]:
    rc = main(
        ["--root", str(root), "--hw", hw, "--suite", suite, *flags, "--dry-run", "--format", "json"]
    )
    out = capsys.readouterr()
    paths = (
        [f["path"].removeprefix(f"{REG}/") for f in json.loads(out.out)["files"]] if rc == 0 else []
    )
    return rc, sorted(paths), out.err


FILES = {
    f"{REG}/test_cpu.py": source('register_cpu_ci(est_time=5, suite="base-a-test-cpu")'),
    f"{REG}/test_gpu.py": source(
        'register_cuda_ci(est_time=9, stage="base-b", runner_config="1-gpu-large")'
    ),
    f"{REG}/test_amd_new.py": source('register_amd_ci(est_time=7, suite="brand-new-amd-suite")'),
}


def test_rules_are_read_from_the_runner_and_its_registry(tmp_path):
    root = tree(tmp_path, FILES)
    rules = read_runner_rules(root, "test/run_suite.py")
    assert set(rules.tables) == {"PER_COMMIT_SUITES", "NIGHTLY_SUITES"}
    assert rules.suites("cuda") == (
        "base-b-test-1-gpu-large",
        "base-c-test-4-gpu-h100",
        "nightly-test-8-gpu-h200",
    )
    assert rules.backends == ("cpu", "cuda", "amd", "ppu")
    assert rules.checked == {"cuda", "cpu"}
    assert rules.registry == "python/sglang/test/ci/ci_register.py"
    assert rules.markers["register_ppu_ci"] == "ppu"
    assert rules.main_block_required
    assert rules.accepts("amd", "anything") and not rules.accepts("cuda", "anything")


def test_an_unvalidated_backend_accepts_a_brand_new_suite_name(tmp_path, capsys):
    root = tree(tmp_path, FILES)
    rc, files, err = dry(root, capsys, "amd", "brand-new-amd-suite")
    assert (rc, files) == (0, ["test_amd_new.py"])
    assert "test/run_suite.py lists no such amd suite" in err  # a warning, as upstream prints
    rc, files, _ = dry(root, capsys, "cuda", "base-b-test-1-gpu-large")
    assert (rc, files) == (0, ["test_gpu.py"])


def test_a_validated_backend_refuses_a_name_its_tables_lack(tmp_path, capsys):
    root = tree(
        tmp_path,
        {
            **FILES,
            f"{REG}/test_typo.py": source('register_cuda_ci(est_time=1, suite="base-b-tset")'),
        },
    )
    rc, _, err = dry(root, capsys, "cpu", "base-a-test-cpu")
    assert rc == 2
    assert (
        "test/registered/test_typo.py:5:1: unknown cuda suite 'base-b-tset': test/run_suite.py "
        "validates cuda suite names and its tables list no such suite"
    ) in err


def test_a_runner_without_validation_accepts_any_name_on_every_backend(tmp_path, capsys):
    files = {**FILES, f"{REG}/test_x.py": source('register_cuda_ci(est_time=1, suite="x-cuda")')}
    root = tree(tmp_path, files, validated=False)
    assert read_runner_rules(root, "test/run_suite.py").checked == frozenset()
    rc, found, _ = dry(root, capsys, "cuda", "x-cuda")
    assert (rc, found) == (0, ["test_x.py"])


def test_an_unknown_suite_warns_and_exits_0_with_a_short_message(tmp_path, capsys):
    many = {
        "CPU": ["base-a-test-cpu"],
        "CUDA": ["base-b-test-1-gpu-large"]  # test_gpu.py's suite
        + [f"suite-{i:03d}-with-a-long-name" for i in range(300)],
    }
    root = tree(tmp_path, FILES, tables=many)
    rc, found, err = dry(root, capsys, "cuda", "zzz")
    assert (rc, found) == (0, [])
    warning = next(line for line in err.splitlines() if line.startswith("warning: --suite"))
    assert "and 297 more" in warning and len(warning) < 400
    assert "notice: no enabled file registered for --hw cuda --suite zzz" in err
    rc, _, err = dry(root, capsys, "cuda", "suite-007-with-a-long-nme")
    assert rc == 0 and "did you mean 'suite-007-with-a-long-name'?" in err


def test_a_table_edited_upstream_needs_no_catalog_change(tmp_path, capsys):
    files = {
        **FILES,
        f"{REG}/test_new.py": source('register_cuda_ci(est_time=3, suite="added-later")'),
    }
    root = tree(tmp_path, files)
    rc, _, _ = dry(root, capsys, "cuda", "added-later")
    assert rc == 2  # validated, and not in the tables yet
    (root / "test/run_suite.py").write_text(
        runner(
            tables={"CPU": ["base-a-test-cpu"], "CUDA": ["base-b-test-1-gpu-large", "added-later"]}
        )
    )
    rc, found, err = dry(root, capsys, "cuda", "added-later")
    assert (rc, found, "warning" in err) == (0, ["test_new.py"], False)


@pytest.mark.parametrize("main_check", [True, False])
def test_the_main_block_rule_follows_the_registry_version(tmp_path, capsys, main_check):
    no_call = (
        IMPORT
        + 'register_cpu_ci(est_time=5, suite="base-a-test-cpu")\n\nif __name__ == "__main__":\n    pass\n'
    )
    root = tree(tmp_path, {**FILES, f"{REG}/test_pass.py": no_call}, main_check=main_check)
    rc, found, err = dry(root, capsys, "cpu", "base-a-test-cpu")
    assert "test_pass.py:7:1: the __main__ block calls nothing" in err
    if main_check:  # the registry refuses such a file, so does the runner
        assert rc == 2 and "1 registration problem(s) in 1 file(s); nothing was run" in err
    else:  # an older registry without the check: a warning, as before
        assert (rc, found) == (0, ["test_cpu.py", "test_pass.py"])


def test_a_backend_of_the_registry_needs_no_extra_markers_entry(tmp_path, capsys):
    files = {
        **FILES,
        f"{REG}/test_ppu.py": source('register_ppu_ci(est_time=2, suite="ppu-suite")'),
    }
    root = tree(tmp_path, files)
    rc, found, _ = dry(root, capsys, "ppu", "ppu-suite")
    assert (rc, found) == (0, ["test_ppu.py"])


def test_a_missing_runner_file_is_a_catalog_error(tmp_path):
    root = tree(tmp_path, FILES)
    (root / "test/run_suite.py").unlink()
    with pytest.raises(
        CatalogError, match=r"ci-runner.toml policy: suites-from: test/run_suite.py: cannot read"
    ):
        load_catalog(root)


@pytest.mark.parametrize("value", ["/abs/run_suite.py", "../run_suite.py", "", 3])
def test_a_bad_suites_from_names_the_key(tmp_path, value):
    root = tree(tmp_path, FILES)
    (root / "ci-runner.toml").write_text(CATALOG.replace('"test/run_suite.py"', json.dumps(value)))
    with pytest.raises(
        CatalogError, match="suites-from must be the path of the repository's runner"
    ):
        load_catalog(root)


def test_workflow_dispatch_lint_reads_the_runners_tables(tmp_path):
    from ci_runner.maintenance.workflow_coverage import Invocation, check

    catalog = load_catalog(tree(tmp_path, FILES))
    runs = [
        Invocation("pr.yml job 'a' step 1", ("base-b-test-1-gpu-large",), "cuda", False, False),
        Invocation("pr.yml job 'b' step 1", ("base-b-tset",), "cuda", False, False),
    ]
    assert check(catalog, runs) == [
        "pr.yml job 'b' step 1: suite 'base-b-tset' is not a cuda suite of test/run_suite.py's "
        "tables"
    ]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
