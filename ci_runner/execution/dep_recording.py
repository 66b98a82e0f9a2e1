"""The runner side of ``--record-deps DIR``: set up each attempt's recording, then write the
file's :class:`~ci_runner.impact.record_format.FileRecord`.

Each attempt gets a scratch directory and, in its environment, ``CI_RUNNER_RECORD_DEPS`` (the
run's recording configuration, for the package's start-up hook: every Python process of the
file's tree records the repository code it runs, with ``sys.monitoring`` on Python >= 3.12 and
coverage.py on older interpreters, and notes what it opens, lists, imports and starts; see
:mod:`ci_runner.execution.record_child`; ``COVERAGE_PROCESS_START`` where the package's ``.pth``
file is not installed, and coverage.py then starts in every process) and ``JIT_KERNEL_LOAD_LOG``
(where every process that loads a JIT module writes the module's sources and the headers its
compiler read, hashed). The child's pytest plugin and unittest hook record each test case under
a context named by its id (:mod:`ci_runner_case_context`). After the file's last attempt the
code it ran becomes blocks (:mod:`ci_runner.impact.blocks`, hashed from the tree as it is now,
the recorded commit; each source content is cut once, and kept across runs by
:mod:`ci_runner.impact.block_cache`), split into what ran outside every case and what each case
ran; its opened files are hashed, and the record is written under ``DIR/tests/``.
"""

from __future__ import annotations

import hashlib
import json
import os
import site
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from ci_runner.execution import record_child
from ci_runner.execution.record_child import (
    CASE_VARIABLE,
    CHILD_CONTEXT,
    COVERAGE_START,
    START_VARIABLE,
    case_nonce,
)
from ci_runner.file_safety import read_regular_text
from ci_runner.impact.block_cache import BlockCache
from ci_runner.impact.blocks import MODULE, Block
from ci_runner.impact.record_format import (
    CaseRecord,
    FileRecord,
    KernelUse,
    file_digest,
    write_meta,
    write_test_record,
)
from ci_runner.model import PASSED, FileResult

# coverage's ``patch = execv`` (and ``subprocess``) pass a running measurement to children in this
INHERITED_CONFIG = "COVERAGE_PROCESS_CONFIG"
START_HOOK = Path(record_child.__file__).with_name(record_child.START_HOOK_NAME)
JIT_LOG_VARIABLE = "JIT_KERNEL_LOAD_LOG"
PLUGIN = "ci_runner.execution.record_child"
SKIPPED_PARTS = ("site-packages", "dist-packages", "__pycache__")
NO_DATA = (
    "no process of this file recorded the code it ran (is the package installed, and coverage.py "
    "where Python is older than 3.12?)"
)


class RecordingError(Exception):
    """``--record-deps`` cannot work here (coverage missing, directory unwritable)."""


def head_commit(root: Path) -> str | None:
    """The commit of a clean git checkout at ``root``; None otherwise (no git, or changes
    to tracked files that the commit does not hold)."""
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--verify", "--quiet", "HEAD^{commit}"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    if head.returncode != 0 or dirty.returncode != 0 or dirty.stdout.strip():
        return None
    return head.stdout.strip() or None


def start_hook_installed() -> bool:
    """Whether this interpreter runs the package's ``a1_ci_runner_record.pth`` at start-up (a site
    directory holds it: ``setup.py`` installs it with the package)."""
    directories = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        directories.append(site.getusersitepackages())
    return any((Path(d) / START_HOOK.name).is_file() for d in directories)


class DepRecorder:
    """Writes the records of one shard's files into ``directory``."""

    def __init__(self, directory: Path, root: Path) -> None:
        # The package's start-up hook starts each process's recording (record_child.start):
        # on Python >= 3.12 with sys.monitoring and no coverage.py, on older ones with it.
        self.hooked = start_hook_installed()
        if not (self.hooked and hasattr(sys, "monitoring")):
            try:
                import coverage  # noqa: F401 - only recording through coverage.py needs it
            except ImportError:
                raise RecordingError(
                    "--record-deps needs coverage.py on Python < 3.12 or without the package "
                    "installed (pip install 'coverage>=7.10')"
                ) from None
        self.directory = directory
        self.root = root.resolve()
        # (file, sha256) -> its blocks and each line's block: many files run the same modules
        self._blocks: dict[tuple[str, str], tuple[list[Block], dict[int, Block]] | None] = {}
        self._block_cache = BlockCache()  # and across runs, on disk
        self._sources: dict[str, str | None] = {}  # measured path -> relative source path
        self.commit = head_commit(self.root)
        if not self.hooked:
            print(
                f"--record-deps: {START_HOOK.name} is not installed in {sys.prefix} (install "
                "the package: pip install .), so coverage.py starts in every Python process",
                file=sys.stderr,
            )
        try:
            write_meta(directory, self.commit)
        except OSError as exc:
            raise RecordingError(f"--record-deps {directory}: cannot write: {exc}") from None

    def environment(self, scratch: Path, base: Mapping[str, str]) -> dict[str, str]:
        """Create the attempt's scratch directory; ``base`` with the variables its processes
        need. A recorded test that records a run of its own (a runner's test suite) inherits
        the outer recording's variables: they are replaced, and coverage.py's own
        ``COVERAGE_PROCESS_CONFIG``, which it prefers to any configuration file, is dropped."""
        dropped = (INHERITED_CONFIG, CASE_VARIABLE, COVERAGE_START, START_VARIABLE)
        env = {k: v for k, v in base.items() if k not in dropped}
        env.update(self._variables(scratch))
        return env

    def _variables(self, scratch: Path) -> dict[str, str]:
        for part in ("coverage", "notes", "jit"):
            (scratch / part).mkdir(parents=True, exist_ok=True)
        rc = scratch / "coveragerc"
        rc.write_text(
            "\n".join(
                [
                    "[run]",
                    f"data_file = {scratch / 'coverage' / 'data'}",
                    "parallel = true",
                    f"include = {self.root}/*",
                    # An environment inside the root (``.venv/``) is not the repository's
                    # code (SKIPPED_PARTS drops it from the record): not tracing it saves time.
                    "omit = "
                    + ", ".join(
                        f"{self.root}/{deep}{part}/*"
                        for part in ("site-packages", "dist-packages")
                        for deep in ("", "**/")
                    ),
                    # children inherit the variable that starts the recording; coverage's
                    # own ``subprocess`` patch would start it eagerly in every one of them
                    "patch = fork, execv, _exit",
                    # sys.monitoring (Python >= 3.12) reports a line once, until the case
                    # context restarts its events (ci_runner_case_context); older
                    # interpreters fall back to coverage's C tracer.
                    "core = sysmon",
                    f"plugins = {PLUGIN}",
                    "disable_warnings = no-data-collected, module-not-measured, "
                    "module-not-imported, couldnt-parse, no-ctracer, no-sysmon, "
                    "no-sysmon-context",
                    f"[{PLUGIN}]",
                    f"root = {self.root}",
                    f"out = {scratch / 'notes'}",
                    "",
                ]
            ),
            encoding="utf-8",
        )
        start = START_VARIABLE if self.hooked else COVERAGE_START
        return {start: str(rc), JIT_LOG_VARIABLE: str(scratch / "jit")}

    def write(
        self, test: str, result: FileResult, attempts: int, partial: bool, scratch: Path
    ) -> None:
        """Write the record of ``test`` from its last attempt's scratch directory (``partial``:
        the run asked for some of its cases only)."""
        problems: list[str] = []
        status = result.status
        if status != PASSED or attempts != 1:
            problems.append(
                f"{status} in the recording run"
                if status != PASSED
                else f"passed only at attempt {attempts} (flaky)"
            )
        if partial:
            problems.append("only some of its cases ran in the recording run (--tests)")
        notes, note_problems = _notes(scratch / "notes")
        children = notes["child_runs"]
        code, sources, measured, code_problems = self._code(scratch / "coverage", notes["executed"])
        by_context: dict[str, dict[str, tuple[str, ...]]] = {}
        for context, files_ in measured.items():  # a case's children's code is the case's
            _merge_keys(by_context.setdefault(case_of(context, children), {}), files_)
        durations = {c.case_id: c.time for c in result.cases if c.case_id}
        # A context that is not a case of the file (a test that runs pytest in a child process
        # of its own measures the child's cases) is the file's: what runs there is shared.
        file_code = by_context.pop("", {})
        for context in set(by_context) - set(durations):
            _merge_keys(file_code, by_context.pop(context))
        problems += code_problems + note_problems
        opened = {
            relative: file_digest(self.root / relative)
            for path in notes["opened"]
            if (relative := self._relative(path)) is not None
        }
        opened_by = self._by_case(notes, "opened", set(durations))
        listed_by = self._by_case(notes, "listed", set(durations))
        listed = {r for p in notes["listed"] if (r := self._relative(p)) is not None}
        kernels, kernel_problems = self._kernels(scratch / "jit")
        record = FileRecord(
            test=test,
            commit=self.commit,
            status=status,
            code=code,
            sources=sources,
            opened=opened,
            listed=tuple(sorted(listed)),
            imported=tuple(sorted(notes["imported"])),
            kernels=kernels,
            unbounded=tuple(dict.fromkeys(notes["unbounded"])),
            problems=tuple(problems + kernel_problems),
            file_code=file_code,
            cases={
                case: CaseRecord(
                    seconds,
                    by_context.get(case, {}),
                    tuple(sorted(opened_by.get(case, ()))),
                    tuple(sorted(listed_by.get(case, ()))),
                )
                for case, seconds in sorted(durations.items())
            },
            seconds=round(result.elapsed, 3),
            file_opened=tuple(sorted(opened_by.get("", ()))),
            file_listed=tuple(sorted(listed_by.get("", ()))),
        )
        try:
            write_test_record(self.directory, record)
        except OSError as exc:  # the run goes on; the test simply has no record
            print(f"--record-deps: cannot write the record of {test}: {exc}", flush=True)

    def _by_case(self, notes: dict, key: str, cases: set[str]) -> dict[str, set[str]]:
        """Root-relative files opened (``key`` "opened") or directories listed ("listed") by
        the case that did it ("": outside every case; a context that is no case of the file, or
        a path no context names, is the file's)."""
        by: dict[str, set[str]] = {}
        for context, paths in notes[f"{key}_by"].items():
            case = case_of(context, notes["child_runs"])
            case = case if case in cases else ""
            by.setdefault(case, set()).update(
                r for p in paths if (r := self._relative(p)) is not None
            )
        attributed = set().union(*by.values()) if by else set()
        by.setdefault("", set()).update(
            r for p in notes[key] if (r := self._relative(p)) is not None and r not in attributed
        )
        return by

    def _relative(self, path: str) -> str | None:
        """A root-relative POSIX path for a path inside the root (through links too: the
        link is resolved only when the path as written is not one)."""
        relative = self._inside(path)
        return relative if relative is not None else self._inside(os.path.realpath(path))

    def _inside(self, path: str) -> str | None:
        try:
            relative = Path(path).relative_to(self.root).as_posix()
        except ValueError:
            return None
        if any(part in SKIPPED_PARTS for part in relative.split("/")):
            return None
        return "" if relative == "." else relative

    def _source(self, measured: str) -> str | None:
        """The root-relative path of a measured Python file, None for one outside the root;
        remembered, as every file of a run measures the same sources."""
        if measured not in self._sources:
            relative = self._relative(measured)
            self._sources[measured] = relative if relative and relative.endswith(".py") else None
        return self._sources[measured]

    def _code(
        self, directory: Path, executed: list[dict]
    ) -> tuple[
        dict[str, dict[str, str]], dict[str, str], dict[str, dict[str, tuple[str, ...]]], list[str]
    ]:
        """``{file: {block: digest}}`` of the code every process ran (coverage.py's executed
        lines in ``directory``, and the code objects of the processes that recorded their own,
        ``executed``), ``{file: sha256}`` of those files (the bytes cut into blocks), and
        ``{context: {file: block keys}}``: the context is the id of the case that ran them, ""
        outside every case. Module-level code counts as the file's, whichever case ran it."""
        # file -> lines that ran together (a line, or a code object's lines) -> contexts
        lines: dict[str, dict[tuple[int, ...], set[str]]] = {}
        problem = self._coverage_lines(directory, lines)
        if problem:
            return {}, {}, {}, [problem]
        for table in executed:
            self._executed_lines(table, lines)
        if not lines and not executed:
            return {}, {}, {}, [NO_DATA]
        code: dict[str, dict[str, str]] = {}
        sources: dict[str, str] = {}
        by_context: dict[str, dict[str, set[str]]] = {}
        problems: list[str] = []
        for relative, ran in sorted(lines.items()):
            try:
                source = (self.root / relative).read_bytes()
            except OSError as exc:
                problems.append(f"{relative} ran but cannot be read now: {exc.strerror}")
                continue
            key = (relative, hashlib.sha256(source).hexdigest())
            if key not in self._blocks:
                blocks = self._block_cache.blocks(source, key[1])
                owner = {n: b for b in (blocks or [])[1:] for n in b.lines}
                self._blocks[key] = None if blocks is None else (blocks, owner)
            parsed = self._blocks[key]
            if parsed is None:
                problems.append(f"{relative} ran but does not parse now")
                continue
            blocks, owner = parsed
            sources[relative] = key[1]
            hit = code.setdefault(relative, {})
            for unit, contexts in ran.items():
                for block in {owner.get(line, blocks[0]) for line in unit}:
                    hit[block.key] = block.digest
                    for context in contexts if block.key != MODULE else ("",):
                        by_context.setdefault(context, {}).setdefault(relative, set()).add(
                            block.key
                        )
        keyed = {
            context: {path: tuple(sorted(keys)) for path, keys in files_.items()}
            for context, files_ in by_context.items()
        }
        return code, sources, keyed, problems

    def _coverage_lines(
        self, directory: Path, lines: dict[str, dict[tuple[int, ...], set[str]]]
    ) -> str:
        """Add the lines coverage.py measured in ``directory`` (its data files, if any) to
        ``lines``; a problem, or ""."""
        files = sorted(
            p
            for p in directory.iterdir()
            if p.name.startswith("data.") and not p.name.endswith(("-journal", "-wal", "-shm"))
        )
        if not files:
            return ""
        from coverage import CoverageData

        # The processes' data combined in memory: one query per measured file, not one per
        # file and process, each opening its data file again.
        combined = CoverageData(no_disk=True)
        try:
            for data_file in files:
                data = CoverageData(basename=str(data_file))
                try:
                    data.read()
                    combined.update(data)
                except Exception as exc:  # a damaged data file: coverage raises its own errors
                    return f"cannot read coverage data {data_file.name}: {exc}"
                finally:
                    data.close()
            for measured in combined.measured_files():
                relative = self._source(measured)
                if relative is not None:
                    into = lines.setdefault(relative, {})
                    for line, contexts in combined.contexts_by_lineno(measured).items():
                        into.setdefault((line,), set()).update(contexts or ("",))
        finally:
            combined.close(force=True)
        return ""

    def _executed_lines(
        self, table: dict, lines: dict[str, dict[tuple[int, ...], set[str]]]
    ) -> None:
        """Add a process's code objects (:meth:`ExecutedCode.table`, checked by
        :func:`_notes`) to ``lines``: each code object's lines under the contexts that ran it."""
        units = []
        for path, numbers in table["code"]:
            relative = self._source(path)
            units.append(None if relative is None else (relative, tuple(numbers)))
        for context, indices in table["contexts"].items():
            for index in indices:
                unit = units[index]
                if unit is not None:
                    lines.setdefault(unit[0], {}).setdefault(unit[1], set()).add(context)

    def _kernels(self, directory: Path) -> tuple[tuple[KernelUse, ...], list[str]]:
        """The JIT modules the file's processes loaded (``JIT_KERNEL_LOAD_LOG`` lines)."""
        uses: dict[str, KernelUse] = {}
        problems: list[str] = []
        for log in sorted(directory.glob("*.jsonl")):
            for number, line in enumerate(read_regular_text(log).splitlines(), start=1):
                try:
                    entry = json.loads(line)
                    module = entry["module"]
                    sources = [self._relative(s) for s in entry["sources"]]
                    dependencies = {
                        relative: digest
                        for path, digest in entry["dependencies"].items()
                        if (relative := self._relative(path)) is not None
                    }
                except (ValueError, KeyError, TypeError, AttributeError):
                    problems.append(f"JIT load log {log.name} line {number} is not understood")
                    continue
                uses[module] = KernelUse(
                    str(module), tuple(s for s in sources if s is not None), dependencies
                )
        return tuple(uses[m] for m in sorted(uses)), problems


def _merge_keys(into: dict[str, tuple[str, ...]], files: Mapping[str, tuple[str, ...]]) -> None:
    """Add ``files``' block keys to ``into`` (file -> sorted keys)."""
    for path, keys in files.items():
        into[path] = tuple(sorted({*into.get(path, ()), *keys}))


def case_of(context: str, children: Mapping[str, str]) -> str:
    """The case a coverage context or notes key names: itself, or for a case's child process
    (``ci-runner-case-child:<nonce>``, then ``|`` and the child's own context) the case of
    that run when ``children`` proves every child of it ended before it did; else "" (the
    file's)."""
    if not context.startswith(CHILD_CONTEXT):
        return context
    nonce = context[len(CHILD_CONTEXT) :].partition("|")[0]
    return children.get(nonce, "")


def child_runs(runs: Mapping[str, dict], ends: Mapping[str, list[float]]) -> dict[str, str]:
    """``{nonce: case}`` for each run of a case (``runs``: nonce -> its case and when it
    ended) every child process of which (``ends``: nonce -> when each child ended) ended
    before the run did: what they ran and read was the case's alone. A run still going when
    its process stopped, or one with a child that outlived it, is the file's."""
    proven: dict[str, str] = {}
    for nonce, run in runs.items():
        ended, case = run.get("ended"), run.get("case")
        if not isinstance(ended, (int, float)) or not isinstance(case, str) or not case:
            continue
        if all(end <= ended for end in ends.get(nonce, ())):
            proven[nonce] = case
    return proven


def _notes(directory: Path) -> tuple[dict, list[str]]:
    """The union of the processes' notes; a process that started but wrote none is a problem."""
    merged: dict[str, set[str] | list[str]] = {
        "opened": set(), "listed": set(), "imported": set(), "unbounded": [],
    }  # fmt: skip
    by_case: dict[str, dict[str, set[str]]] = {"opened": {}, "listed": {}}
    started = {p.stem for p in directory.glob("*.start")}
    written: set[str] = set()
    problems: list[str] = []
    runs: dict[str, dict] = {}  # nonce -> the case run's case and end, from its process
    ends: dict[str, list[float]] = {}  # nonce -> when each child process of the run ended
    executed: list[dict] = []  # the code tables of processes that recorded their own
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(read_regular_text(path))
            if "executed" in data:
                executed.append(_executed_table(data["executed"]))
            runs.update(data.get("runs", {}))
            if tag := case_nonce(data.get("tag")):
                ended = data.get("ended")
                ends.setdefault(tag, []).append(
                    ended if isinstance(ended, (int, float)) else float("inf")
                )
            for key in ("opened", "listed", "imported"):
                merged[key].update(data[key])  # type: ignore[union-attr]
            merged["unbounded"] += data["unbounded"]  # type: ignore[operator]
            # notes without them (another recorder) leave every path to the file
            for key, by in by_case.items():
                for case, paths in data.get(f"{key}_by", {"": data[key]}).items():
                    by.setdefault(str(case), set()).update(paths)
        except (OSError, ValueError, KeyError, TypeError):
            problems.append(f"the notes of process {path.stem} are unreadable")
        written.add(path.stem)
    lost = sorted(started - written)
    if lost:
        pids = ", ".join(token.split("-")[0] for token in lost[:5])
        problems.append(
            f"{len(lost)} process(es) ended without saving what they ran (killed by a signal?): "
            f"pid {pids}"
        )
    notes = {k: sorted(v) if isinstance(v, set) else v for k, v in merged.items()}
    return {
        **notes,
        "opened_by": by_case["opened"],
        "listed_by": by_case["listed"],
        "child_runs": child_runs(runs, ends),
        "executed": executed,
    }, problems


def _executed_table(table: object) -> dict:
    """A process's code table as :meth:`ExecutedCode.table` writes it; ValueError otherwise."""
    if not isinstance(table, dict):
        raise ValueError("not a table")
    code, contexts = table.get("code"), table.get("contexts")
    if not isinstance(code, list) or not isinstance(contexts, dict):
        raise ValueError("no code or contexts")
    for entry in code:
        if not (
            isinstance(entry, list)
            and len(entry) == 2
            and isinstance(entry[0], str)
            and isinstance(entry[1], list)
            and all(isinstance(n, int) for n in entry[1])
        ):
            raise ValueError("a code entry is not [file, lines]")
    for context, indices in contexts.items():
        if not isinstance(indices, list) or not all(
            isinstance(i, int) and 0 <= i < len(code) for i in indices
        ):
            raise ValueError(f"context {context!r} names no code")
    return table
