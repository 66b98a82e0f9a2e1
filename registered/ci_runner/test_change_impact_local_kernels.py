"""A kernel file next to the code that builds it (``Path(__file__).parent / "kernels" / "k.cuh"``):
the change analysis resolves the loader's argument to the repository file, follows its
``#include`` closure, and keeps exactly the tests that build it instead of keeping them for every
kernel change; anything it cannot resolve still fails open. Facts on source snippets, selections
on generated trees (registered/ci_runner/impact_tree.py)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from impact_tree import chain_of, dry_changed, kept, make_impact_repo, registered_file

from ci_runner import register_cpu_ci
from ci_runner.impact.config import KernelLoader
from ci_runner.impact.python_facts import file_facts

register_cpu_ci(est_time=4, suite="base-a-test-cpu")

LOADERS = (KernelLoader("load_jit", ("cpp_files", "cuda_files")),)
PATHLIB = "from pathlib import Path\n"


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "impact-cache"))


def kernel_facts(source: str) -> list[list]:
    """The ``kernel`` facts of a snippet, without line numbers."""
    facts = file_facts(source.encode(), LOADERS, is_package=False)
    assert facts["error"] is None
    return [entry[:2] for entry in facts["kernel"]]


def call(argument: str) -> str:
    return f"def build():\n    return load_jit('k', cuda_files={argument})\n"


@pytest.mark.parametrize(
    ("source", "path"),
    [
        (PATHLIB + call('[str(Path(__file__).parent / "kernels" / "k.cuh")]'), "kernels/k.cuh"),
        (PATHLIB + call('[Path(__file__).resolve().parent / "k.cuh"]'), "k.cuh"),
        (PATHLIB + call('[Path(__file__).absolute().parent / "a/b/k.cuh"]'), "a/b/k.cuh"),
        (PATHLIB + call('[str(Path(__file__).with_name("k.cuh"))]'), "k.cuh"),
        (PATHLIB + call('[Path(__file__).parent.parent / "k.cuh"]'), "../k.cuh"),
        (PATHLIB + call('[Path(__file__).parents[1] / "csrc" / "k.cuh"]'), "../csrc/k.cuh"),
        (PATHLIB + call('[Path(__file__).parent.joinpath("kernels", "k.cuh")]'), "kernels/k.cuh"),
        (PATHLIB + call('[Path(__file__).parent / "x" / ".." / "k.cuh"]'), "k.cuh"),
        ("import pathlib\n" + call('[pathlib.Path(__file__).parent / "k.cuh"]'), "k.cuh"),
        ("import os\n" + call('[os.path.join(os.path.dirname(__file__), "k.cuh")]'), "k.cuh"),
        (
            "import os\n"
            + call(
                '[os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels", "k.cuh")]'
            ),
            "kernels/k.cuh",
        ),
        (
            "import os.path\n"
            + call('[os.path.join(os.path.dirname(os.path.realpath(__file__)), "k.cuh")]'),
            "k.cuh",
        ),
        (
            "from os.path import dirname, join\n" + call('[join(dirname(__file__), "k.cuh")]'),
            "k.cuh",
        ),
        ("import os.path as osp\n" + call('[osp.join(osp.dirname(__file__), "k.cuh")]'), "k.cuh"),
        ("import os\n" + PATHLIB + call('[os.fspath(Path(__file__).parent / "k.cuh")]'), "k.cuh"),
        # through module-level names bound once: a directory, a file, a segment, the whole list
        (
            PATHLIB
            + 'KERNELS = Path(__file__).parent / "kernels"\n'
            + call('[str(KERNELS / "k.cuh")]'),
            "kernels/k.cuh",
        ),
        (
            PATHLIB
            + 'HERE: Path = Path(__file__).resolve().parent\nKERNELS = HERE / "kernels"\n'
            + call('[KERNELS / "k.cuh"]'),
            "kernels/k.cuh",
        ),
        (PATHLIB + 'KERNEL = Path(__file__).with_name("k.cuh")\n' + call("[KERNEL]"), "k.cuh"),
        (
            PATHLIB + 'NAME = "k.cuh"\nHERE = Path(__file__).parent\n' + call("[HERE / NAME]"),
            "k.cuh",
        ),
        (
            PATHLIB + 'SOURCES = [str(Path(__file__).parent / "k.cuh")]\n' + call("SOURCES"),
            "k.cuh",
        ),
        # a name used before the line that binds it (a function body runs later)
        (call("[KERNEL]") + PATHLIB + 'KERNEL = Path(__file__).parent / "k.cuh"\n', "k.cuh"),
    ],
)
def test_a_path_spelled_from_the_file_location_resolves(source, path):
    assert kernel_facts(source) == [["local", path]]


@pytest.mark.parametrize(
    "source",
    [
        PATHLIB + call("[Path(__file__).parent / name]"),  # a variable
        PATHLIB + call('[Path(__file__).parent / f"k{n}.cuh"]'),  # computed
        PATHLIB + call('[Path(base) / "k.cuh"]'),  # not the file's location
        PATHLIB + call("[Path(__file__)]"),  # the file itself
        PATHLIB + call("[Path(__file__).parent]"),  # its directory
        PATHLIB + call('[Path(__file__).parent / "/abs/k.cuh"]'),  # an absolute segment
        PATHLIB + call('[Path(__file__).with_name("a/k.cuh")]'),  # not a name
        PATHLIB + call('[Path(__file__).parent.resolve(strict=True) / "k.cuh"]'),  # keywords
        "from mylib import Path\n" + call('[Path(__file__).parent / "k.cuh"]'),  # another Path
        call('[Path(__file__).parent / "k.cuh"]'),  # Path never imported
        "import os\n" + call('[os.path.join(os.path.dirname(__file__), "/k.cuh")]'),
        # names bound more than once anywhere in the file stand for nothing
        PATHLIB + 'HERE = Path(__file__).parent\nHERE = Path("/x")\n' + call('[HERE / "k.cuh"]'),
        PATHLIB
        + "HERE = Path(__file__).parent\n\ndef build(HERE):\n"
        + "    return load_jit('k', cuda_files=[HERE / 'k.cuh'])\n",
        PATHLIB
        + "HERE = Path(__file__).parent\nfor HERE in []:\n    pass\n"
        + call('[HERE / "k.cuh"]'),
        PATHLIB + '__file__ = "/elsewhere/x.py"\n' + call('[Path(__file__).parent / "k.cuh"]'),
        # bound inside a block, not at module level
        PATHLIB + "if True:\n    HERE = Path(__file__).parent\n" + call('[HERE / "k.cuh"]'),
        # a cycle of names
        "A = B\nB = A\n" + call("[A]"),
    ],
)
def test_anything_else_stays_unresolved(source):
    assert [kind for kind, _text in kernel_facts(source)] == ["unresolved"]


def test_literal_names_and_globs_keep_their_meaning():
    source = "K = 'elementwise/k.cuh'\n" + call("[K, f'v/c{n}.cuh', 'x.cuh']")
    assert kernel_facts(source) == [
        ["file", "elementwise/k.cuh"],
        ["glob", "v/c*.cuh"],
        ["file", "x.cuh"],
    ]


# ---------------------------------------------------------------- selections on a generated tree

LOCAL_TEST = registered_file(
    "from pathlib import Path\n\nfrom pkg.loader import load_jit\n\n"
    'KERNELS = Path(__file__).parent / "kernels"\n\n'
    "def module():\n"
    '    return load_jit("local", cuda_files=[str(KERNELS / "local.cuh")])\n',
    est=15,
)
LOCAL_FILES = {
    "registered/sub/test_local_kernel.py": LOCAL_TEST,
    # the kernel next to its test: an include of the library, one of its own directory
    "registered/sub/kernels/local.cuh": '#include <lib/only_b.h>  // For b\n#include "near.h"\n',
    "registered/sub/kernels/near.h": "#pragma once\n",
    # a helper one directory up builds a kernel of a sibling directory
    "registered/sub/test_helper_kernel.py": registered_file("import build_shared", est=25),
    "registered/sub/build_shared.py": (
        "import os\n\nfrom pkg.loader import load_jit\n\n"
        "SHARED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "
        '"shared")\n\n'
        "def module():\n"
        '    return load_jit("shared", cuda_files=[os.path.join(SHARED, "s.cuh")])\n'
    ),
    "registered/shared/s.cuh": "#include <lib/common.h>  // For common\n",
}
LOCAL = "registered/sub/test_local_kernel.py"
HELPER = "registered/sub/test_helper_kernel.py"


keeps = dry_changed


@pytest.mark.parametrize(
    ("changed", "expected"),
    [
        # a library header: the tests whose kernels include it, and no other
        ("kernels/include/lib/only_b.h", [LOCAL, "registered/test_pos.py"]),
        ("kernels/include/lib/deep.h", [HELPER, "registered/test_kern.py"]),
        # a header no kernel includes: nothing (before, these tests were kept for every change)
        ("kernels/include/lib/unused.h", []),
        # the test's own kernel files, outside the kernel directories
        ("registered/sub/kernels/local.cuh", [LOCAL]),
        ("registered/sub/kernels/near.h", [LOCAL]),
        ("registered/shared/s.cuh", [HELPER]),
    ],
)
def test_a_kernel_next_to_its_test_is_followed_exactly(tmp_path, changed, expected):
    root = make_impact_repo(tmp_path / "repo", LOCAL_FILES)
    document = keeps(root, changed)
    impact = document["change_impact"]
    assert impact["runs_everything"] is False, impact["run_everything_reasons"]
    assert kept(document) == expected
    assert all(entry["note"] == "" for entry in impact["kept"])  # no test kept for every change


def test_the_reason_chain_goes_through_the_local_kernel(tmp_path):
    root = make_impact_repo(tmp_path / "repo", LOCAL_FILES)
    document = keeps(root, "kernels/include/lib/only_b.h")
    entry = next(e for e in document["change_impact"]["kept"] if e["path"] == LOCAL)
    assert [(link["path"], link["how"]) for link in entry["chain"]] == [
        ("kernels/include/lib/only_b.h", "changed"),
        ("registered/sub/kernels/local.cuh", "#includes"),
        (LOCAL, "builds the kernel"),
    ]
    document = keeps(root, "kernels/include/lib/deep.h")
    assert chain_of(document, HELPER) == [
        "kernels/include/lib/deep.h",
        "kernels/include/lib/common.h",
        "registered/shared/s.cuh",
        "registered/sub/build_shared.py",
        HELPER,
    ]


def test_a_kernel_file_first_reached_through_a_string_still_has_its_includes(tmp_path):
    # test_names_it.py only names the file (a "names the file" edge, expanded first: its path
    # sorts before the test that builds it); the loader's edge must still read its #includes.
    files = {
        **LOCAL_FILES,
        "registered/sub/test_a_names_it.py": registered_file("DATA = 'kernels/local.cuh'"),
    }
    root = make_impact_repo(tmp_path / "repo", files)
    assert LOCAL in kept(keeps(root, "registered/sub/kernels/near.h"))


def test_unresolvable_local_paths_and_untraced_files_still_fail_open(tmp_path):
    files = {
        **LOCAL_FILES,
        "registered/sub/test_computed.py": registered_file(
            "from pathlib import Path\n\nfrom pkg.loader import load_jit\n\n"
            "def module(name):\n"
            '    return load_jit("c", cuda_files=[str(Path(__file__).parent / name)])\n'
        ),
        "registered/sub/kernels/orphan.cuh": "\n",
    }
    root = make_impact_repo(tmp_path / "repo", files)
    document = keeps(root, "kernels/include/lib/unused.h")
    assert kept(document) == ["registered/sub/test_computed.py"]  # kept for any kernel change
    assert "may build any kernel source" in document["change_impact"]["kept"][0]["note"]
    # a local kernel change is a kernel change: the computed loader may build it too
    assert kept(keeps(root, "registered/sub/kernels/local.cuh")) == [
        "registered/sub/test_computed.py",
        LOCAL,
    ]
    # a file no loader builds and no kernel includes: what reads it cannot be traced
    impact = keeps(root, "registered/sub/kernels/orphan.cuh")["change_impact"]
    assert impact["runs_everything"] is True
    assert impact["run_everything_reasons"] == [
        "registered/sub/kernels/orphan.cuh changed: neither a Python file nor under a kernel "
        "directory, so what reads it cannot be traced"
    ]
    # with a reason to run everything whatever the tests read, the graph is not built
    impact = keeps(root, "registered/sub/kernels/local.cuh", "pyproject.toml")["change_impact"]
    assert impact["run_everything_reasons"] == [
        "pyproject.toml changed (packaging or the catalog; no base commit to compare its tables with)"
    ]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
