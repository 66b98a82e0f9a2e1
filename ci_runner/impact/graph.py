"""The dependency graph of a suite's test files: every repository file each test can read.

Nodes are root-relative POSIX paths. An edge ``a -> b`` means "running ``a`` executes or reads
``b``", with how (:data:`IMPORT`, :data:`INCLUDE`, ...). The graph is built forward from the
test files, over the facts of each Python file (:mod:`.python_facts`) and, for the kernel sources
a loader names, their ``#include`` closure, computed by :mod:`cpp_includes` exactly as the JIT
compiler computes the files of its cache key.

Where ``import x.y`` resolves: in the root (the runner puts it on PYTHONPATH), the configured
python roots and the directory of every test file (``sys.path[0]`` of ``python <file>``); a
name found in several of them resolves to all, which can only add edges. A top-level name found
in none of them, but in a directory under the registered directory (a test that extends
``sys.path``), resolves there. A name found nowhere is outside the repository.

What the graph cannot follow is recorded as a :class:`Site`: an import by a name computed at run
time that no rule resolves, a kernel loader given a computed file, a file that does not parse,
test code (under the registered directory) that lists a directory, so reads files no import
names, and an ``#include`` that ``cpp_includes`` reports unproven (``#include MACRO``). A test
that reaches a site cannot be bounded (see :mod:`.selection`).
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
from ci_runner.impact.index import RepoIndex
from cpp_includes import Resolved, include_chain, include_closure

IMPORT = "imports"
DYNAMIC = "imports by name"
NAMES = "names the module"
FILE_NAME = "names the file"
SUBMODULE = "lists the submodule"
PACKAGE = "lists the package"
KERNEL = "builds the kernel"
INCLUDE = "#includes"

DYNAMIC_SITE = "dynamic import"
KERNEL_SITE = "kernel loader"
UNREADABLE_SITE = "unreadable file"
LISTING_SITE = "directory listing"
INCLUDE_SITE = "unproven #include"


@dataclass(frozen=True)
class Site:
    """A place whose dependencies cannot be followed statically."""

    path: str
    line: int
    kind: str  # DYNAMIC_SITE, KERNEL_SITE, UNREADABLE_SITE, LISTING_SITE or INCLUDE_SITE
    text: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.kind} {self.text}"


class DependencyGraph:
    """The files reachable from ``tests``, their edges, and the sites that cannot be followed."""

    def __init__(
        self, config: ImpactConfig, index: RepoIndex, cache: FactCache, tests: Iterable[str]
    ) -> None:
        self.config = config
        self.index = index
        self.cache = cache
        self.tests = sorted(set(tests))
        test_dirs = sorted({posixpath.dirname(t) for t in self.tests})
        bases = ["", *(r + "/" for r in config.python_roots), *(d + "/" for d in test_dirs if d)]
        self.bases = list(dict.fromkeys(bases))
        self._bases_of: dict[str, list[str]] = {}
        for base in self.bases:
            for name in index.children.get(base, ()):
                self._bases_of.setdefault(name, []).append(base)
        self._registered = config.registered_dir.rstrip("/") + "/"
        self._resolved: dict[str, tuple[str, ...]] = {}
        self.edges: dict[str, list[tuple[str, str]]] = {}
        self.sites: list[Site] = []
        self.kernel_closures: dict[str, dict[Path, Path | None]] = {}
        self._include_dirs = [config.root / d for d in config.kernel_include_dirs]
        self._includes: dict[Path, Resolved] = {}  # each file's includes, resolved once
        self._registered_memo: dict[str, list[str]] = {}
        self._enumerators: set[str] = set()  # functions that list a package's modules
        self._calls: list[tuple[str, str, str]] = []  # (file, callee, dotted literal argument)
        self._build()

    # ------------------------------------------------------------------ module resolution

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
        cached = self._resolved.get(name)
        if cached is not None:
            return cached
        parts = name.split(".")
        files: list[str] = []
        bases = self._bases_of.get(parts[0]) or self._registered_bases(parts[0])
        for base in bases:
            result = self._in_base(base, parts)
            if result is not None:
                files.extend(result[0])
        resolved = tuple(dict.fromkeys(files))
        self._resolved[name] = resolved
        return resolved

    def _registered_bases(self, top: str) -> list[str]:
        """Directories under the registered directory holding module ``top`` (a test that puts
        its own parent directories on ``sys.path``)."""
        if top in self._registered_memo:
            return self._registered_memo[top]
        candidates = [
            path[: -len(f"{top}.py")]
            for path in self.index.by_name.get(f"{top}.py", ())
            if path.startswith(self._registered)
        ]
        candidates += [
            path[: -len(f"{top}/__init__.py")]
            for path in self.index.by_name.get("__init__.py", ())
            if path.startswith(self._registered) and path.endswith(f"/{top}/__init__.py")
        ]
        self._registered_memo[top] = found = sorted(set(candidates))
        return found

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
        for level, module, names in facts["imports"]:
            if level:
                edges += [(f, IMPORT) for f in self._relative(directory, level, module, names)]
            else:
                edges += [(f, IMPORT) for f in self.resolve(module)]
                for name in names or ():
                    edges += [(f, IMPORT) for f in self.resolve(f"{module}.{name}")]
        for kind, text, line in facts["dynamic"]:
            if kind == "unresolved":
                if self.config.dynamic_imports != NAMED_MODULES:
                    self.sites.append(Site(path, line, DYNAMIC_SITE, text))
                continue
            edges += [(f, DYNAMIC) for f in self._dynamic(path, kind, text)]
        self._enumerators.update(facts["enumerators"])
        self._calls += [(path, callee, literal) for callee, literal in facts["calls"]]
        for name in facts["names"]:
            edges += [(f, NAMES) for f in self._named(name)]
        for name in facts["paths"]:
            edges += [(f, FILE_NAME) for f in self.index.ending_with(name) if f != path]
        for word in facts["words"]:
            result = self._in_base(directory + "/" if directory else "", [word])
            if result is not None and result[1]:
                edges += [(f, SUBMODULE) for f in result[0]]
        if path.startswith(self._registered):  # test code that reads a tree as data
            self.sites += [Site(path, line, LISTING_SITE, text) for text, line in facts["listings"]]
        for kind, text, line in facts["kernel"]:
            if kind == "unresolved":
                self.sites.append(Site(path, line, KERNEL_SITE, text))
            else:
                edges += [(f, KERNEL) for f in self._kernel_files(path, kind, text)]
        return [(f, how) for f, how in dict.fromkeys(edges) if f != path]

    def _relative(
        self, directory: str, level: int, module: str, names: list[str] | None
    ) -> list[str]:
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
        for extra in [[], *([name] for name in names or ())]:
            result = self._in_base(base, [*head, *extra])
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
        """A kernel source's ``#include`` closure (the JIT cache key's own computation); what it
        cannot prove becomes a site of the file that holds it."""
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
        return edges

    # ------------------------------------------------------------------ the graph

    def _edges_of(self, path: str, how: str) -> list[tuple[str, str]]:
        if path.endswith(".py"):
            return self._python_edges(path)
        if how == KERNEL or any(
            path.startswith(d + "/") for d in self.config.kernel_dirs
        ):  # a kernel file, however it was reached: its #include closure
            return self._kernel_edges(path)
        return []

    def _expand(self, pending: deque[tuple[str, str]]) -> None:
        while pending:
            path, how = pending.popleft()
            if path in self.edges and not (how == KERNEL and self._includes_unread(path)):
                continue
            self.edges[path] = edges = self._edges_of(path, how)
            pending.extend((f, h) for f, h in edges if f not in self.edges)

    def _includes_unread(self, path: str) -> bool:
        """A non-Python file first reached by another edge (a string naming it), so its
        ``#include`` closure is not read yet; a loader building it needs that closure."""
        return not path.endswith(".py") and path not in self.kernel_closures

    def _build(self) -> None:
        self._expand(deque((test, IMPORT) for test in self.tests if test in self.index.files))
        if self.config.dynamic_imports == NAMED_MODULES:
            self._add_package_members()
        self.reverse: dict[str, list[tuple[str, str]]] = {}
        for path, edges in self.edges.items():
            for target, how in edges:
                self.reverse.setdefault(target, []).append((path, how))

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
