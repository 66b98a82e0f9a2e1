"""A generated repository for the change-impact tests (not a test file).

``make_impact_repo(root)`` writes a package, a kernel tree and registered test files whose
dependencies are known by construction (each test file's comment says what it reaches), and
``run_dry(root, *flags)`` runs ``run_suite.py --dry-run --format json`` in-process on it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import repo_root  # noqa: F401  (the repository root on sys.path)

sys.path.insert(0, str(Path(__file__).parent))

from ci_runner.cli import main
from testing.tree_builder import catalog_toml, suite_toml, write_tree

IMPACT_TABLE = """
[tool.ci-runner.change-impact]
kernel-source-dirs = ["kernels/csrc"]
kernel-include-dirs = ["kernels/include"]
kernel-loaders = [
    { function = "load_jit", arguments = ["cpp_files", "cuda_files"] },
    { function = "jit_module", arguments = ["cuda_file", 1] },
]
run-everything = ["tooling/**"]
"""


def impact_catalog(table: str = IMPACT_TABLE) -> str:
    catalog = catalog_toml(
        suite_toml("unit-gpu", "cuda", gpus_per_file=1, runner="1-gpu", job_timeout_minutes=60),
        suite_toml("unit-cpu", "cpu", gpus_per_file=0, runner="cpu", job_timeout_minutes=30),
        registered_dir="registered",
    )
    head, rest = catalog.split("\n", 2)[:2], catalog.split("\n", 2)[2]
    return "\n".join(head) + "\n" + table + "\n" + rest


def registered_file(body: str, est: int = 10, suite: str = "unit-gpu") -> str:
    marker = "register_cuda_ci" if suite == "unit-gpu" else "register_cpu_ci"
    return (
        f"import sys\n\nimport pytest\n\nfrom ci_runner import {marker}\n{body}\n\n"
        f'{marker}(est_time={est}, suite="{suite}")\n\n\n'
        "def test_ok():\n    pass\n\n\n"
        'if __name__ == "__main__":\n    sys.exit(pytest.main([__file__, "-q"]))\n'
    )


FILES = {
    "pkg/__init__.py": "",
    "pkg/util.py": "VALUE = 1\n",
    "pkg/core.py": "from pkg.util import VALUE\n",
    "pkg/sub/__init__.py": "from .leaf import LEAF\n",
    "pkg/sub/leaf.py": "from ..util import VALUE as LEAF\n",
    "pkg/kern.py": (
        "from pkg.loader import load_jit\n\n"
        "def module():\n    return load_jit('a', cuda_files=['k/a.cuh'])\n"
    ),
    "pkg/pos.py": "from pkg.loader import jit_module\n\nM = jit_module('b', 'k/b.cuh', ['b'])\n",
    "pkg/loader.py": (
        "def load_jit(*markers, cpp_files=None, cuda_files=None):\n    return markers\n\n"
        "def jit_module(name, cuda_file, exports):\n"
        "    return load_jit(name, cuda_files=[cuda_file])\n"
    ),
    "pkg/lazy.py": (
        "import importlib\n\n"
        "def plugin(name):\n    return importlib.import_module(f'pkg.plugins.{name}')\n"
    ),
    "pkg/plugins/__init__.py": "",
    "pkg/plugins/p1.py": "X = 1\n",
    "kernels/csrc/k/a.cuh": '#include <lib/common.h>  // For common\n#include "local.h"\n',
    "kernels/csrc/k/local.h": "#pragma once\n",
    "kernels/csrc/k/b.cuh": "#include <lib/only_b.h>  // For b\n",
    "kernels/include/lib/common.h": "#pragma once\n#include <lib/deep.h>\n",
    "kernels/include/lib/deep.h": "#pragma once\n",
    "kernels/include/lib/only_b.h": "#pragma once\n",
    "kernels/include/lib/unused.h": "#pragma once\n",
    "registered/helper_local.py": "import pkg.sub\n",
    "registered/test_core.py": registered_file("import pkg.core", est=10),
    "registered/test_kern.py": registered_file("from pkg import kern", est=20),
    "registered/test_pos.py": registered_file("import pkg.pos", est=30),
    "registered/test_plugins.py": registered_file("from pkg.lazy import plugin", est=40),
    "registered/test_local.py": registered_file("import helper_local", est=50),
    "registered/test_names.py": registered_file("TARGET = 'pkg.util.VALUE'", est=60),
    "registered/test_alone.py": registered_file("import os", est=70),
    "registered/test_cpu.py": registered_file("import pkg.core", est=5, suite="unit-cpu"),
    "docs/readme.md": "hello\n",
    "tooling/runner.py": "",
}
GPU_TESTS = sorted(
    p for p in FILES if p.startswith("registered/test_") and p != "registered/test_cpu.py"
)


def make_impact_repo(
    root: Path, extra: dict[str, str] | None = None, table: str = IMPACT_TABLE
) -> Path:
    """The generated repository (``extra`` adds or replaces files)."""
    return write_tree(root, impact_catalog(table), {**FILES, **(extra or {})})


def git(root: Path, *args: str) -> str:
    """Run git in ``root`` with a fixed identity; returns stdout."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_SYSTEM": os.devnull,
    }
    result = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, env=env, check=True
    )
    return result.stdout


def git_repo(root: Path) -> Path:
    """``root`` as a git repository with everything committed on ``main``."""
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def run_dry(root: Path, *flags: str, suite: str = "unit-gpu", hw: str = "cuda") -> tuple[int, dict]:
    """``run_suite.py --dry-run --format json`` in-process; (exit code, document or {})."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(
            [
                "--root",
                str(root),
                "--hw",
                hw,
                "--suite",
                suite,
                "--dry-run",
                "--format",
                "json",
                *flags,
            ]
        )
    text = out.getvalue()
    return code, (json.loads(text) if code == 0 and text.strip() else {})


def changed_files(root: Path, *paths: str) -> list[str]:
    """The ``--changed-files`` flags of a list naming ``paths`` (written as ``root/changed.txt``)."""
    listing = root / "changed.txt"
    listing.write_text("".join(p + "\n" for p in paths))
    return ["--changed-files", str(listing)]


def dry_changed(root: Path, *paths: str, **kwargs: str) -> dict:
    """The dry-run document of a change to ``paths``; the run must succeed."""
    code, document = run_dry(root, *changed_files(root, *paths), **kwargs)
    assert code == 0
    return document


def kept(document: dict) -> list[str]:
    """The kept files of a dry-run document's change impact."""
    return [entry["path"] for entry in document["change_impact"]["kept"]]


def chain_of(document: dict, path: str) -> list[str]:
    for entry in document["change_impact"]["kept"]:
        if entry["path"] == path:
            return [link["path"] for link in entry["chain"]]
    raise AssertionError(f"{path} not kept")
