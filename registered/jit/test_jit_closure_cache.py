"""The ``#include`` closure kept across processes (``jit_kernel.compiler.closure_cache``).

A stored closure is used only while every stat it recorded holds: a changed header, a new file
that shadows an include, a retargeted link, a removed file and a changed scanner all scan again;
a tree that changed within the racy window is not stored at all. The property test compares the
cached answer with a fresh scan after every step of random edits.
"""

import json
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jit_kernel.compiler.closure_cache as closure_cache
from ci_runner import register_cpu_ci
from cpp_includes import closure as cpp_closure
from jit_kernel.compiler.sources import Root, source_closure

register_cpu_ci(est_time=8, suite="base-a-test-cpu")


class Tree:
    """A kernel tree (``src/k.cuh`` and an include directory ``inc/``) whose edits advance
    every touched file's and directory's mtime past the last one: time moving on, which the
    racy rule waits for in real use (see ``settled`` below)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.src = root / "src"
        self.inc = root / "inc"
        self.src.mkdir(parents=True)
        self.inc.mkdir()
        self.clock = 1_000_000_000_000_000_000  # 2001, in ns: long settled

    def _tick(self, path: Path) -> None:
        self.clock += 1_000_000
        os.utime(path, ns=(self.clock, self.clock), follow_symlinks=False)

    def write(self, relative: str, text: str) -> Path:
        path = self.root / relative
        created = not path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        self._tick(path)
        if created:
            self._tick(path.parent)
        return path

    def remove(self, relative: str) -> None:
        path = self.root / relative
        path.unlink()
        self._tick(path.parent)

    def link(self, relative: str, target: str) -> None:
        path = self.root / relative
        if path.is_symlink() or path.exists():
            path.unlink()
        path.symlink_to(target)
        self._tick(path.parent)

    def cached(self, store: Path) -> object:
        """The cached answer for ``src/k.cuh``, as a fresh process gets it."""
        roots = [Root("inc", self.inc), Root("src", self.src)]
        cpp_closure._scan_memo.clear()
        return closure_cache.cached_source_closure([self.src / "k.cuh"], [self.inc], roots, store)

    def closures(self, store: Path) -> tuple[object, object]:
        """(cached answer, fresh scan) for ``src/k.cuh``."""
        cached = self.cached(store)
        cpp_closure._scan_memo.clear()
        roots = [Root("inc", self.inc), Root("src", self.src)]
        return cached, source_closure([self.src / "k.cuh"], [self.inc], roots)


@pytest.fixture
def settled(monkeypatch):
    """No racy window: the Tree's edits move mtimes on explicitly instead."""
    monkeypatch.setattr(closure_cache, "FRESH_NS", 0)


def scans(monkeypatch) -> list[Path]:
    """The files scanned from now on (a hit scans none)."""
    seen: list[Path] = []
    real = cpp_closure.resolve_file

    def counting(path, include_dirs):
        seen.append(path)
        return real(path, include_dirs)

    monkeypatch.setattr(cpp_closure, "resolve_file", counting)
    return seen


def test_hit_reads_no_header_and_a_changed_header_scans_again(tmp_path, settled, monkeypatch):
    tree = Tree(tmp_path / "t")
    tree.write("src/k.cuh", '#include "a.h"\n')
    tree.write("inc/a.h", "int a;\n")
    store = tmp_path / "store"
    first, fresh = tree.closures(store)
    assert first == fresh and len(list(store.glob("*.json"))) == 1
    seen = scans(monkeypatch)
    assert tree.cached(store) == fresh and seen == []
    tree.write("inc/a.h", "int b;\n")  # same size, new bytes
    cached, fresh = tree.closures(store)
    assert cached == fresh and cached != first


def test_a_new_file_that_shadows_an_include_is_seen(tmp_path, settled):
    tree = Tree(tmp_path / "t")
    tree.write("src/k.cuh", '#include "a.h"\n#include <sub/b.h>\n')
    tree.write("inc/a.h", "int a;\n")
    store = tmp_path / "store"
    tree.closures(store)
    tree.write("src/a.h", "int shadow;\n")  # a quote include looks next to k.cuh first
    cached, fresh = tree.closures(store)
    assert cached == fresh and any(label == "src/a.h" for label, _ in cached[0])
    tree.write("inc/sub/b.h", "int b;\n")  # a missing directory appears
    cached, fresh = tree.closures(store)
    assert cached == fresh and any(label == "inc/sub/b.h" for label, _ in cached[0])


def test_retargeted_link_and_removed_file_are_seen(tmp_path, settled):
    tree = Tree(tmp_path / "t")
    tree.write("src/k.cuh", '#include "a.h"\n')
    tree.write("inc/one.h", "int one;\n")
    tree.write("inc/two.h", "long two;\n")
    tree.link("inc/a.h", "one.h")
    store = tmp_path / "store"
    first, _ = tree.closures(store)
    tree.link("inc/a.h", "two.h")
    cached, fresh = tree.closures(store)
    assert cached == fresh and cached[0] != first[0]
    tree.remove("inc/a.h")
    cached, fresh = tree.closures(store)
    assert cached == fresh and cached[0] == [fresh[0][0]]


def test_a_changed_scanner_scans_again(tmp_path, settled, monkeypatch):
    tree = Tree(tmp_path / "t")
    tree.write("src/k.cuh", '#include "a.h"\n')
    tree.write("inc/a.h", "int a;\n")
    scanner = tree.write("scanner.py", "# v1\n")
    monkeypatch.setattr(closure_cache, "SCANNER_FILES", (str(scanner),))
    store = tmp_path / "store"
    tree.closures(store)
    seen = scans(monkeypatch)
    tree.cached(store)
    assert seen == []
    tree.write("scanner.py", "# v2\n")
    tree.cached(store)
    assert len(seen) == 2  # a miss: k.cuh and a.h scanned again


def test_racy_tree_is_not_stored(tmp_path):
    """Files changed within FRESH_NS of the scan: their stat proves nothing, nothing is stored."""
    tree = Tree(tmp_path / "t")
    (tree.src / "k.cuh").write_text('#include "a.h"\n')
    (tree.inc / "a.h").write_text("int a;\n")
    store = tmp_path / "store"
    cached, fresh = tree.closures(store)
    assert cached == fresh and not store.exists()


@pytest.mark.parametrize("damage", ["", "{", "[]", '{"request": 1}', None])
def test_damaged_store_is_ignored(tmp_path, settled, damage):
    tree = Tree(tmp_path / "t")
    tree.write("src/k.cuh", '#include "a.h"\n')
    tree.write("inc/a.h", "int a;\n")
    store = tmp_path / "store"
    tree.closures(store)
    (stored,) = store.glob("*.json")
    if damage is None:  # well-formed, but entries of another shape
        content = json.loads(stored.read_text())
        content["entries"] = 5
        damage = json.dumps(content)
    stored.write_text(damage)
    cached, fresh = tree.closures(store)
    assert cached == fresh


def test_unwritable_store_still_answers(tmp_path, settled):
    tree = Tree(tmp_path / "t")
    tree.write("src/k.cuh", '#include "a.h"\n')
    tree.write("inc/a.h", "int a;\n")
    blocker = tmp_path / "file"
    blocker.write_text("")
    cached, fresh = tree.closures(blocker / "store")  # a file where the directory would be
    assert cached == fresh


NAMES = ["a.h", "b.h", "sub/c.h"]
QUOTED, ANGLED = '"%s"', "<%s>"
PLACES = ["src", "inc"]
includes = st.lists(st.tuples(st.sampled_from(NAMES), st.booleans()), max_size=3).map(
    lambda items: "".join(f"#include {QUOTED if q else ANGLED}\n" % n for n, q in items)
)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.sampled_from(PLACES), st.sampled_from(NAMES), includes),
        st.tuples(st.just("remove"), st.sampled_from(PLACES), st.sampled_from(NAMES)),
    ),
    min_size=1,
    max_size=8,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(start=includes, edits=steps)
def test_cached_closure_always_equals_a_fresh_scan(tmp_path_factory, settled, start, edits):
    """After every edit of a random tree, the cached closure is what a fresh scan finds."""
    base = tmp_path_factory.mktemp("prop")
    tree = Tree(base / "t")
    tree.write("src/k.cuh", start)
    store = base / "store"
    for edit in edits:
        relative = f"{edit[1]}/{edit[2]}"
        if edit[0] == "write":
            tree.write(relative, edit[3])
        elif (tree.root / relative).exists():
            tree.remove(relative)
        cached, fresh = tree.closures(store)
        assert cached == fresh, edit


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
