"""run_suite.py init: where the catalog is written, and init --update, which merges a new draft
into the existing catalog in place (tomlkit) and prints what changed (issue 48)."""

import sys
import tomllib
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci
from ci_runner.catalog import load_catalog
from ci_runner.cli import main

register_cpu_ci(est_time=10, suite="base-a-test-cpu")

HEAD = "import sys\n\nimport pytest\n\nfrom ci_runner import *  # noqa\n\n"
MAIN = '\nif __name__ == "__main__":\n    sys.exit(pytest.main([__file__]))\n'
FILES = {
    "registered/test_a.py": HEAD + 'register_cpu_ci(est_time=5, suite="unit-cpu")\n' + MAIN,
    "registered/test_b.py": HEAD + 'register_cuda_ci(est_time=9, suite="kernel-gpu")\n' + MAIN,
}
WORKFLOW = """\
on: [push]
jobs:
  cpu:
    runs-on: ubuntu-22.04
    timeout-minutes: 30
    steps:
      - run: python run_suite.py --hw cpu --suite unit-cpu
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def init(root: Path, capsys, *flags: str) -> tuple[int, str]:
    rc = main(["init", "--root", str(root), *flags])
    captured = capsys.readouterr()
    return rc, captured.out + captured.err


def test_without_a_root_pyproject_the_catalog_gets_a_file_of_its_own(tmp_path, capsys):
    root = write(tmp_path, FILES)
    rc, out = init(root, capsys)
    assert rc == 0 and not (root / "pyproject.toml").exists()
    assert out.startswith(
        f"wrote the catalog to {root / 'ci-runner.toml'} (the root has no pyproject.toml: a file "
        "of its own, which the runner reads): 2 suite(s)"
    )
    assert {s.name for s in load_catalog(root).suites} == {"unit-cpu", "kernel-gpu"}
    assert "registered-dir" in tomllib.loads((root / "ci-runner.toml").read_text())


def test_with_a_root_pyproject_the_catalog_is_appended_to_it(tmp_path, capsys):
    root = write(tmp_path, {**FILES, "pyproject.toml": '[project]\nname = "x"\n'})
    rc, out = init(root, capsys)
    assert rc == 0 and "(the root pyproject.toml)" in out and not (root / "ci-runner.toml").exists()
    assert tomllib.loads((root / "pyproject.toml").read_text())["project"] == {"name": "x"}


def test_a_catalog_in_both_places_is_an_error_naming_both(tmp_path, capsys):
    root = write(tmp_path, FILES)
    assert init(root, capsys)[0] == 0
    (root / "pyproject.toml").write_text('[tool.ci-runner]\nregistered-dir = "registered"\n')
    rc, out = init(root, capsys, "--update")
    assert rc == 2 and "both ci-runner.toml and pyproject.toml [tool.ci-runner] hold" in out
    rc = main(["--root", str(root), "--hw", "cpu", "--suite", "unit-cpu", "--dry-run"])
    assert rc == 2 and "keep one" in capsys.readouterr().err


HAND = """\
# my notes on the catalog: keep me
"""
CHANGE_IMPACT = """
# Hand-written: what --changed-since needs to know
[tool.ci-runner.change-impact]
python-roots = ["src"]  # the package
run-everything = ["registered/conftest.py"]
"""


def _catalog(root: Path) -> dict:
    return tomllib.loads((root / "pyproject.toml").read_text())["tool"]["ci-runner"]


def test_update_keeps_hand_written_keys_tables_and_comments_and_says_what_changed(tmp_path, capsys):
    root = write(tmp_path, {**FILES, "pyproject.toml": HAND, ".github/workflows/ci.yml": WORKFLOW})
    assert init(root, capsys)[0] == 0
    path = root / "pyproject.toml"
    text = path.read_text()
    # by hand: a runner label where the workflows give none, a comment, a change-impact table
    text = text.replace('hw = "cuda"', 'hw = "cuda"\nrunner = "h100-hand"  # mine').replace(
        "[tool.ci-runner]\n", "[tool.ci-runner]\n# a comment of mine\n", 1
    )
    path.write_text(text + CHANGE_IMPACT)
    # the tree moves on: a new suite, and the workflow's job budget changes
    write(
        root,
        {
            "registered/test_c.py": HEAD + 'register_cpu_ci(est_time=2, suite="new-cpu")\n' + MAIN,
            ".github/workflows/ci.yml": WORKFLOW.replace(
                "timeout-minutes: 30", "timeout-minutes: 45"
            ),
        },
    )
    rc, out = init(root, capsys, "--update")
    assert rc == 0, out
    assert f"updated the catalog in {path}" in out
    assert "  + suite cpu:'new-cpu'" in out
    assert "  ~ suite cpu:'unit-cpu' job-timeout-minutes: 30 -> 45 (the workflows)" in out
    after = path.read_text()
    assert after.startswith(HAND)
    assert "# a comment of mine" in after and 'runner = "h100-hand"  # mine' in after
    assert CHANGE_IMPACT.strip() in after
    catalog = _catalog(root)
    suites = {s["name"]: s for s in catalog["suites"]}
    assert suites["kernel-gpu"]["runner"] == "h100-hand"
    assert suites["unit-cpu"]["job-timeout-minutes"] == 45
    assert catalog["change-impact"] == {
        "python-roots": ["src"],
        "run-everything": ["registered/conftest.py"],
    }
    assert {s.name for s in load_catalog(root).suites} == {"unit-cpu", "kernel-gpu", "new-cpu"}
    # nothing new: nothing changes, byte for byte
    rc, out = init(root, capsys, "--update")
    assert rc == 0 and "changes: none" in out and path.read_text() == after


def test_update_keeps_a_differing_hand_value_and_reports_it(tmp_path, capsys):
    root = write(tmp_path, {**FILES, "pyproject.toml": ""})
    assert init(root, capsys)[0] == 0
    path = root / "pyproject.toml"
    path.write_text(path.read_text().replace("gpus-per-file = 1", "gpus-per-file = 2"))
    rc, out = init(root, capsys, "--update")
    assert rc == 0 and "changes: none" in out
    assert "gpus-per-file = 2" in path.read_text()


def test_update_adds_a_table_the_old_catalog_lacks(tmp_path, capsys):
    root = write(tmp_path, {**FILES, "pyproject.toml": ""})
    assert init(root, capsys)[0] == 0
    write(root, {"registered/test_m.py": HEAD + 'register_mlx_ci(est_time=1, suite="m")\n' + MAIN})
    rc, out = init(root, capsys, "--update")
    assert rc == 0 and "+ table extra-markers (1 key(s))" in out and "+ suite mlx:'m'" in out
    assert _catalog(root)["extra-markers"] == {"register_mlx_ci": "mlx"}


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--update",), "has no catalog to update; run init without --update"),
        (("--update", "--force"), "not allowed with argument"),
        (("--update", "--output", "-"), "--update needs a file to merge into"),
    ],
)
def test_update_errors_are_one_line(tmp_path, capsys, flags, message):
    root = write(tmp_path, {**FILES, "pyproject.toml": '[project]\nname = "x"\n'})
    rc, out = init(root, capsys, *flags)
    assert rc == 2 and message in out


def test_without_update_an_existing_catalog_is_refused_with_the_choices(tmp_path, capsys):
    root = write(tmp_path, FILES)
    assert init(root, capsys)[0] == 0
    rc, out = init(root, capsys)
    assert rc == 2 and "already holds a catalog; pass --update to merge" in out
    assert init(root, capsys, "--force")[0] == 0


def test_a_key_added_to_a_table_stays_above_the_next_tables_comment(tmp_path, capsys):
    mlx = HEAD + 'register_mlx_ci(est_time=1, suite="m")\n' + MAIN
    root = write(tmp_path, {**FILES, "pyproject.toml": "", "registered/test_m.py": mlx})
    assert init(root, capsys)[0] == 0
    path = root / "pyproject.toml"
    text = path.read_text()
    hand = '\n# mine: above its table\n[tool.ci-runner.change-impact]\npython-roots = ["src"]\n'
    head = '[tool.ci-runner.extra-markers]\nregister_mlx_ci = "mlx"\n'
    path.write_text(text.replace(head, head + hand))
    ppu = HEAD + 'register_ppu_ci(est_time=1, suite="p")\n' + MAIN
    write(root, {"registered/test_p.py": ppu})
    rc, out = init(root, capsys, "--update")
    assert rc == 0 and "+ extra-markers.register_ppu_ci = 'ppu'" in out
    assert (
        'register_mlx_ci = "mlx"\nregister_ppu_ci = "ppu"\n' + hand.lstrip("\n")
    ) in path.read_text().replace("\n\n# mine", "\n# mine")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
