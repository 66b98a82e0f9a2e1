"""A generated repository for the recorded change-impact tests (not a test file).

``make_recorded_repo(root)`` writes a package of two functions and CPU test files whose inputs
are known by construction: ``test_add`` calls ``add``; ``test_mul`` calls ``mul``; ``test_data``
reads ``data/cfg.json`` and calls ``mul`` in a Python child process; ``test_listing`` lists
``plugins/``; ``test_program`` runs ``cat`` on a repository file. ``record(root, out)`` runs
them with ``--record-deps``.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from impact_tree import git, git_repo
from tree_builder import catalog_toml, suite_toml, write_tree

from ci_runner.cli import main


def _test(imports: str, body: str) -> str:
    return (
        f"import sys\n\nimport pytest\n\nfrom ci_runner import register_cpu_ci\n{imports}\n\n"
        'register_cpu_ci(est_time=5, suite="unit-cpu")\n\n\n'
        f"def test_it():\n{body}\n\n\n"
        'if __name__ == "__main__":\n    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))\n'
    )


FILES = {
    "pkg/__init__.py": "",
    "pkg/ops.py": (
        "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    # multiply\n    return a * b\n"
    ),
    "data/cfg.json": '{"x": 1}\n',
    "plugins/one.txt": "1\n",
    "registered/test_add.py": _test("from pkg.ops import add", "    assert add(2, 3) == 5"),
    "registered/test_mul.py": _test("from pkg.ops import mul", "    assert mul(2, 3) == 6"),
    "registered/test_data.py": _test(
        "import json\nimport subprocess\nfrom pathlib import Path",
        '    assert json.loads(Path("data/cfg.json").read_text())["x"] == 1\n'
        "    out = subprocess.run(\n"
        '        [sys.executable, "-c", "from pkg.ops import mul; print(mul(2, 2))"],\n'
        "        capture_output=True, text=True, check=True,\n"
        "    )\n"
        '    assert out.stdout.strip() == "4"',
    ),
    "registered/test_listing.py": _test(
        "import os", '    assert "one.txt" in os.listdir("plugins")'
    ),
    "registered/test_program.py": _test(
        "import subprocess", '    subprocess.run(["cat", "plugins/one.txt"], check=True)'
    ),
}
TESTS = sorted(p for p in FILES if p.startswith("registered/test_"))


def make_recorded_repo(root: Path) -> Path:
    catalog = catalog_toml(
        suite_toml("unit-cpu", "cpu", gpus_per_file=0, timeout_per_file=300),
        registered_dir="registered",
    )
    return git_repo(write_tree(root, catalog, FILES))


def record(root: Path, out: Path) -> int:
    """A real run of the suite with ``--record-deps out``; its exit code."""
    with contextlib.redirect_stdout(io.StringIO()):
        return main(
            ["--root", str(root), "--hw", "cpu", "--suite", "unit-cpu", "--record-deps", str(out)]
        )


def select(root: Path, records: Path, *changed: str) -> tuple[int, dict]:
    """``--dry-run --format json --changed-files`` with ``--deps-from``; (code, change_impact)."""
    listing = root.parent / "changed.txt"
    listing.write_text("".join(f"{path}\n" for path in changed))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(
            ["--root", str(root), "--hw", "cpu", "--suite", "unit-cpu", "--dry-run", "--format",
             "json", "--changed-files", str(listing), "--deps-from", str(records)]
        )  # fmt: skip
    return code, (json.loads(out.getvalue())["change_impact"] if code == 0 else {})


def how(impact: dict) -> dict[str, str]:
    """kept file -> how its last link depends on the one before (``ran mul()``)."""
    return {entry["path"]: entry["chain"][-1]["how"] for entry in impact["kept"]}


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
