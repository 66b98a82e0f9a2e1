"""The identifier index of the binding rule (ci_runner/impact/identifiers.py) and its cache
(identifier_cache.py): the index holds every name the statement facts read, and separately what the
module-level statements read, so ruling a file out by it is sound; the cache is keyed by content, trusts a stat only once it settled, survives
damage, and a cold run parses in forked workers."""

import ast
import json
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import repo_root  # the repository root on sys.path
from coarse_clock import CoarseClock
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_runner import register_cpu_ci
from ci_runner.impact import identifier_cache
from ci_runner.impact.blocks import MODULE, function_nodes
from ci_runner.impact.identifier_cache import IdentifierCache
from ci_runner.impact.identifiers import identifiers
from ci_runner.impact.module_facts import module_facts

register_cpu_ci(est_time=12, suite="base-a-test-cpu")

SNIPPETS = [
    "import os.path",
    "from pkg.sub import helper as h, other",
    "from . import sibling",
    "from pkg import *",
    "X = getattr(os, NAME)",
    "Y = 'pkg.ops.helper'",
    "@decorate(arg)\ndef f(a=DEFAULT, *, b: Ann = 2) -> Ret:\n    return inner.attr",
    "def f():\n    def g(x=outer_default):\n        return vars()\n    return g",
    "class C(Base):\n    size = 3\n    def m(self):\n        return self.size\n"
    "    @property\n    def p(self):\n        return globals()",
    "@dataclass\nclass D:\n    x: int = 0",
    "def k():\n    @dataclass\n    class Local:\n        y: int = 1\n    return Local",
    "def h():\n    return lambda q=setattr(o, 'a', 1): q.__dict__",
    "if TYPE_CHECKING:\n    from typing import Any",
    "try:\n    import missing\nexcept ImportError:\n    def missing_fallback():\n        return hasattr(m, n)",
    "for item in items:\n    total += item.value",
    "async def co():\n    async with lock:\n        await thing.run()",
    "match command:\n    case Point(x=0):\n        pass",
    "def f():\n    return 1",  # a second f: block f#2
]


def statement_union(source: str):
    """What module_facts reads, joined over statements and blocks."""
    facts = module_facts(source)
    reads = [s.reads for s in facts.statements] + list(facts.blocks.values())
    names = set().union(*(r.names for r in reads))
    attrs = set().union(*(r.attrs for r in reads))
    dynamic = {k: r.dynamic for k, r in facts.blocks.items() if r.dynamic}
    module_dynamic = any(s.reads.dynamic for s in facts.statements)
    module_names = set().union(*(s.reads.names for s in facts.statements))
    module_attrs = set().union(*(s.reads.attrs for s in facts.statements))
    return names, attrs, dynamic, module_dynamic, facts.star_import, module_names, module_attrs


def assert_same_as_statement_facts(source: str) -> None:
    found = identifiers(source)
    names, attrs, dynamic, module_dynamic, star, module_names, module_attrs = statement_union(
        source
    )
    assert found.names == names
    assert found.attrs == attrs
    # what module-level statements read: the binding rule follows only these
    assert found.module_names == module_names
    assert found.module_attrs == module_attrs
    assert {k: v for k, v in found.dynamic.items() if k != MODULE} == dynamic
    assert (MODULE in found.dynamic) == module_dynamic
    assert found.star == star
    keys = {key for key, _ in function_nodes(ast.parse(source))}
    assert set(found.dynamic) - {MODULE} <= keys


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(SNIPPETS), min_size=1, max_size=8))
def test_identifiers_hold_what_the_statement_facts_read(snippets):
    assert_same_as_statement_facts("\n".join(snippets) + "\n")


def test_identifiers_of_this_repository_match():
    """Real code: every file of the change-impact package."""
    files = sorted((repo_root.ROOT / "ci_runner" / "impact").glob("*.py"))
    assert len(files) > 10
    for path in files:
        assert_same_as_statement_facts(path.read_text())


def test_a_file_that_does_not_parse_has_none():
    assert identifiers("def (:\n") is None


# --------------------------------------------------------------------------- the cache


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("import os\nX = os.sep\n")
    (root / "pkg" / "b.py").write_text("def f():\n    return getattr(o, n)\n")
    (root / "pkg" / "bad.py").write_text("def (:\n")
    old = time.time() - 100  # settled: older than the racy window
    for path in (root / "pkg").iterdir():
        os.utime(path, (old, old))

    def stat_with_settable_ctime(path):  # utime cannot set the change time: take the mtime's
        st = os.stat(path)
        return SimpleNamespace(
            st_size=st.st_size, st_mtime_ns=st.st_mtime_ns, st_ctime_ns=st.st_mtime_ns,
            st_ino=st.st_ino, st_dev=st.st_dev,
        )  # fmt: skip

    monkeypatch.setattr(identifier_cache, "_stat", stat_with_settable_ctime)
    return root


def cache_file(tmp_path: Path) -> Path:
    (found,) = (tmp_path / "cache").glob("identifiers-*.json")
    return found


def test_a_warm_cache_reads_no_settled_file(repo, tmp_path, monkeypatch):
    first = IdentifierCache(repo)
    first.prefetch(["pkg/a.py", "pkg/b.py", "pkg/bad.py", "pkg/gone.py"])
    assert first.parsed == 3
    assert "os" in first.get("pkg/a.py").names and first.get("pkg/bad.py") is None
    assert first.get("pkg/gone.py") is None
    first.save()
    monkeypatch.setattr(identifier_cache, "_read", lambda p: pytest.fail(f"{p} was read"))
    second = IdentifierCache(repo)
    assert second.get("pkg/b.py").dynamic == {"f": "getattr with a computed name (line 2)"}
    assert second.get("pkg/bad.py") is None and second.parsed == 0


def test_a_file_changed_between_runs_is_read_again(repo, tmp_path):
    first = IdentifierCache(repo)
    assert "sep" in first.get("pkg/a.py").attrs
    first.save()
    (repo / "pkg" / "a.py").write_text("import os\nY = os.linesep\n")
    second = IdentifierCache(repo)
    assert "linesep" in second.get("pkg/a.py").attrs and second.parsed == 1


def test_an_edit_within_the_timestamp_granularity_is_not_trusted_by_stat(repo, monkeypatch):
    """A rewrite on a coarse clock keeps size, times and inode: a stat recorded while the file
    was that fresh cannot vouch for its content (git's racy-timestamp rule)."""
    clock = CoarseClock.install(monkeypatch, identifier_cache)
    module = repo / "pkg" / "a.py"
    module.write_text("A = one.xx\n")
    first = IdentifierCache(repo)
    assert "xx" in first.get("pkg/a.py").attrs
    first.save()
    module.write_text("A = one.yy\n")  # same size, and the clock shows the same times
    second = IdentifierCache(repo)
    assert "yy" in second.get("pkg/a.py").attrs
    second.save()
    clock.settle()  # settled: the stat is trusted
    IdentifierCache(repo).save()
    third = IdentifierCache(repo)
    third.get("pkg/a.py")
    third.save()
    module.write_text("A = one.zz\n")  # same size again: only the content would tell
    monkeypatch.setattr(identifier_cache, "_read", lambda p: pytest.fail(f"{p} was read"))
    assert "yy" in IdentifierCache(repo).get("pkg/a.py").attrs


@pytest.mark.parametrize(
    "damage",
    [
        ["not", "an", "entry"],
        [None, "0" * 64, [["os"], ["sep"], {}, "yes"]],  # star is not a boolean
        [None, "0" * 64, [["os", 3], [], {}, False]],  # a name that is not a string
        [[1, 2], "0" * 64, None],  # a stamp of two numbers
        [None, "short", None],
    ],
)
def test_a_damaged_entry_is_read_again_and_rewritten(repo, tmp_path, capsys, damage):
    first = IdentifierCache(repo)
    first.get("pkg/a.py")
    first.save()
    path = cache_file(tmp_path)
    data = json.loads(path.read_text())
    data["entries"]["pkg/a.py"] = damage
    path.write_text(json.dumps(data))
    second = IdentifierCache(repo)
    assert "sep" in second.get("pkg/a.py").attrs and second.parsed == 1
    second.save()
    assert "damaged, ignored and rewritten: pkg/a.py" in capsys.readouterr().err
    assert IdentifierCache(repo).get("pkg/a.py") == second.get("pkg/a.py")


def test_a_damaged_cache_file_only_costs_time(repo, tmp_path, capsys):
    first = IdentifierCache(repo)
    first.prefetch(["pkg/a.py", "pkg/b.py"])
    first.save()
    cache_file(tmp_path).write_text("{not json")
    second = IdentifierCache(repo)
    second.prefetch(["pkg/a.py", "pkg/b.py"])
    assert second.parsed == 2 and "sep" in second.get("pkg/a.py").attrs
    second.save()
    assert "identifier cache" in capsys.readouterr().err
    assert json.loads(cache_file(tmp_path).read_text())["format"] == identifier_cache.FORMAT


def test_an_unwritable_cache_is_one_warning(repo, tmp_path, monkeypatch, capsys):
    (tmp_path / "blocked").write_text("a file where a directory should be")
    monkeypatch.setenv("CI_RUNNER_CACHE_DIR", str(tmp_path / "blocked"))
    cache = IdentifierCache(repo)
    assert "sep" in cache.get("pkg/a.py").attrs
    cache.save()
    assert "warning: identifier cache not written" in capsys.readouterr().err


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
