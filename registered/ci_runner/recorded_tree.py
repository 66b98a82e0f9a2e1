"""A generated repository for the recorded change-impact tests (not a test file).

``make_recorded_repo(root)`` writes a package of two functions and CPU test files whose inputs
are known by construction: ``test_add`` calls ``add``; ``test_mul`` calls ``mul``; ``test_data``
reads ``data/cfg.json`` and calls ``mul`` in a Python child process; ``test_listing`` lists
``plugins/``; ``test_program`` runs ``cat`` on a repository file. ``record(root, out)`` runs
them with ``--record-deps``.

``make_cases_repo(root)`` writes one pytest file and one unittest file of several cases each, and
a pytest file run by two pytest-xdist workers (``CASE_FILES``), every case of the first two
appending its name to the file ``$CASES_LOG`` names (outside the
tree: an opened repository file would be an input of the record), so a test sees which ran.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
from pathlib import Path

import repo_root  # noqa: F401  (the repository root on sys.path)

sys.path.insert(0, str(Path(__file__).parent))

from impact_tree import git, git_repo

from ci_runner.cli import main
from testing.tree_builder import catalog_toml, suite_toml, write_tree


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


_LOG = "\n\ndef ran(name):\n    with open(os.environ['CASES_LOG'], 'a') as log:\n        log.write(name + '\\n')\n"
CASE_FILES = {
    "pkg/__init__.py": "",
    "pkg/unused.py": "def spare():\n    return 0\n",
    "pkg/ops.py": (
        "SCALE = 1\n\n\ndef add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n\n\n"
        "def sub(a, b):\n    return a - b\n"
    ),
    "registered/test_cases.py": (
        "import os\nimport sys\n\nimport pytest\n\nfrom ci_runner import register_cpu_ci\n"
        "from pkg import ops\n\nregister_cpu_ci(est_time=10, suite='unit-cpu')\n" + _LOG + "\n\n"
        "@pytest.fixture(scope='module')\ndef shared():\n    return ops.sub(3, 1)\n\n\n"
        "def test_a():\n    ran('test_a')\n    assert ops.add(1, 1) == 2\n\n\n"
        "@pytest.mark.parametrize('x', [1, 2])\ndef test_b(x):\n    ran(f'test_b[{x}]')\n"
        "    assert ops.mul(x, ops.SCALE) == x\n\n\n"
        "class TestC:\n    def test_c(self, shared):\n        ran('test_c')\n"
        "        assert shared == 2\n\n\n"
        "if __name__ == '__main__':\n    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))\n"
    ),
    "registered/test_unit.py": (
        "import os\nimport unittest\n\nfrom ci_runner import register_cpu_ci\nfrom pkg import ops\n\n"
        "register_cpu_ci(est_time=10, suite='unit-cpu')\n" + _LOG + "\n\n"
        "class TestOps(unittest.TestCase):\n    def test_add(self):\n        ran('test_add')\n"
        "        self.assertEqual(ops.add(1, 2), 3)\n\n    def test_mul(self):\n"
        "        ran('test_mul')\n        self.assertEqual(ops.mul(2, 2), 4)\n\n\n"
        "if __name__ == '__main__':\n    unittest.main()\n"
    ),
    "registered/test_xdist.py": (
        "import sys\n\nimport pytest\n\nfrom ci_runner import register_cpu_ci\nfrom pkg import ops\n\n"
        "register_cpu_ci(est_time=10, suite='unit-cpu')\n\n\n"
        "def test_add():\n    assert ops.add(1, 2) == 3\n\n\n"
        "def test_mul():\n    assert ops.mul(2, 2) == 4\n\n\n"
        "if __name__ == '__main__':\n"
        "    sys.exit(pytest.main([__file__, '-q', '-n', '2', '-p', 'no:cacheprovider']))\n"
    ),
}


def make_cases_repo(root: Path) -> Path:
    catalog = catalog_toml(
        suite_toml("unit-cpu", "cpu", gpus_per_file=0, timeout_per_file=300),
        registered_dir="registered",
    )
    return git_repo(write_tree(root, catalog, CASE_FILES))


def make_recorded_repo(root: Path) -> Path:
    catalog = catalog_toml(
        suite_toml("unit-cpu", "cpu", gpus_per_file=0, timeout_per_file=300),
        registered_dir="registered",
    )
    return git_repo(write_tree(root, catalog, FILES))


def recorded_repo(base: Path, files: dict[str, str]) -> tuple[Path, Path]:
    """``files`` as a git repository with the ``unit-cpu`` suite under ``base/repo``, recorded
    into ``base/record`` (with a cache of its own): (root, record dir)."""
    catalog = catalog_toml(
        suite_toml("unit-cpu", "cpu", gpus_per_file=0, timeout_per_file=300),
        registered_dir="registered",
    )
    root = git_repo(write_tree(base / "repo", catalog, files))
    previous = os.environ.get("CI_RUNNER_CACHE_DIR")
    os.environ["CI_RUNNER_CACHE_DIR"] = str(base / "cache")
    try:
        assert record(root, base / "record") == 0
    finally:
        if previous is None:
            os.environ.pop("CI_RUNNER_CACHE_DIR", None)
        else:
            os.environ["CI_RUNNER_CACHE_DIR"] = previous
    return root, base / "record"


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


def private_copy(recorded: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    """A private copy of a recorded repository, and its record (still valid: same commit)."""
    root, records = recorded
    copy = tmp_path / "repo"
    shutil.copytree(root, copy, symlinks=True)
    return copy, records


def edit(root: Path, path: str, old: str, new: str) -> None:
    """Replace ``old`` (which must be there) by ``new`` in the file ``path`` of ``root``."""
    file = root / path
    text = file.read_text()
    assert old in text
    file.write_text(text.replace(old, new))
