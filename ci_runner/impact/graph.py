"""The dependency graph of a suite's test files: every repository file each test can read.

Nodes are root-relative POSIX paths. An edge ``a -> b`` means "running ``a`` executes or reads
``b``", with how (:data:`IMPORT`, :data:`INCLUDE`, ...). The graph is built forward from the
test files, over the facts of each Python file (:mod:`.python_facts`) and, for the kernel sources
a loader names, their ``#include`` closure, computed by :mod:`cpp_includes` exactly as the JIT
compiler computes the files of its cache key.

Where ``import x.y`` resolves (the *bases*): the root (the runner puts it on PYTHONPATH); the
import roots the packaging declares anywhere in the tree and the catalog's ``python-roots``
(:mod:`.import_roots`); pytest's ``pythonpath``; the directory of every test file
(``sys.path[0]`` of ``python <file>``) and, for a test inside a package, the first directory
above it that is not one (pytest's ``rootdir``-less ``prepend`` import mode puts it on
``sys.path``); directories a file puts on ``sys.path`` by a path spelled from its own location;
and, for a file outside any package (a script), its own directory. A graph built from some of
the tests (``tests``: those no record decides) takes the test directories, ``conftest.py``
files and their ``sys.path`` edits of the whole suite (``suite``), so it resolves as the graph
of every test does. A name found in several bases resolves to all of them, which can only add
edges. A test also depends on every ``conftest.py`` above it (pytest loads them).

What the graph cannot follow is recorded as a :class:`Site`, and a test that reaches one is kept
(see :mod:`.selection`): an import by a name computed at run time that no rule resolves, a
kernel loader given a computed file, a file that does not parse, test code that lists a
directory, and everything *unproven*: an import that resolves nowhere although its name is the
repository's (:meth:`DependencyGraph.first_party`), a ``sys.path`` edit to a computed
directory, Python started with computed code or on a computed script, a file loaded by a
computed path, an ``#include`` that resolves nowhere although the repository has the file, and
an ``#include`` that ``cpp_includes`` itself reports unproven (``#include MACRO``).
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ci_runner.impact.config import NAMED_MODULES, ImpactConfig
from ci_runner.impact.fact_cache import FactCache
from ci_runner.impact.import_roots import ImportRoots, read_import_roots
from ci_runner.impact.index import RepoIndex
from ci_runner.impact.python_facts import DOCUMENT_SUFFIXES
from cpp_includes import Resolved, include_chain, include_closure, resolve_include, scan_file

IMPORT = "imports"
DYNAMIC = "imports by name"
NAMES = "names the module"
FILE_NAME = "names the file"
RUNS = "runs the file"
SUBMODULE = "lists the submodule"
PACKAGE = "lists the package"
CONFTEST = "pytest loads it"
LINK = "links to"
KERNEL = "builds the kernel"
INCLUDE = "#includes"

DYNAMIC_SITE = "dynamic import"
KERNEL_SITE = "kernel loader"
UNREADABLE_SITE = "unreadable file"
LISTING_SITE = "directory listing"
UNPROVEN_SITE = "unproven"  # what loads code the analysis cannot name: kept for every change
BUILT_SITE = "module not in the tree"  # compiled, generated or gone: see selection
INCLUDE_SITE = "unproven #include"  # a directive cpp_includes cannot resolve statically


@dataclass(frozen=True)
class Site:
    """A place whose dependencies cannot be followed statically."""

    path: str
    line: int
    kind: str  # one of the *_SITE kinds
    text: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.kind} {self.text}"


def _top_names(facts: dict) -> set[str]:
    """The top-level names a file's imports, imports by name and module strings start with."""
    names = {
        module.split(".")[0] for level, module, _n, _l in facts.get("imports", ()) if not level
    }
    names.update(
        text.split(".")[0] for kind, text, _l in facts.get("dynamic", ()) if kind != "unresolved"
    )
    names.update(text.split(".")[0] for text in facts.get("names", ()))
    return names


def _outside(directory: str, value: str) -> bool:
    """Whether a path relative to ``directory`` leads out of the repository."""
    return posixpath.normpath(posixpath.join(directory, value)).startswith("..")


class DependencyGraph:
    """The files reachable from ``tests``, their edges, and the sites that cannot be followed."""

    def __init__(
        self,
        config: ImpactConfig,
        index: RepoIndex,
        cache: FactCache,
        tests: Iterable[str],
        roots: ImportRoots | None = None,
        suite: Iterable[str] | None = None,
    ) -> None:
        self.config = config
        self.index = index
        self.cache = cache
        self.tests = sorted(set(tests))
        # The tests whose directories, conftest files and own sys.path edits make the bases
        # (every test's, so a graph built from some of them resolves as the whole one does;
        # none when no test is left to resolve for)
        self.suite = sorted({*(suite or ()), *self.tests}) if self.tests else []
        self.roots = roots if roots is not None else read_import_roots(index)
        self._registered = config.registered_dir.rstrip("/") + "/"
        self._include_dirs = [config.root / d for d in config.kernel_include_dirs]
        self._includes: dict[Path, Resolved] = {}  # each file's includes, resolved once
        self._unresolved_includes: dict[Path, list[str]] = {}
        self._first_party: dict[str, str | None] = {}
        self._path_dirs: set[str] = set()  # directories files put on sys.path
        self._build()

    # ------------------------------------------------------------------ module resolution

    def _set_bases(self) -> None:
        test_dirs = [posixpath.dirname(t) for t in self.suite]
        package_bases = [self._package_base(d) for d in test_dirs]
        roots = [*self.config.python_roots, *self.roots.roots]
        bases = ["", *roots, *test_dirs, *package_bases, *sorted(self._path_dirs)]
        self.bases = list(dict.fromkeys(b + "/" if b else "" for b in bases))
        self._bases_of: dict[str, list[str]] = {}
        for base in self.bases:
            for name in self.index.children.get(base, ()):
                self._bases_of.setdefault(name, []).append(base)
        for name, root in self.roots.packages:  # a root for one package only
            base = f"{root}/" if root else ""
            bases = self._bases_of.setdefault(name, [])
            bases += [] if base in bases else [base]
        self._resolved: dict[str, tuple[tuple[str, ...], bool]] = {}

    def _package_base(self, directory: str) -> str:
        """The first directory at or above ``directory`` that is not a package."""
        while directory and f"{directory}/__init__.py" in self.index.files:
            directory = posixpath.dirname(directory)
        return directory

    def _in_base(self, base: str, parts: list[str]) -> tuple[list[str], bool] | None:
        """The files ``import a.b.c`` executes when ``a`` is found in ``base`` (package
        ``__init__`` files, then the module), and whether ``c`` itself was found; None when ``a``
        is not there."""
        files = self.index.files
        found: list[str] = []
        current = base
        for position, part in enumerate(parts):
            init = f"{current}{part}/__init__.py"
            module = f"{current}{part}.py"
            is_dir = f"{current}{part}" in self.index.dirs
            if init in files:
                found.append(init)
            elif module in files:
                found.append(module)
                return found, position == len(parts) - 1
            elif not is_dir:
                return (found, False) if position else None
            current = f"{current}{part}/"
        return found, True

    def resolve(self, name: str) -> tuple[str, ...]:
        """The files ``import name`` executes, in every base it is found in (memoized)."""
        return self._resolve(name)[0]

    def _resolve(self, name: str) -> tuple[tuple[str, ...], bool]:
        """:meth:`resolve`, and whether ``name`` itself was found as a module in some base."""
        cached = self._resolved.get(name)
        if cached is not None:
            return cached
        parts = name.split(".")
        files: list[str] = []
        complete = False
        for base in self._bases_of.get(parts[0], ()):
            result = self._in_base(base, parts)
            if result is not None:
                files.extend(result[0])
                complete = complete or result[1]
        resolved = (tuple(dict.fromkeys(files)), complete)
        self._resolved[name] = resolved
        return resolved

    def first_party(self, module: str) -> str | None:
        """Why an import of ``module`` that resolves nowhere may still load the repository's
        code, or None: its top-level name is a package the packaging declares, a link to a
        directory, or the repository holds the module (``x/a/b.py`` for ``a.b``) where ``x``
        lies in no package, so putting ``x`` on ``sys.path`` would import it."""
        known = self._first_party.get(module, "")
        if known != "":
            return known
        parts = module.split(".")
        why: str | None = None
        if parts[0] in self.roots.names:
            why = f"'{parts[0]}' is a package the repository's packaging declares"
        elif links := self.index.linked(parts[0]):
            why = f"'{parts[0]}' is a link to a directory ({links[0]})"
        else:
            for length in range(len(parts), 0, -1):
                places = self.index.module_places(".".join(parts[:length]))
                if places:
                    why = f"the repository has {places[0]}"
                    break
        self._first_party[module] = why
        return why

    def _named(self, name: str) -> list[str]:
        """The module a dotted string names (its longest prefix that is a module), if any."""
        parts = name.split(".")
        if parts[0] not in self._bases_of:
            return []
        for length in range(len(parts), 0, -1):
            hits: list[str] = []
            for base in self._bases_of[parts[0]]:
                result = self._in_base(base, parts[:length])
                if result is not None and result[1] and result[0]:
                    hits.extend(result[0])
            if hits:
                return hits
        return []

    # ------------------------------------------------------------------ edges of one file

    def _python_edges(self, path: str) -> list[tuple[str, str]]:
        facts = self.cache.facts(path)
        if facts.get("error"):
            self.sites.append(Site(path, 0, UNREADABLE_SITE, str(facts["error"])))
            return []
        edges: list[tuple[str, str]] = []
        directory = posixpath.dirname(path)
        own = directory + "/" if directory else ""
        script = not self.index.in_package(directory)  # run as a script: its dir is sys.path[0]
        for level, module, names, line in facts["imports"]:
            if level:
                edges += [(f, IMPORT) for f in self._relative(path, level, module, names, line)]
                continue
            edges += [
                (f, IMPORT) for f in self._absolute(path, own if script else None, module, line)
            ]
            for name in names or ():
                edges += [(f, IMPORT) for f in self.resolve(f"{module}.{name}")]
                if script:
                    local = self._in_base(own, f"{module}.{name}".split("."))
                    edges += [(f, IMPORT) for f in (local[0] if local else [])]
        for kind, text, line in facts["dynamic"]:
            if kind == "unresolved":
                if self.config.dynamic_imports != NAMED_MODULES:
                    self.sites.append(Site(path, line, DYNAMIC_SITE, text))
                continue
            found = self._dynamic(path, kind, text)
            edges += [(f, DYNAMIC) for f in found]
            if not found and not text.startswith("{__") and (why := self.first_party(text)):
                note = f"import by name {text}: resolves in no import root, but {why}"
                self.sites.append(Site(path, line, UNPROVEN_SITE, note))
        self._enumerators.update(facts["enumerators"])
        self._calls += [(path, callee, literal) for callee, literal in facts["calls"]]
        for name in facts["names"]:
            edges += [(f, NAMES) for f in self._named(name)]
        for name in facts["paths"]:
            edges += [(f, FILE_NAME) for f in self._named_file(own, name) if f != path]
        for word in facts["words"]:
            result = self._in_base(own, [word])
            if result is not None and result[1]:
                edges += [(f, SUBMODULE) for f in result[0]]
        if path.startswith(self._registered):  # test code that reads a tree as data
            self.sites += [Site(path, line, LISTING_SITE, text) for text, line in facts["listings"]]
        for kind, text, line in facts["kernel"]:
            if kind == "unresolved":
                self.sites.append(Site(path, line, KERNEL_SITE, text))
            else:
                edges += [(f, KERNEL) for f in self._kernel_files(path, kind, text)]
        edges += self._unproven_edges(path, directory, facts)
        return [(f, how) for f, how in dict.fromkeys(edges) if f != path]

    def _named_file(self, own: str, name: str) -> list[str]:
        """The repository files a string ending in a file suffix names: any file whose path ends
        with it; a bare document name (``"README.md"``) only beside the naming file or at the
        root, as documents of that name are everywhere (it keeps an ignored path counted)."""
        if name.endswith(DOCUMENT_SUFFIXES) and "/" not in name:
            return [f for f in (own + name, name) if f in self.index.files]
        return self.index.ending_with(name)

    def _absolute(self, path: str, own: str | None, module: str, line: int) -> list[str]:
        """``import module`` (the module part of ``from module import ...``) from ``path``;
        ``own``: the file's directory when it runs as a script. An import that resolves
        nowhere but names the repository's code is an unproven site; one whose package is
        found but not the module itself (a compiled or generated module) a built site."""
        files, complete = self._resolve(module)
        local = self._in_base(own, module.split(".")) if own is not None else None
        if local is not None:
            files = (*files, *local[0])
            complete = complete or local[1]
        if not files and not complete:  # (a namespace package has no files, but is found)
            why = self.first_party(module)
            if why is not None:
                text = f"import {module}: resolves in no import root, but {why}"
                self.sites.append(Site(path, line, UNPROVEN_SITE, text))
        elif not complete:
            text = f"import {module}: its package is in the tree, but not the module as a .py file"
            self.sites.append(Site(path, line, BUILT_SITE, text))
        return list(files)

    def _unproven_edges(self, path: str, directory: str, facts: dict) -> list[tuple[str, str]]:
        """``sys.path`` edits, launches and loads by path, and the facts' unproven entries."""
        edges: list[tuple[str, str]] = []
        for kind, value, line in facts["syspath"]:
            target = self._path_dir(directory, kind, value)
            if target is not None:
                self._path_dirs.add(target)
            elif kind != "dir" or not _outside(directory, value):
                text = f"sys.path edit {value}: the directory it adds is not known"
                self.sites.append(Site(path, line, UNPROVEN_SITE, text))
        for value, line in facts["files"]:
            if value.startswith("@"):
                target = self._imported_place(directory, value[1:], 0) or ""
            else:
                target = posixpath.normpath(posixpath.join(directory, value))
            if target in self.index.files:
                edges.append((target, RUNS))
            else:
                text = f"runs or loads {value}: no such file in the tree"
                self.sites.append(Site(path, line, UNPROVEN_SITE, text))
        for what, text, line in facts["unproven"]:
            self.sites.append(Site(path, line, UNPROVEN_SITE, f"{what} {text}"))
        return edges

    def _path_dir(self, directory: str, kind: str, value: str) -> str | None:
        """The repository directory a ``syspath`` fact of a file in ``directory`` adds."""
        if kind == "imported":
            target = self._imported_place(directory, value, 0)
            return target if target is not None and target in self.index.dirs else None
        if kind != "dir":
            return None
        target = posixpath.normpath(posixpath.join(directory, value))
        target = "" if target == "." else target
        return target if target in self.index.dirs else None

    def _imported_place(self, directory: str, spec: str, hops: int) -> str | None:
        """``module:NAME/extra`` written in a file of ``directory``: the root-relative path
        another module's path constant names, through that module's ``places`` (and its
        re-exports, a few hops deep); None when it names none."""
        origin, _, extra = spec.partition("/")
        module, _, name = origin.partition(":")
        level = len(module) - len(module.lstrip("."))
        if hops > 4 or not name:
            return None
        if level:
            parts = directory.split("/") if directory else []
            base = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else None
            if base is None:
                return None
            found = self._in_base("/".join(base) + "/" if base else "", module[level:].split("."))
            files = found[0] if found else []
        else:
            files = list(self.resolve(module))
        for file in reversed(files):  # the module itself is last
            place = self.cache.facts(file).get("places", {}).get(name)
            if place is None:
                continue
            here = posixpath.dirname(file)
            if place.startswith("@"):
                return self._imported_place(here, f"{place[1:]}/{extra}".rstrip("/"), hops + 1)
            target = posixpath.normpath(posixpath.join(here, place, extra))
            return "" if target == "." else target
        return None

    def _relative(
        self, path: str, level: int, module: str, names: list[str] | None, line: int
    ) -> list[str]:
        directory = posixpath.dirname(path)
        parts = directory.split("/") if directory else []
        if level - 1 > len(parts):
            return []
        package = parts[: len(parts) - (level - 1)]
        base = "/".join(package) + "/" if package else ""
        files: list[str] = []
        if not module:
            init = f"{base}__init__.py"
            files += [init] if init in self.index.files else []
            for name in names or ():
                result = self._in_base(base, [name])
                files += result[0] if result else []
            return files
        head = module.split(".")
        result = self._in_base(base, head)
        if result is None or not result[1]:
            text = (
                f"from {'.' * level}{module} import ...: the module is not a .py file of the tree"
            )
            self.sites.append(Site(path, line, BUILT_SITE, text))
        files += result[0] if result else []
        for name in names or ():
            result = self._in_base(base, [*head, name])
            files += result[0] if result else []
        return files

    def _dynamic(self, path: str, kind: str, text: str) -> list[str]:
        """The files an import by name may load: a literal module, or every module under a
        literal prefix; ``{__name__}``/``{__package__}`` are the file's own package."""
        for token in ("{__name__}", "{__package__}"):
            if text.startswith(token):
                own_is_package = token == "{__package__}" or path.endswith("/__init__.py")
                own = posixpath.dirname(path) if own_is_package else path[:-3]
                rest = text[len(token) :].lstrip(".")
                prefix = (own + "/" if own else "") + rest.replace(".", "/")
                if kind == "prefix":
                    return self.index.under(prefix, ".py")
                result = self._in_base(own + "/" if own else "", rest.split(".")) if rest else None
                return result[0] if result else []
        if kind == "module":
            return list(self.resolve(text))
        *complete, partial = text.split(".")
        files: list[str] = []
        for base in self._bases_of.get((complete or [partial])[0], ()) if complete else self.bases:
            result = self._in_base(base, complete) if complete else ([], True)
            if result is None or not result[1]:
                continue
            files += result[0]
            files += self.index.under(base + "".join(p + "/" for p in complete) + partial, ".py")
        return files

    def _kernel_files(self, path: str, kind: str, text: str) -> list[str]:
        """The kernel sources a loader argument in ``path`` names: relative to each kernel source
        dir, an absolute path inside the repository, or (``local``) a path relative to the
        directory of ``path`` itself (``Path(__file__).parent / "k.cuh"``)."""
        if kind == "local":
            candidate = posixpath.normpath(posixpath.join(posixpath.dirname(path), text))
            return [candidate] if candidate in self.index.files else []
        if kind == "file" and os.path.isabs(text):
            relative = os.path.relpath(os.path.realpath(text), os.path.realpath(self.config.root))
            return [relative] if relative in self.index.files else []
        found: list[str] = []
        for directory in self.config.kernel_source_dirs:
            if kind == "file":
                candidate = posixpath.normpath(f"{directory}/{text}")
                found += [candidate] if candidate in self.index.files else []
            else:
                prefix = directory + "/"
                found += [
                    f
                    for f in self.index.under(prefix)
                    if fnmatch.fnmatchcase(f[len(prefix) :], text)
                ]
        return found

    def _kernel_edges(self, path: str) -> list[tuple[str, str]]:
        """A kernel source's ``#include`` closure (the JIT cache key's own computation); an
        include that resolves nowhere although the tree has a file of that name is unproven."""
        closure = include_closure([self.config.root / path], self._include_dirs, self._includes)
        self.kernel_closures[path] = closure.files
        root = os.path.realpath(self.config.root)
        for file, unproven in closure.unproven.items():
            relative = os.path.relpath(file, root)
            for item in unproven:
                site = (
                    Site(path, 0, INCLUDE_SITE, f"{file}:{item.line}: {item.text}")
                    if relative.startswith("..")  # a header outside the repository
                    else Site(Path(relative).as_posix(), item.line, INCLUDE_SITE, item.text)
                )
                if site not in self.sites:
                    self.sites.append(site)
        edges = []
        for file in closure.files:
            relative = os.path.relpath(file, root)
            if relative != path and not relative.startswith(".."):
                edges.append((Path(relative).as_posix(), INCLUDE))
            for target in self._missing_includes(file):
                text = f'#include "{target}" in {relative}: resolves in no include directory, but the tree has {target}'
                self.sites.append(Site(path, 0, KERNEL_SITE, text))
        return edges

    def _missing_includes(self, file: Path) -> list[str]:
        """The includes of ``file`` that resolve nowhere but name a file of the repository."""
        known = self._unresolved_includes.get(file)
        if known is None:
            resolved = self._includes.get(file)  # its directives, resolved by the closure
            if resolved is not None:
                external = resolved.external
            else:
                try:
                    includes = scan_file(file)[1].includes
                except OSError:
                    includes = ()
                external = tuple(
                    i for i in includes if not resolve_include(i, file.parent, self._include_dirs)
                )
            known = [i.target for i in external if self.index.ending_with(i.target.lstrip("./"))]
            self._unresolved_includes[file] = known
        return known

    # ------------------------------------------------------------------ the graph

    def _edges_of(self, path: str, how: str) -> list[tuple[str, str]]:
        target = self.index.links.get(path)
        if target is not None:  # a link to a file: a change to the file it names reaches it
            return [(target, LINK), *self._edges_of_file(path, how)]
        return self._edges_of_file(path, how)

    def _edges_of_file(self, path: str, how: str) -> list[tuple[str, str]]:
        if path.endswith(".py"):
            return self._python_edges(path)
        if how == KERNEL or any(
            path.startswith(d + "/") for d in self.config.kernel_dirs
        ):  # a kernel file, however it was reached: its #include closure
            return self._kernel_edges(path)
        return []

    def _expand(self, pending: deque[tuple[str, str]]) -> None:
        """Breadth first, one level at a time, so the facts of a level's Python files are read
        at once (in parallel on a cold cache)."""
        while pending:
            level = list(pending)
            pending.clear()
            self.cache.prefetch(
                path for path, _ in level if path.endswith(".py") and path not in self.edges
            )
            for path, how in level:
                if path in self.edges and not (how == KERNEL and self._includes_unread(path)):
                    continue
                self.edges[path] = edges = self._edges_of(path, how)
                pending.extend((f, h) for f, h in edges if f not in self.edges)

    def _includes_unread(self, path: str) -> bool:
        """A non-Python file first reached by another edge (a string naming it), so its
        ``#include`` closure is not read yet; a loader building it needs that closure."""
        return not path.endswith(".py") and path not in self.kernel_closures

    def _conftests(self, test: str) -> list[tuple[str, str]]:
        """The ``conftest.py`` files pytest loads for ``test``: its directory's and above."""
        found = []
        directory = posixpath.dirname(test)
        while True:
            candidate = f"{directory}/conftest.py" if directory else "conftest.py"
            if candidate in self.index.files and candidate != test:
                found.append((candidate, CONFTEST))
            if not directory:
                return found
            directory = posixpath.dirname(directory)

    def _build(self) -> None:
        """Build from the tests. A file that puts a new directory on ``sys.path`` changes where
        names resolve: the files importing a name found there are read again."""
        present = [t for t in self.tests if t in self.index.files]
        suite = [t for t in self.suite if t in self.index.files]
        first = list(dict.fromkeys([*suite, *(c for t in suite for c, _ in self._conftests(t))]))
        self.cache.prefetch(first)
        self._set_bases()
        for path in first:  # the usual places of sys.path edits, known before anything resolves
            for kind, value, _line in self.cache.facts(path).get("syspath", ()):
                target = self._path_dir(posixpath.dirname(path), kind, value)
                self._path_dirs.update([target] if target is not None else [])
        self._set_bases()
        self.edges: dict[str, list[tuple[str, str]]] = {}
        self.sites: list[Site] = []
        self.kernel_closures: dict[str, dict[Path, Path | None]] = {}
        self._enumerators: set[str] = set()  # functions that list a package's modules
        self._calls: list[tuple[str, str, str]] = []  # (file, callee, dotted literal)
        self._expand(deque((t, IMPORT) for t in present))
        for test in present:
            extra = [edge for edge in self._conftests(test) if edge not in self.edges[test]]
            self.edges[test] += extra
            self._expand(deque(e for e in extra if e[0] not in self.edges))
        while added := self._add_bases():
            again = {
                path
                for path in self.edges
                if path.endswith(".py") and _top_names(self.cache.facts(path)) & added
            }
            self.sites = [site for site in self.sites if site.path not in again]
            pending: deque[tuple[str, str]] = deque()
            for path in sorted(again):
                kept = [e for e in self.edges[path] if e[1] == CONFTEST]
                self.edges[path] = edges = [*self._edges_of(path, IMPORT), *kept]
                pending.extend((f, h) for f, h in edges if f not in self.edges)
            self._expand(pending)
        if self.config.dynamic_imports == NAMED_MODULES:
            self._add_package_members()
        self.reverse: dict[str, list[tuple[str, str]]] = {}
        for path, edges in self.edges.items():
            for target, how in edges:
                self.reverse.setdefault(target, []).append((path, how))

    def _add_bases(self) -> set[str]:
        """Make the directories found on ``sys.path`` since the last call bases; the names
        they hold."""
        added: set[str] = set()
        for directory in sorted(self._path_dirs):
            base = directory + "/" if directory else ""
            if base in self.bases:
                continue
            self.bases.append(base)
            for name in self.index.children.get(base, ()):
                self._bases_of.setdefault(name, []).append(base)
                added.add(name)
        if added:
            self._resolved.clear()
        return added

    def _add_package_members(self) -> None:
        """Named-modules policy: a package named to a function that lists a package's modules
        (``import_processors("pkg.processors")``) stands for every module in it."""
        done: set[tuple[str, str]] = set()
        while True:
            pending: deque[tuple[str, str]] = deque()
            for path, callee, literal in list(self._calls):
                if callee not in self._enumerators or (path, literal) in done:
                    continue
                done.add((path, literal))
                for member in self._package_members(literal):
                    if member != path:
                        self.edges[path].append((member, PACKAGE))
                        pending.append((member, PACKAGE))
            if not pending:
                return
            self._expand(pending)

    def _package_members(self, name: str) -> list[str]:
        """Every Python file of the package (or namespace package) called ``name``."""
        parts = name.split(".")
        members: list[str] = []
        for base in self._bases_of.get(parts[0], ()):
            directory = base + "/".join(parts)
            if directory in self.index.dirs:
                members += self.index.under(directory + "/", ".py")
        return members

    def is_kernel_file(self, path: str) -> bool:
        """Whether a kernel loader builds ``path`` or a kernel source it builds includes it."""
        return path in self.kernel_closures or any(
            how == INCLUDE for _, how in self.reverse.get(path, ())
        )

    def include_path(self, source: str, header: str) -> list[str]:
        """``[source, ..., header]``: how a kernel source reaches a header it includes."""
        closure = self.kernel_closures.get(source, {})
        root = os.path.realpath(self.config.root)
        chain = include_chain(closure, Path(root) / header)
        return [Path(os.path.relpath(p, root)).as_posix() for p in chain]
