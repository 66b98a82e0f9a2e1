"""Module-level changes that only bind names (ci_runner/impact/binding.py): the statement
classification and name reads, selections end to end on a generated repository recorded for
real, and a property test of soundness: every case whose outcome a random module-level edit
changes is kept."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import repo_root  # noqa: F401  (the repository root on sys.path)
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))

from impact_tree import git, git_repo
from recorded_tree import recorded_repo, select

from ci_runner import register_cpu_ci
from ci_runner.impact.binding import ModuleLevel
from ci_runner.impact.module_facts import module_facts

register_cpu_ci(est_time=50, suite="base-a-test-cpu")

TEST = "registered/test_mod.py"
MODULE_TEXT = [
    "import os",
    "A = 1",
    "B = [A, 2]",
    "def f():\n    return A",
    "def g(x=B):\n    return len(x)",
    "class K:\n    size = 3\n\n    def m(self):\n        return self.size",
    "def h():\n    return K().m()",
]
CASES = {
    "test_f": "assert mod.f() == 1",
    "test_g": "assert mod.g() == 2",
    "test_k": "assert mod.K().m() == 3",
    "test_h": "from pkg.mod import h\n    assert h() == 3",
    "test_literal": 'assert getattr(mod, "A") == 1',
    "test_dir": 'assert "zz" not in dir(mod)',
    "test_os": 'assert mod.os.sep == "/"',
    "test_env": 'assert "ZZ_SET" not in os.environ',
    "test_plain": "assert 1 + 1 == 2",
    "test_star": 'from pkg import star\n    assert not hasattr(star, "spare")',
}
FILES = {
    "pkg/__init__.py": "",
    "pkg/other.py": "X = 1\n",
    "pkg/effectful.py": "import os\n\nos.environ['ZZ_SET'] = '1'\n",
    "pkg/star.py": "from pkg.mod import *  # noqa: F403\n",
    "pkg/mod.py": "\n\n\n".join(MODULE_TEXT) + "\n",
    TEST: (
        "import os\nimport sys\n\nimport pytest\n\nfrom ci_runner import register_cpu_ci\n"
        "from pkg import mod\n\nregister_cpu_ci(est_time=9, suite='unit-cpu')\n\n\n"
        + "".join(f"def {name}():\n    {body}\n\n\n" for name, body in CASES.items())
        + "if __name__ == '__main__':\n"
        "    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))\n"
    ),
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The generated repository and its record: (root, record dir)."""
    return recorded_repo(tmp_path_factory.mktemp("binding"), FILES)


@pytest.fixture
def repo(recorded):
    root, records = recorded
    yield root, records
    (root / "pkg" / "mod.py").write_text(FILES["pkg/mod.py"])


def kept(root: Path, records: Path) -> tuple[set[str] | None, str]:
    """The cases of the test file the selection runs (None: every case) and the reason text."""
    code, impact = select(root, records, "pkg/mod.py")
    assert code == 0
    entry = next((e for e in impact["kept"] if e["path"] == TEST), None)
    if entry is None:
        return set(), ""
    cases = entry["cases"]
    if cases is None or cases["run"] is None:
        return None, (cases or {}).get("every_case_because", "") + str(entry["chain"])
    return {c["id"].split("::")[-1] for c in cases["run"]}, str(cases["run"])


def write_module(root: Path, statements: list[str]) -> None:
    (root / "pkg" / "mod.py").write_text("\n\n\n".join(statements) + "\n")


# ---------------------------------------------------------------------- classification

CLASS_READ = "class C:\n    def get(self):\n        pass\nclass D(C):\n    def get(self, g=C.get):\n        pass"


@pytest.mark.parametrize(
    ("source", "effect"),
    [
        ("def f(x=1, *, y=(2, 'a')):\n    return x", ""),
        ("import os", ""),
        ("from . import other", ""),
        ("A = B = [1, {'k': None}]", ""),
        ("A = -1\nB = A", ""),
        ("f = lambda x=1: x", ""),
        ("x: int = 3", ""),
        ('class K(Exception):\n    """doc"""\n    n = 1', ""),
        ("import os\nA = os.sep\ndef f(x=os.path.join):\n    pass", ""),
        ("A = frozenset({'a', 'b'})\nB = tuple([1, A])", ""),
        ("import threading\nLOCK = threading.Lock()", ""),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import numpy", ""),
        ("__all__ = ['f']\ndef f():\n    pass", ""),
        ("N = ['f']\n__all__ = N\ndef f():\n    pass", "an __all__ that is no list of strings"),
        ("__all__ = ['f', 'g']\ndef f():\n    pass", "__all__ lists g, which may not be bound"),
        ("N = 2\nclass K:\n    n = N", ""),
        ("from . import other\nclass K:\n    x = other.X", "an assignment of a computed value"),
        (
            "from dataclasses import dataclass, field\nD = 'd'\n@dataclass(frozen=True)\n"
            "class K:\n    a: int\n    b: str = D\n    c: list = field(default_factory=list)",
            "",
        ),
        ("print(1)", "a module-level call"),
        ("@deco\ndef f():\n    pass", "a decorated function"),
        ("A = f()", "an assignment of a computed value"),
        ("A = x[0]", "an assignment of a computed value"),
        ("import os\nA = os.nope", "os.nope may fail"),
        ("from . import other\nA = other.X", ""),  # other.py only binds X
        ("A = 1 + 2", "an assignment of a computed value"),
        ("A = frozenset([[]])", "an assignment of a computed value"),
        ("frozenset = list\nA = frozenset()", "frozenset may not be the builtin"),
        ("def f(x=g()):\n    pass", "a default value that is computed"),
        ("if X:\n    A = 1", "an if block"),
        ("if TYPE_CHECKING:\n    A = 1", "TYPE_CHECKING may not be typing.TYPE_CHECKING"),
        ("try:\n    import a\nexcept ImportError:\n    a = None", "a try block"),
        ("from m import *", "a star import"),
        ("__version__ = '1'", "it binds __version__"),
        ("def __getattr__(name):\n    pass", "it binds __getattr__"),
        ("class K(metaclass=M):\n    pass", "a class with keywords"),
        ("@dataclass\nclass K:\n    pass", "it reads dataclass, which may be unbound"),
        ("dataclass = 1\n@dataclass\nclass K:\n    pass", "dataclass may not be dataclasses"),
        (
            "from dataclasses import dataclass\n@dataclass\nclass K:\n    a: int = 1\n    b: int",
            "a dataclass field without a default after one with (b)",
        ),
        (
            "from dataclasses import dataclass\n@dataclass\nclass K:\n    a: list = []",
            "a dataclass field whose default may be mutable",
        ),
        (
            "from dataclasses import dataclass\n@dataclass(frozen=True)\nclass K:\n"
            "    def __setattr__(self, n, v):\n        pass",
            "a dataclass that defines __setattr__",
        ),
        ("L = []\nclass K:\n    x = L", "L may not hold an immutable constant"),
        # an __all__ that lists a name binds __all__, not the name's value in the module
        ("__all__ = ['N']\nN = 2\nclass K:\n    n = N", ""),
        ("__all__ = ['N']\nA = N\nN = 1", "it reads N, which may be unbound"),
        ("__all__ = ['os']\nimport os\nA = os.sep", ""),
        ("__all__ = ['g']\n__all__ = ['g']", "__all__ lists g, which may not be bound"),
        # a standard module's class without hooks as a base; an ABC's metaclass only collects
        ("import collections.abc\nclass K(collections.abc.MutableMapping):\n    n = 1", ""),
        ("import collections\nclass K(collections.OrderedDict):\n    pass", ""),
        ("import enum\nclass K(enum.Enum):\n    A = 1", "its base enum.Enum may run a hook"),
        ("import typing\nclass K(typing.NamedTuple):\n    a: int", "may run a hook"),
        ("collections = 1\nclass K(collections.abc.Mapping):\n    pass", "may run code"),
        ("class K(x.y.Base):\n    pass", "it reads x, which may be unbound"),
        ("class K(f().Base):\n    pass", "a class whose base is not a name or a module's"),
        # a name a repository submodule binds, read as the submodule's attribute
        ("from . import keys\ndef f(key=keys.hashkey):\n    pass", ""),
        ("from . import keys\ndef f(key=keys.missing):\n    pass", "keys.missing may run code"),
        ("from . import effectful\nA = effectful.X", ""),  # its print runs before X is bound
        ("from . import keys as k\nA = k.hashkey", "k.hashkey may run code"),
        ("from . import keys\nA = keys.hashkey.__doc__", "may run code"),
        # a name a class of the module binds, read from outside its body
        (CLASS_READ, ""),
        ("class C:\n    n = 1\nA = C.n", ""),
        ("class C:\n    n = 1\n    print(2)\nA = C.n", "a module-level call"),
        ("class C:\n    pass\nA = C.missing", "C.missing may run code"),
        ("class C:\n    n = 1\nC = 2\nA = C.n", "C.n may run code"),
        (
            "class M(type):\n    pass\nclass C(metaclass=M):\n    n = 1\nA = C.n",
            "a class with keywords",
        ),
        ("A = C.n\nclass C:\n    n = 1", "it reads C, which may be unbound"),
        ("from . import late\nA = late.last", ""),  # effects only before the binding
        ("from . import late\nA = late.early", "late.early may run code"),  # one after it
        ("class K:\n    x = y", "it reads y, which may be unbound"),
        ("A = B\nB = 1", "it reads B, which may be unbound"),
        ("o.attr = 1", "an assignment to something other than a name"),
        ("def f(x: Opt[int]):\n    pass", "an annotation that is evaluated"),
        (
            "class A:\n    def __init_subclass__(cls):\n        pass\nclass B(A):\n    pass",
            "its base A may run a hook",
        ),
        ("class B(bool):\n    pass", "its base bool may run a hook"),
        ("import numpy_that_is_not_installed", "import numpy_that_is_not_installed may fail"),
        ("from .other import Y", "from .other import Y: Y may not be bound there"),
        ("from . import effectful", ""),  # binding only for a test that already ran it
    ],
)
def test_statements_are_classified(tmp_path, source, effect):
    (tmp_path / "other.py").write_text("X = 1\n")
    (tmp_path / "effectful.py").write_text("print('imported')\nX = 1\n")
    (tmp_path / "keys.py").write_text(
        "import functools\n\n\ndef hashkey(*args):\n    return args\n"
    )
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "late.py").write_text("print(1)\nearly = 1\nprint(2)\nlast = 2\n")
    (tmp_path / "m.py").write_text(source + "\n")
    level = ModuleLevel(tmp_path, (), None, {"m.py"}, set(), set())
    why = level.first_import_effect("m.py") or ""
    assert effect in why and (why == "") == (effect == ""), why
    if source == "from . import effectful":
        assert "effectful.py" in level.first_runs


def test_future_annotations_are_not_evaluated():
    facts = module_facts("from __future__ import annotations\ndef f(x: Opt[int]) -> g():\n pass")
    assert facts is not None and not any(s.effect for s in facts.statements)


def test_the_reads_of_each_block():
    facts = module_facts(
        "import pkg.ops\n\n"
        "def a():\n    return helper(1) + pkg.ops.other\n\n"
        "def b():\n    from pkg.ops import third\n    return mock('pkg.ops.fourth')\n\n"
        "def c(o, n):\n    return getattr(o, n)\n\n"
        "def d(o):\n    return getattr(o, 'fifth')\n\n"
        "class K:\n    def e(self):\n        return vars(self)\n\n"
        "def outer():\n    def inner(x=default):\n        return hidden\n    return inner\n"
    )
    assert facts is not None
    blocks = facts.blocks
    assert {"helper"} <= blocks["a"].names and "other" in blocks["a"].attrs
    assert {"third", "fourth"} <= blocks["b"].attrs and not blocks["b"].dynamic
    assert blocks["c"].dynamic.startswith("getattr with a computed name")
    assert not blocks["d"].dynamic and "fifth" in blocks["d"].attrs
    assert blocks["K.e"].dynamic.startswith("vars")
    assert "default" in blocks["outer"].names and "hidden" not in blocks["outer"].names
    assert "hidden" in blocks["outer.inner"].names


def test_without_the_old_side_every_importer_is_kept(tmp_path):
    (tmp_path / "m.py").write_text("def f():\n    pass\n")
    level = ModuleLevel(tmp_path, (), None, {"m.py"}, {"m.py"}, set())
    assert level.change("m.py").effect == (
        "its module-level code changed and the record has no commit"
    )


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        (
            "import json\nA = 1\n",
            "it no longer runs from . import effectful, whose pkg/effectful.py line 1",
        ),
        ("from . import effectful\nA = 1\n", "binds only json"),  # the standard library
        ("from . import effectful\nimport json\nA = 1\nB = 2\n", "binds only B"),
        ("from . import effectful\nimport json\n", "binds only A"),
    ],
)
def test_the_old_side_comes_from_the_recorded_commit(tmp_path, new, expected):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "effectful.py").write_text("print('imported')\n")
    (package / "m.py").write_text("from . import effectful\nimport json\nA = 1\n")
    root = git_repo(tmp_path)
    commit = git(root, "rev-parse", "HEAD").strip()
    (package / "m.py").write_text(new)
    level = ModuleLevel(root, (), commit, {"pkg/m.py"}, {"pkg/m.py"}, set())
    assert expected in level.change("pkg/m.py").text()


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        ("", "binds only other"),  # pkg/__init__.py runs whenever pkg/m.py is imported
        ("if __name__ == '__main__':\n    pass\n", "it no longer runs from . import other"),
    ],
)
def test_a_removed_import_keeps_running_the_packages_of_its_module(tmp_path, tail, expected):
    """A removed import of a module whose package's ``__init__.py`` does more than bind names
    takes nothing away when the changed module is in that package; a module that may run as a
    script imports no package of its own."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("print('package loaded')\n")
    (package / "other.py").write_text("X = 1\n")
    (package / "m.py").write_text("from . import other\nA = 1\n" + tail)
    root = git_repo(tmp_path)
    commit = git(root, "rev-parse", "HEAD").strip()
    (package / "m.py").write_text("A = 1\n" + tail)
    level = ModuleLevel(root, (), commit, {"pkg/m.py"}, {"pkg/m.py"}, set())
    assert expected in level.change("pkg/m.py").text()


# ---------------------------------------------------------------------- end to end


def test_an_added_function_keeps_only_its_readers(repo):
    root, records = repo
    write_module(root, [*MODULE_TEXT, "def spare():\n    return 0"])
    cases, why = kept(root, records)
    # dir(mod) reads every name; pkg.star's star import binds spare, which test_star names
    assert cases == {"test_dir", "test_star"}
    assert "case ran registered/test_mod.py:test_star() which reads spare" in why


@pytest.mark.parametrize(
    "statement", ["import json", "import pytest", "import hypothesis", "from typing import Any"]
)
def test_an_import_of_a_loaded_module_only_binds(repo, statement):
    root, records = repo
    write_module(root, [*MODULE_TEXT, statement])
    cases, _ = kept(root, records)
    assert cases == {"test_dir"}


def test_a_changed_constant_keeps_its_readers(repo):
    root, records = repo
    write_module(root, [s.replace("A = 1", "A = 2") for s in MODULE_TEXT])
    cases, why = kept(root, records)
    assert cases == {"test_f", "test_g", "test_literal", "test_dir"}
    assert "pkg/mod.py: module-level change binds only A" in why
    assert "ran pkg/mod.py:f() which reads A" in why


def test_a_class_body_change_keeps_the_class_readers(repo):
    root, records = repo
    write_module(root, [s.replace("size = 3", "size = 4") for s in MODULE_TEXT])
    cases, _ = kept(root, records)
    assert cases == {"test_k", "test_h", "test_dir"}


@pytest.mark.parametrize(
    ("statement", "why"),
    [
        ("print('loaded')", "a module-level call (line"),
        (
            "from pkg import effectful",
            "imports pkg/effectful.py, which the test never ran (its line 3",
        ),
        ("C = undefined", "it reads undefined, which may be unbound there"),
        ("import junitparser", "imports junitparser, which the test never loaded"),
        ("from hypothesis import given", "from import hypothesis may fail or run code"),
    ],
)
def test_an_effect_keeps_every_importer(repo, statement, why):
    root, records = repo
    write_module(root, [*MODULE_TEXT, statement])
    cases, text = kept(root, records)
    assert cases is None
    assert why in text and "every importer kept" in text


# ---------------------------------------------------------------------- soundness

EDITS = [
    "def spare():\n    return 0",
    "NEW = 5",
    "A = 2",
    "import json",
    "import junitparser",
    "from pkg import other",
    "from pkg.other import X",
    "from pkg import effectful",
    "print('side effect')",
    "os.environ.setdefault('ZZ_SET', '1')",
    "os.environ['ZZ_SET'] = '1'",
    "C = undefined",
    "def deco(fn):\n    return fn\n\n\n@deco\ndef spare2():\n    return 1",
    "class New:\n    pass",
    "class K2(K):\n    size = 9",
    "class K:\n    size = 4\n\n    def m(self):\n        return self.size",
    "def g(x=(1,)):\n    return len(x)",
    "def f():\n    return 1",
    "zz = 1",
    "__all__ = ['f', 'g', 'K']",
    "NAMES = frozenset({'a', 'b'})",
    "from dataclasses import dataclass\n\n\n@dataclass\nclass DC:\n    a: int = 1\n    b: int",
    "from dataclasses import dataclass\n\n\n@dataclass\nclass DC:\n    a: int\n    b: int = 1",
]
OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["insert", "delete", "replace"]),
        st.integers(0, len(MODULE_TEXT)),
        st.sampled_from(EDITS),
    ),
    min_size=1,
    max_size=2,
)


RUN_CASES = """
import importlib.util, json, sys
sys.path.insert(0, ".")
found = {}
try:
    spec = importlib.util.spec_from_file_location("test_mod", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
except BaseException:
    module = None
for name in sys.argv[2:]:
    try:
        getattr(module, name)()
        found[name] = "PASSED"
    except BaseException:
        found[name] = "FAILED"
print(json.dumps(found))
"""


def outcomes(root: Path) -> dict[str, str]:
    """Each case of the test file run for real, in a fresh interpreter (a module that fails to
    import fails every case): ``{name: PASSED | FAILED}``."""
    env = {k: v for k, v in os.environ.items() if k != "ZZ_SET"}
    result = subprocess.run(
        [sys.executable, "-c", RUN_CASES, TEST, *CASES],
        cwd=root, capture_output=True, text=True, env=env, timeout=120, check=True,
    )  # fmt: skip
    return json.loads(result.stdout.splitlines()[-1])  # the module may print when imported


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(operations=OPERATIONS)
@example(operations=[("insert", 7, "os.environ.setdefault('ZZ_SET', '1')")])
@example(operations=[("delete", 1, "")])
@example(operations=[("replace", 3, "__all__ = ['f', 'g', 'K']")])
@example(operations=[("replace", 0, "import json")])
@example(operations=[("insert", 7, "def spare():\n    return 0")])
@example(operations=[("insert", 1, "from pkg import effectful")])
@example(
    operations=[
        ("replace", 5, "class K:\n    size = 4\n\n    def m(self):\n        return self.size")
    ]
)
def test_every_case_whose_outcome_changes_is_kept(repo, operations):
    root, records = repo
    statements = list(MODULE_TEXT)
    for operation, index, text in operations:
        index = min(index, len(statements) - (operation != "insert"))
        if operation == "insert":
            statements.insert(index, text)
        elif operation == "delete" and len(statements) > 1:
            del statements[index]
        else:
            statements[index] = text
    write_module(root, statements)
    try:
        cases, why = kept(root, records)
        changed = {name for name, state in outcomes(root).items() if state != "PASSED"}
    finally:
        write_module(root, MODULE_TEXT)
    missed = changed if cases == set() else (changed - cases if cases is not None else set())
    assert not missed, f"dropped {sorted(missed)} whose outcome changed; kept {cases}: {why}"


# ---------------------------------------------------------------------- __all__ and reached imports

EXPORTED = ("f", "g", "h", "k")
EXPORT_TEST = "registered/test_exports.py"
DIRECT_TEST = "registered/test_direct.py"


def _exports_module(names: list[str]) -> str:
    return f"__all__ = {names!r}\n\n\n" + "".join(
        f"def {n}(x=1):\n    return x\n\n\n" for n in EXPORTED
    )


def _registered(imports: str, cases: dict[str, str]) -> str:
    return (
        "import sys\n\nimport pytest\n\nfrom ci_runner import register_cpu_ci\n"
        f"{imports}\n\nregister_cpu_ci(est_time=9, suite='unit-cpu')\n\n\n"
        + "".join(f"def {name}():\n    {body}\n\n\n" for name, body in cases.items())
        + "if __name__ == '__main__':\n"
        "    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))\n"
    )


EXPORTS_BEFORE = ["f", "g"]
EXPORT_CASES = {
    **{f"test_star_{n}": f'assert hasattr(star, "{n}") is {n in EXPORTS_BEFORE}' for n in EXPORTED},
    "test_all": f"assert sorted(ex.__all__) == {sorted(EXPORTS_BEFORE)!r}",
    "test_call": "assert ex.f() == 1",
    "test_user": "assert user.twice() == 2",
    "test_pair_g": "assert pair.g() == 1",
}
EXPORT_FILES = {
    "pkg/__init__.py": "",
    "pkg/ex.py": _exports_module(EXPORTS_BEFORE),
    "pkg/star.py": "from pkg.ex import *  # noqa: F403\n",
    # re-exports f from ex, and has an effect: importing it for the first time does more
    "pkg/relay.py": "import os\n\nfrom pkg.ex import f\n\nos.environ.setdefault('ZZ_RELAY', '1')\n",
    "pkg/user.py": "from pkg.relay import f\n\n\ndef twice():\n    return 2 * f()\n",
    # imports f and g: a change to f leaves its g the function it was
    "pkg/pair.py": "from pkg.ex import f, g\n",
    EXPORT_TEST: _registered("from pkg import ex, pair, star, user", EXPORT_CASES),
    DIRECT_TEST: _registered("from pkg import ex", {"test_g": "assert ex.g() == 1"}),
}


@pytest.fixture(scope="module")
def exports_repo(tmp_path_factory):
    """A module with ``__all__``, a star import of it, and a chain of re-exports through a
    module with an effect (pkg/relay.py), recorded: (root, record dir)."""
    return recorded_repo(tmp_path_factory.mktemp("exports"), EXPORT_FILES)


def kept_in(root: Path, records: Path, test: str) -> set[str] | None:
    """The cases of ``test`` that a change of pkg/ex.py keeps (None: every case)."""
    code, impact = select(root, records, "pkg/ex.py")
    assert code == 0
    entry = next((e for e in impact["kept"] if e["path"] == test), None)
    if entry is None:
        return set()
    cases = entry["cases"]
    if cases is None or cases["run"] is None:
        return None
    return {c["id"].split("::")[-1] for c in cases["run"]}


def test_a_changed_all_reaches_only_the_names_one_side_lists(exports_repo):
    root, records = exports_repo
    (root / "pkg" / "ex.py").write_text(_exports_module(["f", "g", "h"]))
    try:
        cases = kept_in(root, records, EXPORT_TEST)
    finally:
        (root / "pkg" / "ex.py").write_text(EXPORT_FILES["pkg/ex.py"])
    # f and g: the star import binds the same functions as before
    assert cases == {"test_star_h", "test_all"}


def test_an_unchanged_import_reached_by_a_change_runs_nothing_for_the_first_time(exports_repo):
    """pkg/user.py's ``from pkg.relay import f`` reads the changed f, but it ran before the change
    as after it: a test that never ran pkg/relay.py (test_direct) is decided by what it reads;
    pkg/pair.py's ``from pkg.ex import f, g`` reaches f alone (test_pair_g reads its g)."""
    root, records = exports_repo
    (root / "pkg" / "ex.py").write_text(
        EXPORT_FILES["pkg/ex.py"].replace("def f(x=1)", "def f(x=2)")
    )
    try:
        assert kept_in(root, records, DIRECT_TEST) == set()
        # test_all spells 'f' in a string: a name is matched by spelling
        assert kept_in(root, records, EXPORT_TEST) == {
            "test_all", "test_call", "test_star_f", "test_user"
        }  # fmt: skip
    finally:
        (root / "pkg" / "ex.py").write_text(EXPORT_FILES["pkg/ex.py"])


RUN_EXPORT_CASES = RUN_CASES.replace('"test_mod"', '"test_exports"')


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    names=st.lists(st.sampled_from(EXPORTED), unique=True, max_size=len(EXPORTED)),
    default=st.sampled_from([1, 2]),
    bound=st.sets(st.sampled_from(EXPORTED), min_size=1),
)
@example(names=["g", "f"], default=1, bound={"f", "g", "h", "k"})
@example(names=["f", "g", "h"], default=2, bound={"f", "g", "h", "k"})
@example(names=["f", "g", "h"], default=1, bound={"f", "g"})
def test_every_case_an_all_or_a_default_change_breaks_is_kept(exports_repo, names, default, bound):
    """Random ``__all__`` lists (any order, names defined or not) and a changed default: every
    case whose real outcome changes is kept."""
    root, records = exports_repo
    text = f"__all__ = {names!r}\n\n\n" + "".join(
        f"def {n}(x={default if n == 'f' else 1}):\n    return x\n\n\n" for n in sorted(bound)
    )
    (root / "pkg" / "ex.py").write_text(text)
    try:
        cases = kept_in(root, records, EXPORT_TEST)
        result = subprocess.run(
            [sys.executable, "-c", RUN_EXPORT_CASES, EXPORT_TEST, *EXPORT_CASES],
            cwd=root, capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        failed = {n for n, s in json.loads(result.stdout.splitlines()[-1]).items() if s != "PASSED"}
    finally:
        (root / "pkg" / "ex.py").write_text(EXPORT_FILES["pkg/ex.py"])
    missed = failed if cases == set() else (failed - cases if cases is not None else set())
    assert not missed, f"dropped {sorted(missed)} whose outcome changed; kept {cases}"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
