"""run_suite.py init drafts [tool.ci-runner.change-impact] from what the tree shows (import roots
from the packaging wherever it lives, kernel directories from the load_jit calls, ignore rules
for documentation) and prints it for review; with that table, a change to the package under
python/ keeps the test that imports it. A generated tree with SGLang's layout."""

import sys
import tomllib
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci
from ci_runner.adoption.impact_draft import draft_change_impact
from ci_runner.cli import main

register_cpu_ci(est_time=5, suite="base-a-test-cpu")

sys.path.insert(0, str(Path(__file__).parent))
from impact_tree import kept, run_dry  # noqa: E402

HEAD = "import sys\n\nimport pytest\n\nfrom ci_runner import register_cpu_ci\n"
MAIN = '\n\nif __name__ == "__main__":\n    sys.exit(pytest.main([__file__]))\n'
FILES = {
    "python/pyproject.toml": '[project]\nname = "app"\n\n[tool.setuptools.packages.find]\n'
    'exclude = ["tests*"]\n',
    "python/app/__init__.py": "",
    "python/app/layers/__init__.py": "",
    "python/app/layers/rope/__init__.py": "from app.jit.rope import module\n",
    "python/app/jit/__init__.py": "",
    "python/app/jit/loader.py": "def load_jit(*names, cpp_files=None, cuda_files=None):\n"
    "    return names\n",
    "python/app/jit/rope.py": "from app.jit.loader import load_jit\n\n"
    "def module():\n    return load_jit('rope', cuda_files=['elementwise/rope.cuh'])\n",
    "python/app/jit/csrc/elementwise/rope.cuh": "#include <app/vec.cuh>\n",
    "python/app/jit/include/app/vec.cuh": "#pragma once\n",
    "docs/index.md": "# docs\n",
    "docs/guide.md": "x\n",
    "docs/api.mdx": "x\n",
    "docs/conf.py": "",
    ".claude/skills/x.md": "x\n",
    "README.md": "x\n",
    "test/registered/rope/test_rope.py": HEAD
    + "\nfrom app.layers.rope import module\n\n"
    + 'register_cpu_ci(est_time=5, suite="unit")\n\ndef test_ok():\n    pass\n'
    + MAIN,
    "test/registered/test_other.py": HEAD
    + '\nregister_cpu_ci(est_time=7, suite="unit")\n\ndef test_ok():\n    pass\n'
    + MAIN,
    "test/registered/test_docs.py": HEAD
    + '\nregister_cpu_ci(est_time=3, suite="unit")\nDOC = "README.md"\n\n'
    + "def test_ok():\n    pass\n"
    + MAIN,
}


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "cache"))


def make(root: Path) -> Path:
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_the_draft_names_what_the_tree_shows(tmp_path):
    draft = draft_change_impact(make(tmp_path / "repo"), "test/registered")
    assert draft.python_roots == ["python"]
    assert draft.kernel_source_dirs == ["python/app/jit/csrc"]
    assert draft.kernel_include_dirs == ["python/app/jit/include"]
    assert draft.ignore == ["/docs/**", "/.claude/**", "*.md"]
    assert draft.readers == ["test/registered/test_docs.py"]
    table = tomllib.loads(draft.text)["tool"]["ci-runner"]["change-impact"]
    assert table == {
        "python-roots": ["python"],
        "kernel-source-dirs": ["python/app/jit/csrc"],
        "kernel-include-dirs": ["python/app/jit/include"],
        "ignore": ["/docs/**", "/.claude/**", "*.md"],
    }


def test_init_writes_the_table_prints_it_for_review_and_the_selection_uses_it(tmp_path, capsys):
    root = make(tmp_path / "repo")
    assert main(["init", "--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert (
        "  [tool.ci-runner.change-impact]: python-roots ['python'] (from the packaging); kernel "
        "dirs ['python/app/jit/csrc', 'python/app/jit/include']; ignore ['/docs/**', "
        "'/.claude/**', '*.md']" in out
    )
    assert "check the ignore rules: registered files mention documents " in out
    assert "(test/registered/test_docs.py)" in out
    listing = root / "changed.txt"
    listing.write_text("python/app/layers/rope/__init__.py\n")
    code, document = run_dry(root, "--changed-files", str(listing), suite="unit", hw="cpu")
    assert code == 0 and kept(document) == ["test/registered/rope/test_rope.py"]
    listing.write_text("python/app/jit/include/app/vec.cuh\n")
    code, document = run_dry(root, "--changed-files", str(listing), suite="unit", hw="cpu")
    assert kept(document) == ["test/registered/rope/test_rope.py"]
    listing.write_text("docs/guide.md\nREADME.md\n.claude/skills/x.md\n")
    code, document = run_dry(root, "--changed-files", str(listing), suite="unit", hw="cpu")
    impact = document["change_impact"]
    assert impact["kept"] == [] and [i["path"] for i in impact["ignored"]] == [
        ".claude/skills/x.md",
        "docs/guide.md",
    ]
    assert impact["not_ignored"] == [
        "README.md matches ignore '*.md', but test/registered/test_docs.py reaches it "
        "(README.md -> test/registered/test_docs.py [names the file]): not ignored"
    ]


def test_init_update_merges_the_table_like_the_others(tmp_path, capsys):
    root = make(tmp_path / "repo")
    (root / "pyproject.toml").write_text('[project]\nname = "app"\n')
    assert main(["init", "--root", str(root)]) == 0
    text = (root / "pyproject.toml").read_text()
    start = text.index("# What --changed-since")
    end = text.index("\n\n", text.index("[tool.ci-runner.change-impact]"))
    (root / "pyproject.toml").write_text(text[:start] + text[end:])  # a catalog without it
    capsys.readouterr()
    assert main(["init", "--root", str(root), "--update"]) == 0
    assert "+ table change-impact (4 key(s))" in capsys.readouterr().out
    table = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["ci-runner"]
    assert table["change-impact"]["ignore"] == ["/docs/**", "/.claude/**", "*.md"]


def test_what_git_ignores_is_no_documentation(tmp_path):
    root = make(tmp_path / "repo")
    (root / ".gitignore").write_text("*.egg-info/\n")
    for name in ("PKG-INFO.md", "SOURCES.md", "top_level.md"):
        (root / "app.egg-info").mkdir(exist_ok=True)
        (root / "app.egg-info" / name).write_text("x\n")
    assert draft_change_impact(root, "test/registered").ignore == [
        "/docs/**",
        "/.claude/**",
        "*.md",
    ]


def test_a_tree_without_kernels_or_documents_drafts_roots_only(tmp_path):
    root = tmp_path / "repo"
    (root / "src" / "lib").mkdir(parents=True)
    (root / "src" / "lib" / "__init__.py").write_text("")
    (root / "setup.cfg").write_text("[metadata]\nname = lib\n")
    draft = draft_change_impact(root, "registered")
    assert (draft.python_roots, draft.kernel_source_dirs, draft.ignore) == (["src"], [], [])
    assert "no load_jit call names a kernel file" in draft.review[-1]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
