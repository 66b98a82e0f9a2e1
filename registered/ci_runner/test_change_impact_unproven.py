"""What the change analysis cannot prove is kept, with the reason: imports of the repository's own
code that resolve in no import root, sys.path edits, Python started with code or a module,
submodule bumps and changed links. Import roots come from the packaging wherever it lives.
Every case is a generated tree whose dependencies are known by construction
(registered/ci_runner/impact_tree.py)."""

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))

from impact_tree import (
    GPU_TESTS,
    chain_of,
    dry_changed,
    git,
    git_repo,
    kept,
    make_impact_repo,
    registered_file,
    run_dry,
)

from ci_runner import register_cpu_ci
from ci_runner.impact.import_roots import read_import_roots
from ci_runner.impact.index import RepoIndex

register_cpu_ci(est_time=14, suite="base-a-test-cpu")


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "impact-cache"))


dry = dry_changed


def note_of(document: dict, path: str) -> str:
    return next(e["note"] for e in document["change_impact"]["kept"] if e["path"] == path)


# A package kept under python/ (SGLang's layout): python/pyproject.toml says where it lives.
ROPE = {
    "python/lib/__init__.py": "from lib import layers\n",
    "python/lib/layers/__init__.py": "",
    "python/lib/layers/rope/__init__.py": "from .cache import CACHE\n",
    "python/lib/layers/rope/cache.py": "CACHE = {}\n",
    "python/lib/torch.py": "",  # a module named like a third-party package, inside a package
    "registered/test_rope.py": registered_file(
        "import torch\n\nfrom lib.layers.rope import CACHE", est=5
    ),
    "registered/test_other.py": registered_file("import torch", est=7),
}
SETUPTOOLS = '[project]\nname = "lib"\n\n[tool.setuptools.packages.find]\nwhere = ["."]\n'


def test_a_package_under_python_resolves_through_its_own_packaging(tmp_path):
    root = make_impact_repo(tmp_path / "repo", {**ROPE, "python/pyproject.toml": SETUPTOOLS})
    document = dry(root, "python/lib/layers/rope/__init__.py")
    assert kept(document) == ["registered/test_rope.py"]
    assert chain_of(document, "registered/test_rope.py") == [
        "python/lib/layers/rope/__init__.py",
        "registered/test_rope.py",
    ]
    assert note_of(document, "registered/test_rope.py") == ""
    # `import torch` is not the repository's: python/lib/torch.py is lib.torch
    assert "registered/test_other.py" not in kept(dry(root, "python/lib/layers/rope/cache.py"))


def test_an_import_of_the_repositorys_code_that_resolves_nowhere_is_kept_with_the_reason(
    tmp_path,
):
    # no packaging says where `lib` lives: `import lib...` resolves in no import root
    root = make_impact_repo(tmp_path / "repo", ROPE)
    document = dry(root, "python/lib/layers/rope/cache.py")
    assert kept(document) == ["registered/test_rope.py"]
    assert note_of(document, "registered/test_rope.py") == (
        "registered/test_rope.py:8: unproven import lib.layers.rope: resolves in no import "
        "root, but the repository has python/lib/layers/rope/__init__.py: its dependencies "
        "cannot be bounded, so every change selects it"
    )
    # it is kept for any change, and the summary counts it
    assert "registered/test_rope.py" in kept(dry(root, "registered/test_alone.py"))


@pytest.mark.parametrize(
    ("packaging", "package_dir"),
    [
        ({"python/setup.cfg": "[options]\npackage_dir =\n    =src\n"}, "python/src"),
        (
            {"python/setup.py": "from setuptools import setup, find_packages\n"
             "setup(name='lib', packages=find_packages('src'), package_dir={'': 'src'})\n"},
            "python/src",
        ),
        (
            {"python/pyproject.toml": '[tool.scikit-build]\nwheel.packages = ["py/lib"]\n'},
            "python/py",
        ),
        ({"python/pyproject.toml": '[tool.maturin]\npython-source = "src"\n'}, "python/src"),
        (
            {"python/pyproject.toml": '[tool.hatch.build.targets.wheel]\npackages = ["src/lib"]\n'},
            "python/src",
        ),
        (
            {"python/pyproject.toml": '[tool.poetry]\npackages = [{include = "lib", from = "src"}]\n'},
            "python/src",
        ),
        ({"python/src/lib/pyproject.toml": '[tool.setuptools]\npackage-dir = {"lib" = "."}\n'}, "python/src"),
        ({"pytest.ini": "[pytest]\npythonpath = python/src\n"}, "python/src"),
        ({"python/pyproject.toml": '[project]\nname = "lib"\n'}, "python/src"),  # src layout
    ],
)  # fmt: skip
def test_import_roots_come_from_every_form_of_packaging(tmp_path, packaging, package_dir):
    files = {
        f"{package_dir}/lib/__init__.py": "",
        f"{package_dir}/lib/rope.py": "",
        "registered/test_rope.py": registered_file("from lib import rope"),
        **packaging,
    }
    root = make_impact_repo(tmp_path / "repo", files)
    roots = read_import_roots(RepoIndex(root))
    assert package_dir in roots.roots or ("lib", package_dir) in roots.packages
    assert "lib" in roots.names
    document = dry(root, f"{package_dir}/lib/rope.py")
    assert kept(document) == ["registered/test_rope.py"]
    assert note_of(document, "registered/test_rope.py") == ""


def test_a_package_its_packaging_renames_is_unproven(tmp_path):
    files = {
        "python/pyproject.toml": '[tool.setuptools]\npackage-dir = {"lib" = "code"}\n',
        "python/code/__init__.py": "",
        "python/code/rope.py": "",
        "registered/test_rope.py": registered_file("from lib import rope"),
    }
    root = make_impact_repo(tmp_path / "repo", files)
    document = dry(root, "python/code/rope.py")
    assert kept(document) == ["registered/test_rope.py"]
    assert "'lib' is a package the repository's packaging declares" in note_of(
        document, "registered/test_rope.py"
    )


# ---------------------------------------------------------------- sys.path and started Python

TOOLS = {
    "tools/toolhelp.py": "VALUE = 1\n",
    "pkg/helper.py": "",
    "pkg/mod.py": "",
    "pkg/launched/__init__.py": "",
    "pkg/launched/__main__.py": "from pkg import helper\n",
}


@pytest.mark.parametrize(
    ("body", "changed", "how"),
    [
        (
            "from pathlib import Path\n"
            "sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'tools'))\n"
            "import toolhelp",
            "tools/toolhelp.py",
            "imports",
        ),
        (
            "import os\nsys.path.append(os.path.join(os.path.dirname(__file__), '..', 'tools'))\n"
            "from toolhelp import VALUE",
            "tools/toolhelp.py",
            "imports",
        ),
        (
            "import subprocess\nsubprocess.call([sys.executable, '-c', 'import pkg.helper'])",
            "pkg/helper.py",
            "imports",
        ),
        (
            "import subprocess\nsubprocess.run([sys.executable, '-u', '-m', 'pkg.mod', '--x'])",
            "pkg/mod.py",
            "imports by name",
        ),
        (
            "import subprocess\nsubprocess.run(['python3', '-m', 'pkg.launched'])",
            "pkg/helper.py",
            "imports by name",
        ),
        ("import os\nos.system(\"python3 -c 'import pkg.helper'\")", "pkg/helper.py", "imports"),
        (
            "import subprocess\nsubprocess.run(f'{sys.executable} -m pkg.mod --n 2', shell=True)",
            "pkg/mod.py",
            "imports by name",
        ),
        ("exec('import pkg.helper')", "pkg/helper.py", "imports"),
        (
            "import runpy\nfrom pathlib import Path\n"
            "runpy.run_path(str(Path(__file__).parent.parent / 'tools' / 'toolhelp.py'))",
            "tools/toolhelp.py",
            "names the file",  # and "runs the file": its literal name is written too
        ),
    ],
)
def test_what_a_test_loads_through_sys_path_or_a_started_python_is_followed(
    tmp_path, body, changed, how
):
    root = make_impact_repo(
        tmp_path / "repo", {**TOOLS, "registered/test_x.py": registered_file(body)}
    )
    document = dry(root, changed)
    assert kept(document) == ["registered/test_x.py"]
    assert note_of(document, "registered/test_x.py") == ""
    entry = document["change_impact"]["kept"][0]
    assert entry["chain"][-1] == {"path": "registered/test_x.py", "how": how}


@pytest.mark.parametrize(
    ("body", "note"),
    [
        ("def f(d):\n    sys.path.insert(0, d)", "sys.path edit sys.path.insert(0, d)"),
        ("import os\nos.environ['PYTHONPATH'] = '/x'", "sys.path edit os.environ['PYTHONPATH']"),
        (
            "import subprocess\ndef f(code):\n    subprocess.run([sys.executable, '-c', code])",
            "unproven Python started with computed -c code",
        ),
        (
            "import subprocess\ndef f(script):\n    subprocess.run([sys.executable, script])",
            "unproven Python started on a computed script path",
        ),
        (
            "import os\ndef f(path):\n    os.system(f'python3 {path}/run.py')",
            "unproven Python started on a computed script path",
        ),
        ("def f(code):\n    exec(code)", "unproven exec of computed code"),
        (
            "import importlib.util\ndef f(p):\n    importlib.util.spec_from_file_location('m', p)",
            "unproven file loaded by a computed path",
        ),
        ("class F:\n    pass\nsys.meta_path.insert(0, F())", "unproven custom importer"),
        # a module named by a computed value: an import by a computed name
        (
            "import subprocess\ndef f(m):\n    subprocess.run(['python3', '-m', m])",
            "dynamic import python -m ['python3', '-m', m]",
        ),
        (
            "import os\ndef f(m):\n    cmd = f'python3 -m {m} --fast'\n    os.system(cmd)",
            "dynamic import python -m os.system(cmd)",
        ),
        (
            "import subprocess, tempfile\ndef f():\n    d = tempfile.mkdtemp()\n"
            "    subprocess.run([sys.executable, '-c', 'import x'], env={'PYTHONPATH': d})",
            "sys.path edit {'PYTHONPATH': d}",
        ),
    ],
)
def test_what_a_started_python_or_a_path_edit_may_load_unseen_is_unproven(tmp_path, body, note):
    root = make_impact_repo(tmp_path / "repo", {"registered/test_x.py": registered_file(body)})
    document = dry(root, "pkg/core.py")
    assert "registered/test_x.py" in kept(document)
    assert note in note_of(document, "registered/test_x.py")


def test_prose_and_language_names_are_no_command_lines(tmp_path):
    body = (
        "MESSAGE = 'needs python 3.10 or newer'\n"
        "LANGUAGES = ['python', 'rust']\n"
        "def f(tool, path):\n    print(f'`python {path}` fails the same way')\n"
        "    return tool.startswith('python')"
    )
    root = make_impact_repo(tmp_path / "repo", {"registered/test_x.py": registered_file(body)})
    assert kept(dry(root, "pkg/core.py")) == ["registered/test_core.py"]


@pytest.mark.parametrize(
    "setting",
    [
        "env = {**os.environ, 'PYTHONPATH': str(ROOT / 'tools')}",
        "env = dict(os.environ)\nenv['PYTHONPATH'] = os.pathsep.join([str(ROOT / 'tools')])",
        "existing = os.environ.get('PYTHONPATH')\n"
        "env = {'PYTHONPATH': f'{ROOT / \"tools\"}{os.pathsep}{existing}' if existing else ''}",
    ],
)
def test_pythonpath_spelled_from_the_files_location_is_followed(tmp_path, setting):
    body = (
        "import os\nimport subprocess\nfrom pathlib import Path\n\n"
        "ROOT = Path(__file__).resolve().parents[1]\n"
        f"{setting}\n"
        "subprocess.run([sys.executable, '-c', 'import toolhelp'], env=env)"
    )
    files = {**TOOLS, "registered/test_x.py": registered_file(body)}
    document = dry(make_impact_repo(tmp_path / "repo", files), "tools/toolhelp.py")
    assert kept(document) == ["registered/test_x.py"]
    assert note_of(document, "registered/test_x.py") == ""


def test_a_path_constant_of_another_module_is_followed(tmp_path):
    """``from helpers import ROOT`` (``ROOT = Path(__file__).parents[1]`` there, or a
    re-export of it) names a directory for ``PYTHONPATH`` or a script to start."""
    files = {
        **TOOLS,
        "registered/roots.py": "from pathlib import Path\n\nROOT = Path(__file__).resolve().parents[1]\n",
        "registered/helpers.py": "from roots import ROOT\n\nTOOL = ROOT / 'tools' / 'toolhelp.py'\n",
        "registered/test_env.py": registered_file(
            "import os\nimport subprocess\nfrom roots import ROOT\n\n"
            "subprocess.run([sys.executable, '-c', 'import toolhelp'],\n"
            "               env={**os.environ, 'PYTHONPATH': str(ROOT / 'tools')})"
        ),
        "registered/test_script.py": registered_file(
            "import subprocess\nfrom helpers import TOOL\n\nsubprocess.run([sys.executable, str(TOOL)])"
        ),
    }
    document = dry(make_impact_repo(tmp_path / "repo", files), "tools/toolhelp.py")
    assert kept(document) == ["registered/test_env.py", "registered/test_script.py"]
    assert [e["note"] for e in document["change_impact"]["kept"]] == ["", ""]


def test_a_conftest_is_loaded_for_the_tests_below_it_with_its_sys_path_edits(tmp_path):
    # SGLang's layout: a conftest puts the directory above the registered tree on sys.path, so
    # `import registered.helpers` resolves there
    files = {
        "registered/deep/conftest.py": (
            "import sys\nfrom pathlib import Path\n\n"
            "_ROOT = Path(__file__).resolve().parents[2]\nsys.path.insert(0, str(_ROOT))\n"
        ),
        "registered/deep/helpers.py": "from pkg import util\n",
        "registered/deep/test_deep.py": registered_file("from registered.deep.helpers import util"),
    }
    root = make_impact_repo(tmp_path / "repo", files)
    document = dry(root, "registered/deep/helpers.py")
    assert kept(document) == ["registered/deep/test_deep.py"]
    assert note_of(document, "registered/deep/test_deep.py") == ""
    assert kept(dry(root, "pkg/util.py")) == [
        "registered/deep/test_deep.py",
        "registered/test_core.py",
        "registered/test_local.py",
        "registered/test_names.py",
    ]


def test_a_conftest_import_keeps_the_tests_below_it(tmp_path):
    files = {
        "registered/deep/conftest.py": "import pkg.pos\n",
        "registered/deep/test_deep.py": registered_file("import os"),
    }
    root = make_impact_repo(tmp_path / "repo", files)
    document = dry(root, "pkg/pos.py")
    assert kept(document) == ["registered/deep/test_deep.py", "registered/test_pos.py"]
    assert chain_of(document, "registered/deep/test_deep.py") == [
        "pkg/pos.py",
        "registered/deep/conftest.py",
        "registered/deep/test_deep.py",
    ]


# ---------------------------------------------------------------- submodules and links


def test_a_submodule_bump_runs_the_whole_suite(tmp_path):
    root = git_repo(make_impact_repo(tmp_path / "repo"))
    for commit in ("1" * 40, "2" * 40):  # a gitlink under a kernel directory, then a bump
        git(root, "update-index", "--add", "--cacheinfo", f"160000,{commit},kernels/csrc/third")
        git(root, "commit", "-q", "-m", f"submodule at {commit[:4]}")
    code, document = run_dry(root, "--changed-since", "HEAD~1")
    assert code == 0
    assert document["change_impact"]["run_everything_reasons"] == [
        "kernels/csrc/third is a git submodule whose commit changed: the files it changes are "
        "not listed"
    ]
    assert [f["path"] for f in document["files"]] == GPU_TESTS


def test_a_listed_submodule_directory_is_a_submodule_change(tmp_path):
    root = make_impact_repo(
        tmp_path / "repo",
        {".gitmodules": '[submodule "third"]\n\tpath = kernels/csrc/third\n\turl = x\n'},
    )
    (root / "kernels" / "csrc" / "third").mkdir()
    impact = dry(root, "kernels/csrc/third")["change_impact"]
    assert impact["changes"][0]["status"] == "submodule"
    assert impact["runs_everything"] is True


def test_a_changed_symbolic_link_runs_the_whole_suite(tmp_path):
    root = make_impact_repo(tmp_path / "repo")
    (root / "kernels" / "include" / "lib" / "alias.h").symlink_to("deep.h")
    impact = dry(root, "kernels/include/lib/alias.h")["change_impact"]
    assert impact["run_everything_reasons"] == [
        "kernels/include/lib/alias.h is a symbolic link that changed: what reads through it "
        "cannot be traced"
    ]


def test_a_link_to_a_file_reaches_the_tests_of_the_link(tmp_path):
    root = make_impact_repo(
        tmp_path / "repo",
        {
            "shared/rope.py": "X = 1\n",
            "registered/test_link.py": registered_file("import pkg.rope"),
        },
    )
    (root / "pkg" / "rope.py").symlink_to("../shared/rope.py")
    document = dry(root, "shared/rope.py")
    assert kept(document) == ["registered/test_link.py"]
    assert chain_of(document, "registered/test_link.py") == [
        "shared/rope.py",
        "pkg/rope.py",
        "registered/test_link.py",
    ]


def test_an_import_by_name_of_the_repositorys_code_that_resolves_nowhere_is_unproven(tmp_path):
    body = "import importlib\nMOD = importlib.import_module('lib.layers.rope')"
    files = {**ROPE, "registered/test_byname.py": registered_file(body)}
    document = dry(make_impact_repo(tmp_path / "repo", files), "pkg/core.py")
    assert "unproven import by name lib.layers.rope: resolves in no import root" in note_of(
        document, "registered/test_byname.py"
    )


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(["pyproject.toml", "setup.cfg", "setup.py", "pytest.ini"]),
    text=st.one_of(
        st.text(max_size=200),
        st.sampled_from(
            [
                "[tool.setuptools]\npackage-dir = 3\n",
                '[tool.setuptools.packages.find]\nwhere = [1, "..", "/abs"]\n',
                '[project]\nname = 7\n[tool.maturin]\npython-source = ["x"]\n',
                "[tool.poetry]\npackages = [{include = 1}, 2]\n",
                "[options]\npackage_dir =\n    = ../../outside\n",
                "from setuptools import setup\nsetup(packages=find_packages(where=1), package_dir=7)\n",
                "[pytest]\npythonpath = ../.. /etc nowhere\n",
            ]
        ),
    ),
)
def test_any_packaging_text_gives_roots_inside_the_tree_and_never_raises(
    tmp_path_factory, name, text
):
    root = make_impact_repo(tmp_path_factory.mktemp("tree") / "repo", {f"sub/{name}": text})
    roots = read_import_roots(RepoIndex(root))
    index = RepoIndex(root)
    assert all(r in index.dirs and not r.startswith("..") for r in roots.roots)


# ---------------------------------------------------------------- a property: no direct importer is dropped

_NAMES = st.sampled_from(["alpha", "beta", "gamma", "delta"])


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    where=st.sampled_from(["", "python/", "src/", "lib/code/"]),
    packaging=st.sampled_from(["none", "pyproject", "setup.cfg", "catalog"]),
    modules=st.lists(st.tuples(_NAMES, _NAMES), min_size=1, max_size=4, unique=True),
    changed=st.integers(min_value=0, max_value=3),
)
def test_a_test_that_imports_the_changed_module_is_always_kept(
    tmp_path_factory, where, packaging, modules, changed
):
    """Wherever the package lives and whatever says so (or nothing), a test whose own imports
    name the changed module is kept."""
    tmp = tmp_path_factory.mktemp("tree")
    files = {f"{where}app/__init__.py": ""}
    tests = {}
    for index, (package, module) in enumerate(modules):
        files[f"{where}app/{package}/__init__.py"] = ""
        files[f"{where}app/{package}/{module}.py"] = ""
        tests[f"registered/test_m{index}.py"] = registered_file(
            f"from app.{package} import {module}"
        )
    directory = where.rstrip("/")
    table = None
    if packaging == "pyproject" and directory:
        files[f"{directory}/pyproject.toml"] = SETUPTOOLS
    elif packaging == "setup.cfg" and directory:
        files[f"{directory}/setup.cfg"] = "[metadata]\nname = app\n"
    elif packaging == "catalog" and directory:
        from impact_tree import IMPACT_TABLE

        table = IMPACT_TABLE + f'python-roots = ["{directory}"]\n'
    root = make_impact_repo(tmp / "repo", {**files, **tests}, **({"table": table} if table else {}))
    package, module = modules[changed % len(modules)]
    document = dry(root, f"{where}app/{package}/{module}.py")
    importers = {
        f"registered/test_m{i}.py" for i, pair in enumerate(modules) if pair == (package, module)
    }
    assert importers <= set(kept(document))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
