"""Which test cases of a kept file a change can affect, from the file's per-case record.

A record of format 2 splits the code its file ran into what ran outside every case (collection,
imports, fixtures wider than a function, other processes: the file-level part, shared by every
case) and what each case ran (:class:`~ci_runner.impact.record_format.CaseRecord`). When every
change that reaches the file is a modified Python file whose changed blocks the file ran only
inside cases, the file keeps only the cases that ran one of them. Whatever this cannot prove
keeps the whole file, with the reason:

* the record has no test case (a plain script; a runner that reports no case);
* the test ran a program whose reads are not recorded;
* a change reaches the file another way than through code it ran or files and directories its
  cases opened or listed: a file opened or a directory listed outside every case (or by a
  record that does not say where), a kernel it built, an import it attempted, an added,
  deleted or renamed Python file it ran or a package's ``__init__.py``;
* a changed block ran outside every case, or is module-level code (whichever case ran it: the
  state it leaves is shared by the cases that come after);
* a kept case is not defined by the names of its id in the test file now (a generated case,
  one renamed or removed): its id may not select it. A test method a class of the file inherits
  (``Class::test_x``, ``Class`` defined in the file with base classes, ``test_x`` in none of its
  bodies) counts as defined: the class statement is module-level code of the test file, and
  the classes it inherits from are defined by module-level code its import ran outside every
  case, so a change to either (renaming or removing the method among them) has already kept
  the whole file.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ci_runner.impact.binding import ModuleLevel
from ci_runner.impact.blocks import MODULE
from ci_runner.impact.changes import MODIFIED, Change
from ci_runner.impact.record_format import FileRecord


class BlockSource(Protocol):
    """The tree as it is now: each file's blocks, and the binding-only module-level changes."""

    root: Path
    module_level: ModuleLevel | None

    def changed_blocks(self, record: FileRecord, path: str) -> set[str] | None:
        """The blocks ``record`` ran of ``path`` whose code differs now (None: gone, or it
        does not parse)."""
        ...


@dataclass(frozen=True)
class CaseScope:
    """The cases of a kept file that run; none named means the whole file, for ``whole``."""

    cases: dict[str, str]  # case id -> why it is kept ("pkg/ops.py: ran mul()")
    whole: str = ""  # why every case runs (when ``cases`` is empty)
    total: int = 0  # cases in the record
    share: float = 1.0  # the kept cases' share of the file's recorded time (overhead included)


def ran(key: str) -> str:
    return "ran its module-level code" if key == MODULE else f"ran {key}()"


def _whole(why: str, record: FileRecord) -> CaseScope:
    return CaseScope({}, why, len(record.cases))


def module_names(path: str) -> set[str]:
    """Every dotted name a Python file could be imported as, whatever the base directory:
    ``a/b/c.py`` is ``a.b.c``, ``b.c`` or ``c``; ``a/b/__init__.py`` is ``a.b`` or ``b``."""
    if not path.endswith(".py"):
        return set()
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return {
        ".".join(parts[i:]) for i in range(len(parts)) if all(p.isidentifier() for p in parts[i:])
    }


def _built(record: FileRecord, path: str) -> bool:
    """A kernel the test built read ``path``."""
    return any(path in use.dependencies or path in use.sources for use in record.kernels)


def _moved_openers(record: FileRecord, change: Change) -> list[str] | None:
    """The cases that opened (or tried to open) a file added, deleted or renamed, or listed its
    directory, when that is the only way it reaches the test: no code of it ran, no kernel read
    it, it is no package's ``__init__.py`` and no import the test attempted names it; else
    None."""
    found: list[str] = []
    for path in filter(None, (change.path, change.old_path)):
        if (
            path in record.code
            or _built(record, path)
            or posixpath.basename(path) == "__init__.py"
            or module_names(path) & set(record.imported)
        ):
            return None
        openers = _openers(record, path)
        listers = _cases_by(record, posixpath.dirname(path), "listed")
        if openers is None or listers is None:
            return None
        found += openers + listers
    return found or None


def _openers(record: FileRecord, path: str) -> list[str] | None:
    return _cases_by(record, path, "opened")


def _cases_by(record: FileRecord, path: str, what: str) -> list[str] | None:
    """The cases that ``what`` ("opened", "listed") ``path`` (empty: the test did not); None
    when it was done outside every case, or the record does not say by which case."""
    outside = record.file_opened if what == "opened" else record.file_listed
    if path not in (record.opened if what == "opened" else record.listed):
        return []
    if outside is None or path in outside:
        return None
    cases = [case for case, data in record.cases.items() if path in getattr(data, what)]
    return cases or None


def case_scope(
    record: FileRecord,
    changes: tuple[Change, ...],
    tree: BlockSource,
    touched: Callable[[Change], str | None],
) -> CaseScope:
    """The cases of ``record``'s file that ``changes`` can affect (``touched``: how a change
    reaches the file, or None); see the module docstring."""
    if not record.cases:
        return _whole("its record has no test case", record)
    if record.unbounded:
        return _whole(f"it {record.unbounded[0]}, whose reads are not recorded", record)
    changed: dict[str, set[str]] = {}
    binding: list[str] = []  # changed files whose module-level change only binds names
    level = tree.module_level
    kept: dict[str, str] = {}
    for change in changes:
        how = touched(change)
        if how is None:
            continue
        path = change.path
        if change.status == MODIFIED:
            openers = _openers(record, path)
            code = path in record.code
            keys = tree.changed_blocks(record, path) if code else set() if openers else None
        else:
            openers = _moved_openers(record, change)
            keys = set() if openers else None
        if keys is None or openers is None or _built(record, path):
            return _whole(f"{path}: {how}, not only through code its cases ran", record)
        for case in openers:
            what = "opened it" if change.status == MODIFIED else "opened it or listed its directory"
            kept.setdefault(case, f"{path}: case {what}")
        if MODULE in keys and level is not None and not level.change(path).effect:
            keys.discard(MODULE)
            binding.append(path)
        shared = keys & ({MODULE} | set(record.file_code.get(path, ())))
        if shared:
            key = min(shared)
            where = "every case shares it" if key == MODULE else "outside every test case"
            if key == MODULE and level is not None:
                where = f"({level.change(path).text()}); {where}"
            return _whole(f"{path}: {ran(key)} {where}", record)
        changed[path] = keys
    if binding and level is not None:
        text = "; ".join(f"{p}: {level.change(p).text()}" for p in binding)
        if how := level.unloaded(record.imported, record.code):
            return _whole(f"{text}; {how}", record)
        for code in (record.file_code, *(c.code for c in record.cases.values())):
            if how := level.effect_ran(code):
                return _whole(f"{text}; {how} (its state is shared by every case)", record)
        if how := level.reads(record.file_code):
            return _whole(f"{text}; {how} outside every test case", record)
        for case, data in sorted(record.cases.items()):
            if how := level.reads(data.code):
                kept[case] = f"{text}; case {how}"
    reached: dict[str, set[str]] = {}
    for case, data in sorted(record.cases.items()):
        for path, keys in sorted(changed.items()):
            hit = keys & set(data.code.get(path, ()))
            reached.setdefault(path, set()).update(hit)
            if hit and case not in kept:
                kept[case] = f"{path}: {ran(min(hit))}"
    for path, keys in sorted(changed.items()):
        if keys - reached.get(path, set()):
            key = min(keys - reached.get(path, set()))
            return _whole(f"{path}: {ran(key)} in no recorded case", record)
    if not kept:
        return _whole("no recorded case ran what changed", record)
    names = _defined_names(tree.root / record.test)
    for case in kept:
        if not _defined(case, record.test, names):
            return _whole(f"case {case} is not defined by that name in the file now", record)
    return CaseScope(kept, "", len(record.cases), _share(record, kept))


def _defined_names(path: Path) -> dict[str, bool]:
    """The names of the classes and functions a test file defines now, each with whether it is
    a class with base classes, whose test methods may be inherited (empty: unreadable)."""
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    names: dict[str, bool] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inherits = isinstance(node, ast.ClassDef) and bool(node.bases)
            names[node.name] = names.get(node.name, False) or inherits
    return names


def _defined(case: str, test: str, names: dict[str, bool]) -> bool:
    """``path::Class::test[param]`` names ``test``'s file and classes and functions it defines,
    or a test method its innermost class, defined there with base classes, inherits."""
    path, _, rest = case.partition("::")
    *classes, last = rest.split("[", 1)[0].split("::")
    if path != test or not rest or not all(part in names for part in classes):
        return False
    return last in names or (bool(classes) and names[classes[-1]])


def _share(record: FileRecord, kept: dict[str, str]) -> float:
    """The kept cases' share of the file's recorded wall time, the time outside cases (start-up,
    collection) counted in full; by count when the record has no times."""
    total = sum(c.seconds for c in record.cases.values())
    mine = sum(record.cases[case].seconds for case in kept)
    if record.seconds > 0 and total <= record.seconds:
        return min(1.0, (record.seconds - total + mine) / record.seconds)
    if total > 0:
        return mine / total
    return len(kept) / len(record.cases)
