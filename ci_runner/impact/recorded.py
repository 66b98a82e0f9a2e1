"""``--deps-from DIR``: decide each test with a valid record by what it ran, opened and built.

A test's record (:mod:`.record_format`) lists its inputs at the recorded commit: the blocks of
code it executed (:mod:`.blocks`), the files it opened, the directories it listed, the imports it
attempted and the JIT modules it loaded with the files their compiler read. If none of these
inputs differs now, the test runs as it ran then, and passed: it is dropped. Otherwise:

* an input that the change touches keeps the test, and the chain names it (``ran add()``,
  ``opened it``, ``listed registered/``, ``imports pkg.new``, ``built JIT module m``); when the
  record holds the code of each test case, the file runs only the cases that ran what changed
  where :mod:`.case_scope` can prove it, every case otherwise;
* an input that differs but that the change does not touch (the tree moved on since the
  recording) makes the record stale for this test: the static closure decides it, as it does a
  test with no record, a record with problems (failed, flaky, a process that escaped the
  recording) and a new test;
* a test that ran a program whose reads are not recorded is kept for any change;
* a test that loaded no JIT module in the record is decided by the static closure when a file
  a kernel build can read changed (under a kernel directory, or a C/C++/CUDA source).

:class:`RecordLayer` answers the selection's questions (which tests the records decide, why one
is kept, which files some recorded test opened); :func:`select_with_records` composes it with
the static closure of the other tests.

What the static analysis runs everything for by rule (packaging, pytest and CI configuration,
the catalog's ``run-everything``, paths outside the root, unknown git statuses) still runs
everything: a record cannot vouch for how the tests themselves are run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import posixpath
import subprocess
import time
from dataclasses import dataclass

from ci_runner.catalog import Catalog
from ci_runner.impact.binding import ModuleLevel
from ci_runner.impact.block_cache import BlockCache
from ci_runner.impact.blocks import MODULE, Block
from ci_runner.impact.case_scope import CaseScope, case_scope, module_names, ran
from ci_runner.impact.changes import (
    ADDED,
    DELETED,
    MODIFIED,
    RENAMED,
    Change,
    ChangeSet,
    file_at,
)
from ci_runner.impact.config import ImpactConfig, load_impact_config
from ci_runner.impact.record_format import FileRecord, RecordSet, file_digest
from ci_runner.impact.selection import (
    CHANGED,
    ChangeImpact,
    KeptCases,
    Link,
    Reason,
    select_changed,
)
from ci_runner.select import Selection

KERNEL_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".hh", ".cpp", ".cc", ".cxx", ".c", ".inc", ".inl")
GIT_TIMEOUT = 120


@dataclass(frozen=True)
class Verdict:
    """What a record says about one test: kept (with the reason), stale, or dropped."""

    reason: Reason | None = None
    stale: str = ""  # why the record no longer describes the test
    scope: CaseScope | None = None  # the cases a kept test runs (None: every case)


class _Tree:
    """The tree as it is now, read once per file: digests and block hashes."""

    def __init__(self, config: ImpactConfig, commit: str | None = None) -> None:
        self.root = config.root
        self.commit = commit  # the recorded commit
        self._digests: dict[str, str | None] = {}
        self._blocks: dict[str, dict[str, str] | None] = {}
        self._committed: dict[str, _Committed | None] = {}  # a file at the recorded commit
        self._block_cache = BlockCache()  # shared with recording runs: one parse per content
        self.module_level: ModuleLevel | None = None  # binding-only module-level changes

    def digest(self, path: str) -> str | None:
        if path not in self._digests:
            self._digests[path] = file_digest(self.root / path)
        return self._digests[path]

    def blocks(self, path: str) -> dict[str, str] | None:
        """The hashes of ``path``'s blocks now (None: gone or does not parse); the functions it
        has unchanged since the recorded commit keep that side's hashes undumped."""
        if path not in self._blocks:
            try:
                source = (self.root / path).read_bytes()
            except OSError:
                self._blocks[path] = None
            else:
                digest = hashlib.sha256(source).hexdigest()
                committed = self._at_commit(path)
                like = committed.blocks if committed is not None and committed.blocks else []
                self._blocks[path] = _hashes(self._block_cache.blocks(source, digest, like))
        return self._blocks[path]

    def _at_commit(self, path: str) -> _Committed | None:
        """``path`` at the recorded commit (None: no recorded commit, or no such file)."""
        if path not in self._committed:
            text = None if self.commit is None else file_at(self.root, self.commit, path)
            if text is None:
                self._committed[path] = None
            else:
                digest = hashlib.sha256(text).hexdigest()
                blocks = self._block_cache.blocks(text, digest)
                self._committed[path] = _Committed(digest, blocks, _hashes(blocks))
        return self._committed[path]

    def recorded_hashes(self, record: FileRecord, path: str) -> dict[str, str]:
        """The hashes of the blocks ``record`` ran of ``path``, as this interpreter hashes them.

        A block's hash is a dump of its ``ast``, which differs between Python versions (3.12
        added ``type_params`` to every function), so a record made under another Python would
        see every block changed. The blocks are hashed again from the recorded commit's file
        when its SHA-256 is the one the record ran; the record's own hashes are used otherwise.
        """
        recorded = record.code[path]
        digest = record.sources.get(path)
        committed = self._at_commit(path) if digest is not None else None
        if committed is None or committed.digest != digest or committed.hashes is None:
            return recorded
        return {k: committed.hashes.get(k, h) for k, h in recorded.items()}

    def changed_blocks(self, record: FileRecord, path: str) -> set[str] | None:
        """The blocks ``record`` ran of ``path`` whose code differs now (None: the file is gone
        or does not parse)."""
        now = self.blocks(path)
        if now is None:
            return None
        return {k for k, h in self.recorded_hashes(record, path).items() if now.get(k) != h}


@dataclass(frozen=True)
class _Committed:
    """A file at the recorded commit: its sha256, blocks and their hashes (None: no parse)."""

    digest: str
    blocks: list[Block] | None
    hashes: dict[str, str] | None


def _hashes(blocks: list[Block] | None) -> dict[str, str] | None:
    return None if blocks is None else {b.key: b.digest for b in blocks}


def _changed_block(changed: set[str] | None) -> str | None:
    """The first changed block, module level first (None when none changed)."""
    if changed is None:
        return MODULE
    return min(changed, key=lambda k: (k != MODULE, k)) if changed else None


def _input_differs(record: FileRecord, path: str, tree: _Tree, code: bool = True) -> str | None:
    """How ``path``, an input of ``record``, differs now (None when it does not, or is none;
    ``code``: whether the code it ran counts)."""
    if code and path in record.code and record.sources.get(path) != tree.digest(path):
        key = _changed_block(tree.changed_blocks(record, path))
        if key is not None:
            return ran(key)
    if path in record.opened and record.opened[path] != tree.digest(path):
        return "opened it"
    for use in record.kernels:
        if path in use.dependencies and use.dependencies[path] != tree.digest(path):
            return f"built JIT module {use.module}"
    return None


def _built(record: FileRecord, path: str) -> str | None:
    """A changed kernel source of a module the test loaded (the log hashes no source)."""
    for use in record.kernels:
        if path in use.sources:
            return f"built JIT module {use.module}"
    return None


def _code_touched(record: FileRecord, path: str, tree: _Tree) -> str | None:
    """How the code ``record`` ran of the changed file ``path`` differs now; a module-level
    change that only binds names (:mod:`.binding`) counts only where ran code reads them."""
    if path not in record.code or record.sources.get(path) == tree.digest(path):
        return None
    if not record.code[path]:
        # It ran, but no block of it was noted (an empty module, as the Python >= 3.12
        # recorder wrote it before it kept line 0): what it holds now runs where it ran.
        return ran(MODULE)
    changed = tree.changed_blocks(record, path)
    if changed is None:
        return ran(MODULE)
    keys = sorted(changed)
    functions = [k for k in keys if k != MODULE]
    if functions:
        return ran(functions[0])
    if not keys:
        return None
    level = tree.module_level
    if level is None:
        return ran(MODULE)
    change = level.change(path)
    if change.effect:
        return f"{ran(MODULE)}, where {change.text()}"
    how = level.unloaded(record.imported, record.code) or level.touches(record.code)
    return None if how is None else f"{change.text()}; {how}"


def _touched(record: FileRecord, change: Change, tree: _Tree) -> str | None:
    """How ``change`` reaches the recorded test, or None."""
    for path in filter(None, (change.path, change.old_path)):
        how = (
            (_code_touched(record, path, tree) if change.status == MODIFIED else None)
            or _input_differs(record, path, tree, code=change.status != MODIFIED)
            or _built(record, path)
        )
        if how is not None:
            return how
    added = change.status in (ADDED, RENAMED)
    gone = change.status in (DELETED, RENAMED)
    for path, status_changes in ((change.path, added), (change.old_path, gone)):
        if not path or not status_changes:
            continue
        directory = posixpath.dirname(path)
        if directory in record.listed:
            return f"listed {directory or '.'}/"
        if posixpath.basename(path) == "__init__.py" and record.test.startswith(
            f"{directory}/" if directory else ""
        ):  # pytest imports the test file by another name
            return "is in the package it starts or ends"
        if added and path == change.path:
            names = module_names(path) & set(record.imported)
            if names:
                return f"imports {sorted(names)[0]}"
    return None


def _all_inputs(record: FileRecord) -> set[str]:
    paths = set(record.code) | set(record.opened)
    for use in record.kernels:
        paths |= set(use.dependencies)
    return paths


def judge(
    record: FileRecord, changes: tuple[Change, ...], drift: tuple[Change, ...], tree: _Tree
) -> Verdict:
    """The record's verdict on its test for ``changes`` (``drift``: files added or deleted since
    the recorded commit that the change does not list)."""
    changed = {p for c in changes for p in (c.path, c.old_path) if p}
    for change in changes:
        how = _touched(record, change, tree)
        if how is not None:
            return Verdict(Reason((Link(change.path, CHANGED), Link(record.test, how))))
    if record.unbounded and changes:
        how = f"{record.unbounded[0]}, whose reads are not recorded"
        return Verdict(Reason((Link(changes[0].path, CHANGED), Link(record.test, how))))
    for path in sorted(_all_inputs(record) - changed):
        how = _input_differs(record, path, tree)
        if how is not None:
            return Verdict(stale=f"{path} changed since the recorded commit (the test {how})")
    for change in drift:
        how = _touched(record, change, tree)
        if how is not None:
            return Verdict(stale=f"{change.path} was {change.status} since the recorded commit")
    return Verdict()


def _drift(
    records: RecordSet, config: ImpactConfig, changes: tuple[Change, ...]
) -> tuple[Change, ...] | str:
    """Files added or deleted between the recorded commit and HEAD that ``changes`` does not
    list; a string says why they cannot be known."""
    if records.commit is None:
        return "the record has no commit (it was not recorded in a clean git checkout)"
    try:
        result = subprocess.run(
            ["git", "-C", str(config.root), "diff", "--name-status", "--no-renames", "-z",
             records.commit, "HEAD", "--", "."],
            capture_output=True, timeout=GIT_TIMEOUT, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"git cannot compare with the recorded commit {records.commit}: {exc}"
    if result.returncode != 0:
        return (
            f"the recorded commit {records.commit} is not in this clone (fetch it, or fetch "
            "with enough history)"
        )
    prefix = _git_prefix(config)
    listed = {p for c in changes for p in (c.path, c.old_path) if p}
    fields = result.stdout.decode("utf-8", "surrogateescape").split("\0")
    drift = []
    for code, path in zip(fields[0::2], fields[1::2], strict=False):
        if not path.startswith(prefix):
            continue
        path = path[len(prefix) :]
        if code[:1] in "AD" and path not in listed:
            drift.append(Change(path, ADDED if code[:1] == "A" else DELETED))
    return tuple(drift)


def _recorded_paths(commit: str | None, config: ImpactConfig) -> set[str]:
    """The files of the root at the recorded commit (git already answered for it)."""
    result = subprocess.run(
        ["git", "-C", str(config.root), "ls-tree", "-r", "--name-only", "-z", "--full-tree",
         f"{commit}"],
        capture_output=True, timeout=GIT_TIMEOUT, check=False,
    )  # fmt: skip
    prefix = _git_prefix(config)
    names = result.stdout.decode("utf-8", "surrogateescape").split("\0")
    return {n[len(prefix) :] for n in names if n and n.startswith(prefix)}


def _as_recorded(
    changes: tuple[Change, ...], then: set[str], config: ImpactConfig
) -> tuple[Change, ...]:
    """Each change's status against the recorded commit (``--changed-files`` cannot tell an
    added file from a modified one): added when the commit lacked it, deleted when it is gone."""
    out = []
    for change in changes:
        if change.status in (MODIFIED, ADDED, DELETED):
            exists = (config.root / change.path).exists()
            status = DELETED if not exists else (MODIFIED if change.path in then else ADDED)
            change = Change(change.path, status)
        out.append(change)
    return tuple(out)


def _git_prefix(config: ImpactConfig) -> str:
    result = subprocess.run(
        ["git", "-C", str(config.root), "rev-parse", "--show-prefix"],
        capture_output=True, text=True, timeout=GIT_TIMEOUT, check=False,
    )  # fmt: skip
    return result.stdout.strip() if result.returncode == 0 else ""


def _kernel_file(path: str, config: ImpactConfig) -> bool:
    return path.endswith(KERNEL_SUFFIXES) or any(
        path.startswith(d.rstrip("/") + "/") for d in config.kernel_dirs
    )


class RecordLayer:
    """The records as the selection asks them, for one change: which tests they decide
    (:meth:`decides`), why one is kept (:meth:`reason`), and the repository files some recorded
    test opened, ran or built from (:meth:`read_paths`: an ignore rule never hides those)."""

    def __init__(
        self,
        records: RecordSet,
        config: ImpactConfig,
        changes: tuple[Change, ...],
    ) -> None:
        self.records = records
        self.source = f"--deps-from {records.source}"
        self.unusable = ""  # why no record is used at all
        self.verdicts: dict[str, Verdict] = {}
        self.why_static: dict[str, str] = {}  # test -> why its record does not decide it
        if not records.readable:
            self.unusable = f"record format {records.format}, this runner reads another"
            return
        drift = _drift(records, config, changes) if changes else ()
        if isinstance(drift, str):
            self.unusable = drift
            return
        self.changes = (
            _as_recorded(changes, _recorded_paths(records.commit, config), config)
            if changes
            else ()
        )
        kernel_change = any(_kernel_file(c.path, config) for c in self.changes)
        tree = _Tree(config, records.commit)
        tree.module_level = ModuleLevel(
            config.root,
            config.python_roots,
            records.commit,
            {path for r in records.tests.values() for path in r.code},
            {c.path for c in self.changes if c.status == MODIFIED and c.path.endswith(".py")},
            set(records.tests),
        )  # its identifier index parses alone: the facts would serve only the static graph
        for test, record in records.tests.items():
            if record.problems:
                self.why_static[test] = record.problems[0]
                continue
            verdict = judge(record, self.changes, drift, tree)
            if verdict.stale:
                self.why_static[test] = verdict.stale
            elif verdict.reason is None and kernel_change and not record.kernels:
                self.why_static[test] = (
                    "loaded no JIT module in the record, and a kernel file changed"
                )
            else:
                if verdict.reason is not None:
                    scope = case_scope(
                        record, self.changes, tree, lambda c, r=record: _touched(r, c, tree)
                    )
                    verdict = dataclasses.replace(verdict, scope=scope)
                self.verdicts[test] = verdict
        tree.module_level.save()

    def read_paths(self) -> frozenset[str]:
        return self.records.read_paths()

    def decides(self, test: str) -> bool:
        return test in self.verdicts

    def reason(self, test: str, changes: tuple[Change, ...] = ()) -> Reason | None:
        return self.verdicts[test].reason

    def static_note(self, test: str) -> str:
        return f"no valid record: {self.why_static.get(test, 'no record')}"

    def summary(self, tests: list[str]) -> str:
        """The output line: how many tests the records decided, and why not the others."""
        static = {t: self.why_static.get(t, "no record") for t in tests if not self.decides(t)}
        return (
            f"{self.source}: records of commit {self.records.commit or 'unknown'}; "
            f"{len(tests) - len(static)} of {len(tests)} file(s) decided by their record, "
            f"{len(static)} by the static closure" + _why_static(static)
        )


def select_with_records(
    selection: Selection, catalog: Catalog, change_set: ChangeSet, records: RecordSet
) -> ChangeImpact:
    """The part of ``selection`` that ``change_set`` can affect, with ``records`` deciding the
    tests they validly describe and the static closure the others (see the module docstring)."""
    started = time.perf_counter()
    impact = _select_with_records(selection, catalog, change_set, records)
    return dataclasses.replace(impact, seconds=time.perf_counter() - started)


def _select_with_records(
    selection: Selection, catalog: Catalog, change_set: ChangeSet, records: RecordSet
) -> ChangeImpact:
    config = load_impact_config(catalog)
    layer = RecordLayer(records, config, change_set.changes)
    if change_set.base is None:  # --changed-files: a TOML file's tables as against the record's
        change_set = dataclasses.replace(change_set, base=records.commit)
    if layer.unusable:
        impact = select_changed(selection, catalog, change_set)
        note = f"{layer.source}: not used: {layer.unusable}; static selection"
        return dataclasses.replace(impact, record_lines=(note,))
    impact = select_changed(selection, catalog, change_set, recorded=layer)
    if impact.run_everything:
        note = f"{layer.source}: not used; a rule runs everything: {impact.run_everything[0]}"
        return dataclasses.replace(impact, record_lines=(note,))
    tests = [f.path for f in selection.files]
    scopes = {
        f.path: scope
        for f in impact.selection.files
        if layer.decides(f.path) and (scope := layer.verdicts[f.path].scope) is not None
    }
    impact = _with_cases(impact, scopes)
    reasons = {
        path: reason
        if layer.decides(path)
        else dataclasses.replace(reason, note=_join(reason.note, layer.static_note(path)))
        for path, reason in impact.reasons.items()
    }
    notes = [layer.summary(tests), *(f"damaged record: {d}" for d in records.damaged[:5])]
    return dataclasses.replace(impact, reasons=reasons, record_lines=tuple(notes))


def _with_cases(impact: ChangeImpact, scopes: dict[str, CaseScope]) -> ChangeImpact:
    """Each file that runs some of its cases carries their ids, its est_time scaled by their
    share of its recorded time (one that keeps every case runs whole); the others' reason to run
    every case is kept for the output."""
    files = tuple(
        dataclasses.replace(
            f,
            cases=tuple(scopes[f.path].cases),
            est_time=round(f.est_time * scopes[f.path].share, 3),
        )
        if f.path in scopes and 0 < len(scopes[f.path].cases) < scopes[f.path].total
        else f
        for f in impact.selection.files
    )
    kept = {
        path: KeptCases(scope.cases, scope.total, scope.whole) for path, scope in scopes.items()
    }
    selection = dataclasses.replace(impact.selection, files=files)
    return dataclasses.replace(impact, selection=selection, cases=kept)


def _why_static(static_tests: dict[str, str]) -> str:
    if not static_tests:
        return ""
    counts: dict[str, int] = {}
    for why in static_tests.values():
        kind = why if why == "no record" else why.split(" (")[0].split(":")[0]
        counts[kind] = counts.get(kind, 0) + 1
    top = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:3]
    return " (" + "; ".join(f"{n}: {kind}" for kind, n in top) + ")"


def _join(first: str, second: str) -> str:
    return f"{first}; {second}" if first else second
