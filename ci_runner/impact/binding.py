"""A module-level change whose only effect is binding names: which recorded code can see it.

Every test that imported a module ran its module-level code, so without this analysis a change
there keeps every importer. Here the change is cut into the module-level statements present on
one side and not the other (:mod:`.module_facts`, old side from git at the recorded commit). When
each of them provably only binds names (a plain ``def``; an import of a module whose own module
level only binds names, or of one outside the repository that exists; an assignment of a
constant, a name already bound or a container of these; a class of such statements whose bases
run no hook), the change can be seen only by code that reads one of those names:

* the names reach further through unchanged module-level code: a statement of any recorded
  module that reads one is reached itself; if it too only binds names, its names join, else it
  is an effect and every test that imported its module is kept;
* a recorded test (or case) is kept when a function it ran reads a reached name: a name of the
  function's own module, or any module's name as an attribute, an imported name or a string
  constant; or when the function reads names dynamically (``getattr`` with a computed name,
  ``globals()``, ``vars()``, ``dir()``, ``__dict__``, ``inspect``, ``importlib``, ``import *``).

A change to a class body reaches the class's name too: its instances are made by code that
reads it. Whatever cannot be proven (an effect, a name that may be unbound, an import that may
fail, an old side git cannot give) keeps every importer, as before, with the reason.
"""

from __future__ import annotations

import abc
import builtins
import difflib
import importlib.util
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ci_runner.impact.blocks import MODULE
from ci_runner.impact.identifier_cache import IdentifierCache
from ci_runner.impact.module_facts import (
    BUILTINS,
    Import,
    ModuleFacts,
    Statement,
)
from ci_runner.impact.module_facts_cache import ModuleFactsCache

GIT_TIMEOUT = 120
BASETYPE = 1 << 10  # Py_TPFLAGS_BASETYPE: the builtin type can be subclassed
NEW, OLD = "new", "old"


@dataclass(frozen=True)
class ModuleChange:
    """A changed module's module-level change: the names it binds, or why it keeps every
    importer (``effect``)."""

    path: str
    binds: tuple[str, ...] = ()
    effect: str = ""

    def text(self) -> str:
        if self.effect:
            return f"{self.effect}: every importer kept"
        if not self.binds:
            return "module-level change binds no name"
        names = ", ".join(self.binds[:3]) + (", ..." if len(self.binds) > 3 else "")
        return f"module-level change binds only {names}"


class ModuleLevel:
    """The binding analysis of one change set against the records of ``commit``.

    ``universe``: every file some record ran code of; ``changed``: the modified Python files."""

    def __init__(
        self, root: Path, python_roots: tuple[str, ...], commit: str | None,
        universe: set[str], changed: set[str], tests: set[str],
    ) -> None:  # fmt: skip
        self.root = root
        self.tests = tests
        self.bases = ("", *python_roots)
        self.commit = commit
        self.universe = {p for p in universe | changed if p.endswith(".py")}
        self.changed = changed
        self._texts: dict[tuple[str, str], bytes | None] = {}
        self._facts: dict[tuple[str, str], ModuleFacts | None] = {}
        self._pure_modules: dict[tuple[str, str], str | None] = {}
        self._changes: dict[str, ModuleChange] = {}
        self._effect_memo: dict[tuple[str, str, int, bool], str] = {}
        # whether the statement being judged may run the modules it imports for the first time:
        # a changed statement may; an unchanged one reached by a changed name imports what it
        # imported before
        self._first = True
        self.cache = ModuleFactsCache()
        self.index = IdentifierCache(root)  # what each file reads: rules files out
        self._done = False
        self.reached: dict[str, set[str]] = {}  # module -> its reached names
        self.attrs: set[str] = set()  # every reached name
        self.effects: dict[str, str] = {}  # module -> why every importer of it is kept
        self.loads: set[str] = set()  # other packages a binding-only change newly imports
        # repository modules it newly imports whose module level does more than bind names
        self.first_runs: dict[str, str] = {}

    # ------------------------------------------------------------------ sources and facts

    def _text(self, path: str, side: str) -> bytes | None:
        key = (path, side)
        if key not in self._texts:
            self._texts[key] = self._read(path, side)
        return self._texts[key]

    def _read(self, path: str, side: str) -> bytes | None:
        if side == OLD and path in self.changed:
            if self.commit is None:
                return None
            try:
                result = subprocess.run(
                    ["git", "-C", str(self.root), "show", f"{self.commit}:./{path}"],
                    capture_output=True, timeout=GIT_TIMEOUT, check=False,
                )  # fmt: skip
            except (OSError, subprocess.TimeoutExpired):
                return None
            return result.stdout if result.returncode == 0 else None
        try:
            return (self.root / path).read_bytes()
        except OSError:
            return None

    def facts(self, path: str, side: str = NEW) -> ModuleFacts | None:
        key = (path, side if path in self.changed else NEW)
        if key not in self._facts:
            text = self._text(*key)
            self._facts[key] = None if text is None else self.cache.facts(text)
        return self._facts[key]

    def save(self) -> None:
        """Write the caches back (what this run parsed)."""
        self.cache.save()
        self.index.save()

    # ------------------------------------------------------------------ the change itself

    def change(self, path: str) -> ModuleChange:
        """The module-level change of ``path`` (a modified Python file)."""
        if path not in self._changes:
            self._changes[path] = self._change(path)
        return self._changes[path]

    def _change(self, path: str) -> ModuleChange:
        if path in self.tests:
            return ModuleChange(
                path, effect="it is a test file (its runner finds its cases by listing its names)"
            )
        if self._text(path, OLD) is None:
            why = (
                "the record has no commit"
                if self.commit is None
                else f"git cannot show it at the recorded commit {self.commit}"
            )
            return ModuleChange(path, effect=f"its module-level code changed and {why}")
        old, new = self.facts(path, OLD), self.facts(path, NEW)
        if old is None or new is None:
            return ModuleChange(path, effect="one side does not parse")
        binds: set[str] = set()
        for side, facts, indexes in _unmatched(old, new):
            for index in indexes:
                statement = facts.statements[index]
                why = self._effect(path, side, facts, index)
                if why:
                    where = "removed" if side == OLD else "line"
                    return ModuleChange(path, effect=f"{why} ({where} {statement.line})")
                if not _only_exports(statement):
                    binds |= _names_of(statement)
        binds |= _export_change(*_changed_exports(old, new))
        return ModuleChange(path, tuple(sorted(binds)))

    # ------------------------------------------------------------------ what one statement does

    def _effect(self, path: str, side: str, facts: ModuleFacts, index: int) -> str:
        """Why running statement ``index`` may do more than bind names; empty when it cannot."""
        side = side if path in self.changed else NEW  # an unchanged module is the same
        key = (path, side, index, self._first)
        if key not in self._effect_memo:
            self._effect_memo[key] = self._statement_effect(path, side, facts, index)
        return self._effect_memo[key]

    def _statement_effect(self, path: str, side: str, facts: ModuleFacts, index: int) -> str:
        statement = facts.statements[index]
        if statement.effect:
            return statement.effect
        for header in _enclosing(facts, index):
            if why := self._effect(path, side, facts, header):
                return f"in a class that is {why}"
        star = facts.first_star < _top(facts, index)
        for name in sorted(statement.needs):
            if not _visible(facts, index, name) and (name not in BUILTINS or star):
                return f"it reads {name}, which may be unbound there"
        for name in statement.exports:  # a star import of the module fails on a missing name
            if not any(i != index for i in _binders(facts, name, "")):
                return f"__all__ lists {name}, which may not be bound (a star import fails)"
        for name in statement.builtins:
            if _binders(facts, name, statement.scope) or star:
                return f"{name} may not be the builtin there"
        for name, attribute in statement.modules:
            why = _standard_attribute(facts, index, name, attribute)
            if why and not (
                self._bound_in_module(path, side, facts, index, name, attribute)
                or self._bound_in_class(path, side, facts, index, name, attribute)
            ):
                return why
        for name in statement.constants:
            if not self._constant(path, side, facts, index, name, 0):
                return f"{name} may not hold an immutable constant there"
        for name, module in statement.froms:
            binders = _binders(facts, name, statement.scope)
            if not binders or not all(
                any(i.module == module and name in i.names for i in facts.statements[b].imports)
                for b in binders
            ):
                return f"{name} may not be {module}.{name} there"
        for base in statement.bases:
            if why := self._hooked(facts, index, base, set()):
                return why
        for imported in statement.imports:
            if side == OLD:  # the old code imported fine; what its removal takes away counts
                if why := self._removal_problem(path, imported):
                    return why
            elif why := self._import_problem(path, side, imported):
                return why
        return ""

    def _removal_problem(self, path: str, imported: Import) -> str:
        """Why no longer running ``imported`` (gone from ``path``'s new side) may change more
        than names: a module it ran whose module level does more than bind names, or another
        package, may no longer be loaded."""
        new = self.facts(path, NEW)
        if new is not None and any(
            (i.module, i.level) == (imported.module, imported.level)
            for s in new.statements
            if s.scope == ""
            for i in s.imports
        ):
            return ""
        module = "." * imported.level + imported.module
        shown = f"from {module} import {', '.join(imported.names)}" if imported.names else module
        top = imported.module.split(".")[0]
        if not imported.level and not any(self._exists_top(b, top) for b in self.bases):
            if top in sys.stdlib_module_names:
                return ""
            return f"it no longer runs {shown}, another package a test may no longer load"
        files = self._star_source_files(path, imported)
        if files is None:
            return f"it no longer runs {shown}, which is not found now"
        for n in imported.names:
            if files and files[-1].endswith("__init__.py"):
                sub = self._module_files(files[-1].rsplit("/", 1)[0], [n])
                files = (*files, *(sub or ()))
        loaded = self._packages_of(path)  # they run whenever ``path`` is imported
        for file in files:
            if file not in loaded and (why := self._strict_problem(file, set(loaded))):
                return f"it no longer runs {shown}, whose {file} {why}"
        return ""

    def _packages_of(self, path: str) -> set[str]:
        """The ``__init__.py`` of every package ``path`` is in: importing it runs them first.
        Empty for a file that may run as a script (``__main__`` in its name or text): run by
        its path, it imports no package of its own."""
        text = self._text(path, NEW) or b""
        if b"__main__" in text or path.endswith("__main__.py"):
            return set()
        found: set[str] = set()
        directory = path.rpartition("/")[0]
        while directory and (self.root / directory / "__init__.py").is_file():
            found.add(f"{directory}/__init__.py")
            directory = directory.rpartition("/")[0]
        return found

    def _strict_problem(self, file: str, seen: set[str]) -> str | None:
        """Why importing ``file`` may do more than bind names, the modules it imports included
        (another package's import counts: it may load it)."""
        if file in seen:
            return None
        seen.add(file)
        if why := self._module_problem(file, OLD):
            return why
        facts = self.facts(file, OLD)
        for statement in facts.statements if facts else ():
            for imported in statement.imports:
                top = imported.module.split(".")[0]
                if not imported.level and not any(self._exists_top(b, top) for b in self.bases):
                    if top in sys.stdlib_module_names:
                        continue
                    return f"line {statement.line} imports another package, {imported.module}"
                files = self._star_source_files(file, imported) or ()
                if files and files[-1].endswith("__init__.py"):
                    package = files[-1].rsplit("/", 1)[0]
                    for n in imported.names:
                        files = (*files, *(self._module_files(package, [n]) or ()))
                for inner in files:
                    if why := self._strict_problem(inner, seen):
                        return f"imports {inner}, whose {why}"
        return None

    def _constant(
        self, path: str, side: str, facts: ModuleFacts, index: int, name: str, depth: int
    ) -> bool:
        """Whether ``name`` holds an immutable constant wherever statement ``index`` reads it:
        bound only by ``name = <constant>`` at the top level (not in its class body), or
        imported from a repository module where that holds."""
        scope = facts.statements[index].scope
        if depth > 8 or any(
            name in s.binds for s in facts.statements if scope and s.scope == scope
        ):
            return False
        binders = _binders(facts, name, "")
        if not binders:
            return False
        for b in binders:
            statement = facts.statements[b]
            if statement.constant:
                continue
            source = next(iter(statement.imports), None)
            if source is None or name not in source.names or len(statement.imports) != 1:
                return False
            origin = self._star_source(path, source)
            origin_facts = self.facts(origin, side) if origin else None
            if origin is None or origin_facts is None:
                return False
            if not self._constant(origin, side, origin_facts, 0, name, depth + 1):
                return False
        return True

    def _bound_in_module(
        self, path: str, side: str, facts: ModuleFacts, index: int, name: str, attribute: str
    ) -> bool:
        """Whether ``name.attribute`` read at statement ``index`` is a name a repository module
        binds: ``name`` is only ever ``from package import name`` (no alias) of a submodule in
        which ``attribute`` stays bound (:meth:`_stays_bound`). Reading it then runs no code
        and cannot fail (a module's ``__getattr__`` runs only for a missing name)."""
        binders = _binders(facts, name, facts.statements[index].scope)
        if "." in attribute or not binders:
            return False
        module: str | None = None
        for b in binders:
            statement = facts.statements[b]
            imports = statement.imports
            if statement.scope or len(imports) != 1 or name not in imports[0].names:
                return False
            found = self._submodule(path, side, imports[0], name)
            if found is None or module not in (None, found):
                return False
            module = found
        module_facts = self.facts(module, side) if module is not None else None
        return module_facts is not None and self._stays_bound(module, side, module_facts, attribute)

    def _bound_in_class(
        self, path: str, side: str, facts: ModuleFacts, index: int, name: str, attribute: str
    ) -> bool:
        """Whether ``name.attribute`` read at statement ``index`` (outside that class's body)
        is a name a class of the module binds: ``name`` is only ever one top-level class
        statement before ``index`` whose header and bases run no hook (so its metaclass is
        ``type`` or ``abc.ABCMeta``, neither of which looks names up its own way), and its body
        binds ``attribute`` by a statement that only binds names with none after it that does
        more (a ``def`` read from its class is the function itself)."""
        binders = _binders(facts, name, facts.statements[index].scope)
        if "." in attribute or len(binders) != 1 or binders[0] >= _top(facts, index):
            return False
        header = facts.statements[binders[0]]
        if header.scope:
            return False
        if not header.is_class or header.effect or header.hooks:
            return False
        if self._effect(path, side, facts, binders[0]):
            return False
        body = [i for i, s in enumerate(facts.statements) if s.scope == name]
        pure = [
            i
            for i in body
            if attribute in facts.statements[i].binds and not self._effect(path, side, facts, i)
        ]
        return bool(pure) and not any(
            self._effect(path, side, facts, i) for i in body if i > pure[0]
        )

    def _stays_bound(self, path: str, side: str, facts: ModuleFacts, name: str) -> bool:
        """Whether ``name`` is bound once ``path`` has been imported: a top-level statement
        that only binds names binds it, and every statement after it (class bodies included)
        only binds names too, so none can delete or replace it by an effect."""
        first, self._first = self._first, True  # as when the module runs
        try:
            pure = [i for i in _binders(facts, name, "") if not self._effect(path, side, facts, i)]
            return bool(pure) and not any(
                self._effect(path, side, facts, i)
                for i in range(pure[0] + 1, len(facts.statements))
            )
        finally:
            self._first = first

    def _submodule(self, path: str, side: str, imported: Import, name: str) -> str | None:
        """The file of submodule ``name`` that ``from package import name`` binds, when the
        package is one place and its ``__init__.py`` binds no ``name`` of its own (the import
        would bind that instead)."""
        files = self._star_source_files(path, imported)
        if not files or not files[-1].endswith("__init__.py"):
            return None
        package = files[-1]
        if package != path:
            package_facts = self.facts(package, side)
            if package_facts is None or _binders(package_facts, name, ""):
                return None
        found = self._module_files(package.rpartition("/")[0], [name])
        return found[-1] if found else None

    def _hooked(self, facts: ModuleFacts, index: int, base: str, seen: set[int]) -> str:
        """Why subclassing ``base`` (as statement ``index`` sees it) may run a hook or fail."""
        statement = facts.statements[index]
        hook = f"its base {base} may run a hook (__init_subclass__ or a metaclass)"
        if "." in base:  # a module's attribute: a standard module's class without hooks
            name, _, attribute = base.partition(".")
            if _standard_attribute(facts, index, name, attribute):
                return hook
            return "" if _plain_standard_class(name, attribute) else hook
        if statement.scope and any(
            base in s.binds for s in facts.statements[:index] if s.scope == statement.scope
        ):
            return hook
        earlier = [
            i for i, s in enumerate(facts.statements[:index]) if s.scope == "" and base in s.binds
        ]
        if not earlier:
            value = getattr(builtins, base, None)
            if isinstance(value, type) and value.__flags__ & BASETYPE:
                return ""
            return hook
        last = earlier[-1]
        header = facts.statements[last]
        if not header.is_class or header.effect or header.hooks:
            return hook
        if last in seen:
            return ""
        seen.add(last)
        for inner in header.bases:
            if why := self._hooked(facts, last, inner, seen):
                return why
        return ""

    def _import_problem(self, path: str, side: str, imported: Import) -> str:
        """Why running ``imported`` may fail or do more than bind names; empty when it cannot."""
        module = imported.module
        if imported.level:
            parts = path.split("/")[:-1]
            if imported.level - 1 > len(parts):
                return f"from {'.' * imported.level}{module} import ... goes above the root"
            parts = parts[: len(parts) - (imported.level - 1)]
            dotted = [p for p in module.split(".") if p]
            shown = "." * imported.level + module
            return self._first_party_problem(["/".join(parts)], dotted, imported, side, shown)
        top = module.split(".")[0]
        bases = [b for b in self.bases if self._exists_top(b, top)]
        if bases:
            return self._first_party_problem(bases, module.split("."), imported, side)
        return _outside_problem(imported, self.loads)

    def _star_source(self, path: str, imported: Import) -> str | None:
        """The repository file ``from x import ...`` reads, when it is one file."""
        files = self._star_source_files(path, imported)
        return files[-1] if files else None

    def _star_source_files(self, path: str, imported: Import) -> tuple[str, ...] | None:
        """The repository files importing ``imported``'s module runs, when found in one place."""
        parts = [p for p in imported.module.split(".") if p]
        if imported.level:
            own = path.split("/")[:-1]
            if imported.level - 1 > len(own):
                return None
            bases = ["/".join(own[: len(own) - (imported.level - 1)])]
        else:
            bases = [b for b in self.bases if parts and self._exists_top(b, parts[0])]
        found = {files for b in bases if (files := self._module_files(b, parts)) is not None}
        return next(iter(found)) if len(found) == 1 else None

    def _exists_top(self, base: str, top: str) -> bool:
        directory = self.root / base if base else self.root
        return (directory / top).is_dir() or (directory / f"{top}.py").is_file()

    def _first_party_problem(
        self, bases: list[str], parts: list[str], imported: Import, side: str, shown: str = ""
    ) -> str:
        """Why importing a repository module may fail; a module it runs whose own module level
        does more than bind names goes to :attr:`first_runs` (a test that never ran it is kept)."""
        name = shown or ".".join(parts)
        found = {files for b in bases if (files := self._module_files(b, parts)) is not None}
        if len(found) != 1:
            return f"import of {name}: {'not found' if not found else 'found in several roots'}"
        files = next(iter(found))
        self._first_run(files, side)
        names = [n for n in imported.names if n != "*"]
        if not names:
            return ""
        last = files[-1] if files and files[-1].endswith(".py") else None
        facts = self.facts(last, side) if last else None
        bound = {n for s in facts.statements if not s.scope for n in s.binds} if facts else set()
        package = next(
            (d for b in bases if (self.root / (d := "/".join(filter(None, [b, *parts])))).is_dir()),
            None,
        )
        for n in names:
            if n in bound:
                continue
            sub = self._module_files(package, [n]) if package is not None else None
            if not sub:
                return f"from {name} import {n}: {n} may not be bound there"
            self._first_run(sub, side)
        return ""

    def _first_run(self, files: tuple[str, ...], side: str) -> None:
        if not self._first:
            return
        for file in files:
            if why := self._module_problem(file, side):
                self.first_runs.setdefault(file, why)

    def _module_files(self, base: str, parts: list[str]) -> tuple[str, ...] | None:
        """The files ``import a.b`` runs from ``base`` (packages' ``__init__.py`` first), or None
        when the module is not there."""
        files: list[str] = []
        prefix = base.strip("/")
        if not parts and (self.root / prefix / "__init__.py").is_file():
            return (f"{prefix}/__init__.py" if prefix else "__init__.py",)
        for i, part in enumerate(parts):
            here = f"{prefix}/{part}" if prefix else part
            last = i == len(parts) - 1
            if (self.root / here).is_dir():
                init = f"{here}/__init__.py"
                if (self.root / init).is_file():
                    files.append(init)
                prefix = here
            elif last and (self.root / f"{here}.py").is_file():
                files.append(f"{here}.py")
            else:
                return None
        return tuple(files)

    def first_import_effect(self, file: str) -> str | None:
        """Why running ``file``'s module level (as it is now) may do more than bind names
        (``line N: why``), or None."""
        return self._module_problem(file, NEW)

    def _module_problem(self, file: str, side: str) -> str | None:
        """Why importing ``file`` for the first time may do more than bind names, else None
        (cycle-safe: a module being checked counts as binding only)."""
        key = (file, side if file in self.changed else NEW)
        if key in self._pure_modules:
            return self._pure_modules[key]
        self._pure_modules[key] = None
        facts = self.facts(file, side)
        why: str | None = None
        first, self._first = self._first, True  # the module runs for the first time
        if facts is None:
            why = "cannot be read or parsed"
        else:
            for index, statement in enumerate(facts.statements):
                if problem := self._effect(file, side, facts, index):
                    why = f"line {statement.line}: {problem}"
                    break
        self._first = first
        self._pure_modules[key] = why
        return why

    # ------------------------------------------------------------------ closure

    def close(self) -> None:
        """Reach through unchanged module-level code from every binding-only change."""
        if self._done:
            return
        self._done = True
        for path in sorted(self.changed):
            change = self.change(path)
            if change.effect:
                continue
            old, new = self.facts(path, OLD), self.facts(path, NEW)
            assert old is not None and new is not None
            for _side, facts, indexes in _unmatched(old, new):
                for index in indexes:
                    if not _only_exports(facts.statements[index]):
                        self._reach(path, facts.statements[index])
            exports = _export_change(*_changed_exports(old, new))
            self.reached.setdefault(path, set()).update(exports)
            self.attrs |= exports
        done: set[tuple[str, str, int]] = set()  # statements reached (or star imports read)
        self.index.prefetch(sorted(self.universe - self.changed))
        grown = True
        while grown:
            grown = False
            for path in sorted(self.universe):
                if path in self.effects or not self._may_reach(path):
                    continue
                for side in (NEW, OLD) if path in self.changed else (NEW,):
                    facts = self.facts(path, side)
                    if facts is None:
                        continue
                    grown |= self._scan(path, side, facts, done)
                    if path in self.effects:
                        break

    def _scan(
        self, path: str, side: str, facts: ModuleFacts, done: set[tuple[str, str, int]]
    ) -> bool:
        """Reach the statements of one module that read a reached name; whether anything grew."""
        grown = False
        for index, statement in enumerate(facts.statements):
            if (path, side, index) in done:
                continue
            star = next((i for i in statement.imports if "*" in i.names), None)
            if star is not None:  # binds the reached names of the module it reads
                source = self._star_source(path, star)
                if source is None:
                    self.effects[path] = (
                        f"line {statement.line} is a star import of an unknown module"
                    )
                    return True
                names = self.reached.get(source, set())
                mine = self.reached.setdefault(path, set())
                grown |= not names <= mine
                mine |= names
                continue
            if not self._reads_reached(path, statement):
                continue
            done.add((path, side, index))
            why = self._reached_effect(path, side, facts, index)
            if why:
                self.effects[path] = f"line {statement.line} reads {why}"
                return True
            grown |= self._reach(path, statement, changed=False)
        return grown

    def _reached_effect(self, path: str, side: str, facts: ModuleFacts, index: int) -> str:
        statement = facts.statements[index]
        names = sorted(
            (statement.reads.names & self.reached.get(path, set()))
            | (statement.reads.attrs & self.attrs)
        )
        what = names[0] if names else "names dynamically"
        if statement.reads.dynamic and not names:
            return f"names dynamically ({statement.reads.dynamic}): every importer kept"
        first, self._first = self._first, False
        try:
            why = self._effect(path, side, facts, index)
        finally:
            self._first = first
        return f"{what}, and is {why}: every importer kept" if why else ""

    def _reach(self, path: str, statement: Statement, changed: bool = True) -> bool:
        """Add what a reached statement binds; whether anything was new. An unchanged
        ``__all__`` adds nothing: its strings are the same, and a star import of its module
        binds the module's reached names."""
        names = self.reached.setdefault(path, set())
        if _only_exports(statement):
            return False
        before = (len(names), len(self.attrs))
        new = None if changed else self._imported_reached(path, statement)
        if new is None:
            new = _names_of(statement, submodules=changed)
        names |= {statement.scope.split(".")[0]} if statement.scope else new
        self.attrs |= new
        return (len(names), len(self.attrs)) != before

    def _imported_reached(self, path: str, statement: Statement) -> set[str] | None:
        """An unchanged top-level ``from module import a, b`` (no ``as``) reached only through
        names it imports binds the others to the same objects as before: only those names are
        reached. None for any other statement (it reaches everything it binds)."""
        if statement.scope or len(statement.imports) != 1:
            return None
        imported = set(statement.imports[0].names)
        if not imported or "*" in imported or statement.binds != imported:
            return None
        reads = statement.reads
        hit = (reads.names & self.reached.get(path, set())) | (reads.attrs & self.attrs)
        return hit if hit and hit <= imported else None

    def _reads_reached(self, path: str, statement: Statement) -> bool:
        """A module-level statement reads a reached name, or reads names dynamically where a
        change is (its own module's namespace, or a changed module it names)."""
        reads = statement.reads
        if reads.names & self.reached.get(path, set()) or reads.attrs & self.attrs:
            return True
        return bool(reads.dynamic) and (
            path in self.changed or bool((reads.names | reads.attrs) & self._module_names)
        )

    def _may_reach(self, path: str) -> bool:
        """Whether a module-level statement of ``path`` may read a reached name (or be a star
        import, or read names dynamically where :meth:`_reads_reached` counts it): else no
        statement of it is reached, and it is not parsed statement by statement."""
        if path in self.changed:
            return True
        found = self.index.get(path)
        if found is None:  # unreadable or not Python: no facts to scan
            return False
        return (  # only module-level code runs when a module is imported
            found.star
            or not self.attrs.isdisjoint(found.module_attrs)
            or not self.reached.get(path, set()).isdisjoint(found.module_names)
            or (
                MODULE in found.dynamic
                and not (
                    self._module_names.isdisjoint(found.module_names)
                    and self._module_names.isdisjoint(found.module_attrs)
                )
            )
        )

    @cached_property
    def _module_names(self) -> set[str]:
        """The names a changed module is imported by (``ops`` of ``pkg/ops.py``)."""
        return {
            (p.rsplit("/", 2)[-2] if p.endswith("/__init__.py") else p.rsplit("/", 1)[-1][:-3])
            for p in self.changed
            if "/" in p or not p.endswith("/__init__.py")
        }

    # ------------------------------------------------------------------ what a test ran

    def unloaded(self, imported: tuple[str, ...], code: Mapping[str, object]) -> str | None:
        """A module a binding-only change imports that a test never loaded (``imported``: the
        packages its record loaded; ``code``: what it ran): its first import would run code that
        does more than bind names. None when there is none."""
        self.close()
        missing = sorted(self.loads - set(imported))
        if missing:
            return (
                f"imports {missing[0]}, which the test never loaded (its first import runs "
                "its code): every importer kept"
            )
        for file, why in sorted(self.first_runs.items()):
            if MODULE not in code.get(file, ()):  # type: ignore[operator]
                return f"imports {file}, which the test never ran (its {why}): every importer kept"
        return None

    def effect_ran(self, code: Mapping[str, object]) -> str | None:
        """The module-level code of an effect reached by a binding-only change that ran in
        ``code`` (``{file: block keys}``), or None."""
        self.close()
        for path in sorted(code):
            if path in self.effects and MODULE in code[path]:  # type: ignore[operator]
                return f"ran {path}'s module-level code, whose {self.effects[path]}"
        return None

    def reads(self, code: Mapping[str, object]) -> str | None:
        """A function in ``code`` (``{file: block keys}``) that reads a reached name, or reads
        names dynamically; None when none does."""
        self.close()
        for path in sorted(code):
            if not path.endswith(".py"):
                continue
            found = self.index.get(path) if path not in self.changed else None
            own = self.reached.get(path, set())
            if (
                found is not None
                and self.attrs.isdisjoint(found.attrs)
                and own.isdisjoint(found.names)
            ):
                # no function of it reads a reached name: only a dynamic read can see one
                ran_dynamic = sorted(k for k in code[path] if k != MODULE and k in found.dynamic)  # type: ignore[attr-defined]
                if ran_dynamic:
                    key = ran_dynamic[0]
                    return (
                        f"ran {path}:{key}() which reads names dynamically ({found.dynamic[key]})"
                    )
                continue
            facts = self.facts(path, NEW)
            if facts is None:
                return f"ran {path}, which does not parse now"
            for key in sorted(k for k in code[path] if k != MODULE):  # type: ignore[attr-defined]
                reads = facts.blocks.get(key)
                if reads is None:
                    continue  # gone: the change to that function keeps it
                if reads.dynamic:
                    return f"ran {path}:{key}() which reads names dynamically ({reads.dynamic})"
                hit = sorted((reads.names & own) | (reads.attrs & self.attrs))
                if hit:
                    return f"ran {path}:{key}() which reads {hit[0]}"
        return None

    def touches(self, code: Mapping[str, object]) -> str | None:
        """How code that ran can see the binding-only changes (:meth:`effect_ran`,
        :meth:`reads`), or None."""
        return self.effect_ran(code) or self.reads(code)


def _outside_problem(imported: Import, loads: set[str]) -> str:
    """Why an import from outside the repository may fail or run code that was not run before;
    empty when it cannot. The standard library is trusted to only define names; another
    package's plain ``import x`` is added to ``loads`` (a test that never loaded it is kept)."""
    module = imported.module
    names = [n for n in imported.names if n != "*"]
    top = module.split(".")[0]
    if top in sys.stdlib_module_names:
        loaded = sys.modules.get(module)
        if not names:
            return "" if loaded is not None or _found(module) else f"import {module} may fail"
        if loaded is None:
            return f"from {module} import {names[0]} may fail ({module} is not loaded to check)"
        for n in names:
            if not hasattr(loaded, n) and f"{module}.{n}" not in sys.modules:
                return f"from {module} import {n} may fail"
        return ""
    if names or "." in module:
        return f"{'from ' if names else ''}import {module} may fail or run code (another package)"
    if not _found(module):
        return f"import {module} may fail (it is not installed here)"
    loads.add(module)
    return ""


def _found(module: str) -> bool:
    """A top-level module the import system finds (its code is not run)."""
    if "." in module:
        return False
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _unmatched(old: ModuleFacts, new: ModuleFacts) -> list[tuple[str, ModuleFacts, list[int]]]:
    """The statements on each side that the other side lacks (by scope, digest and order)."""
    a = [(s.scope, s.digest) for s in old.statements]
    b = [(s.scope, s.digest) for s in new.statements]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    kept_a: set[int] = set()
    kept_b: set[int] = set()
    for block in matcher.get_matching_blocks():
        kept_a.update(range(block.a, block.a + block.size))
        kept_b.update(range(block.b, block.b + block.size))
    return [
        (OLD, old, [i for i in range(len(a)) if i not in kept_a]),
        (NEW, new, [i for i in range(len(b)) if i not in kept_b]),
    ]


def _binders(facts: ModuleFacts, name: str, scope: str) -> list[int]:
    """The statements that bind ``name`` at the module's top level or in class body ``scope``."""
    return [
        i
        for i in _value_binders(facts, name)
        if facts.statements[i].scope == "" or (scope and facts.statements[i].scope == scope)
    ]


def _value_binders(facts: ModuleFacts, name: str) -> list[int]:
    """The statements that give ``name`` a value in the module: not an ``__all__`` that only
    lists it (a star import of the module binds the names it lists; the module itself does
    not)."""
    return [
        i
        for i in facts.binders.get(name, ())
        if name == "__all__" or not _only_exports(facts.statements[i])
    ]


def _plain_standard_class(name: str, attribute: str) -> bool:
    """Whether ``name.attribute`` is a loaded standard-library class that a subclass statement
    runs no hook of: subclassable, made by ``type`` or ``abc.ABCMeta`` (which only collects
    the abstract methods), no ``__init_subclass__`` of its own or of a base."""
    value: object = sys.modules.get(name)
    for part in attribute.split("."):
        value = getattr(value, part, None)
    return (
        name in sys.stdlib_module_names
        and isinstance(value, type)
        and bool(value.__flags__ & BASETYPE)
        and type(value) in (type, abc.ABCMeta)
        and not any("__init_subclass__" in vars(c) for c in value.__mro__ if c is not object)
    )


def _standard_attribute(facts: ModuleFacts, index: int, name: str, attribute: str) -> str:
    """Why ``name.attribute`` may fail or run code at statement ``index``; empty when ``name``
    is only ever ``import name`` (or ``import name.sub``) of a loaded standard module that has
    the attribute."""
    scope = facts.statements[index].scope
    binders = _binders(facts, name, scope)
    if not binders or not all(
        any(
            (i.module == name or i.module.startswith(f"{name}.")) and not i.level and not i.names
            for i in facts.statements[b].imports
        )
        and facts.statements[b].scope == ""
        for b in binders
    ):
        return f"{name}.{attribute} may run code (not a standard module's attribute)"
    module = sys.modules.get(name)
    if name not in sys.stdlib_module_names or module is None:
        return f"{name}.{attribute} may run code (not a standard module's attribute)"
    value: object = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            return f"{name}.{attribute} may fail"
        value = getattr(value, part)
    return ""


def _only_exports(statement: Statement) -> bool:
    """``__all__ = [...]`` at the top level, binding nothing else."""
    return (
        not statement.scope
        and "__all__" in statement.binds
        and statement.binds <= {"__all__", *statement.exports}
    )


def _changed_exports(old: ModuleFacts, new: ModuleFacts) -> tuple[list[set[str]], list[set[str]]]:
    """What each changed ``__all__`` statement lists, on the old side and on the new."""
    sides = {
        side: [set(facts.statements[i].exports) for i in indexes
               if _only_exports(facts.statements[i])]
        for side, facts, indexes in _unmatched(old, new)
    }  # fmt: skip
    return sides[OLD], sides[NEW]


def _export_change(old: list[set[str]], new: list[set[str]]) -> set[str]:
    """The names a changed ``__all__`` reaches (``old``/``new``: what each changed ``__all__``
    statement of a side lists). With one such statement on each side: ``__all__`` itself and the
    names only one side lists, since a star import binds the same object as before for a name
    both list; otherwise ``__all__`` and every name listed."""
    if not old and not new:
        return set()
    if len(old) == 1 and len(new) == 1:
        return {"__all__"} | (old[0] ^ new[0])
    return {"__all__"}.union(*old, *new)


def _names_of(statement: Statement, submodules: bool = True) -> set[str]:
    """The names a statement reaches: its bindings, and for a class-body statement the
    outermost class too; with ``submodules`` (a changed statement: an unchanged one imports
    what it imported before), the submodules it imports, which it binds on their packages."""
    names = set(statement.binds)
    if statement.scope:
        names.add(statement.scope.split(".")[0])
    for imported in statement.imports if submodules else ():
        names.update(p for p in imported.module.split(".")[1:] if p)
    return names


def _enclosing(facts: ModuleFacts, index: int) -> list[int]:
    """The class headers whose bodies hold statement ``index``, outermost first."""
    scope = facts.statements[index].scope
    found: list[int] = []
    if not scope:
        return found
    parts = scope.split(".")
    for depth in range(1, len(parts) + 1):
        outer = ".".join(parts[: depth - 1])
        name = parts[depth - 1]
        for i in range(index - 1, -1, -1):
            s = facts.statements[i]
            if s.scope == outer and name in s.binds and s.is_class:
                found.append(i)
                break
    return found


def _visible(facts: ModuleFacts, index: int, name: str) -> bool:
    """Whether ``name`` is bound before statement ``index`` where it runs: earlier in its class
    body, or at the top level before the outermost class that holds it."""
    scope = facts.statements[index].scope
    top = _top(facts, index)
    return any(
        (facts.statements[i].scope == "" and i < top)
        or (scope and facts.statements[i].scope == scope and i < index)
        for i in _value_binders(facts, name)
    )


def _top(facts: ModuleFacts, index: int) -> int:
    """The top-level statement that holds statement ``index`` (itself at the top level)."""
    enclosing = _enclosing(facts, index)
    return enclosing[0] if enclosing else index
