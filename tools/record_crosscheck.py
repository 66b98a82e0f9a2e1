"""Records checked against an independent tracer: coverage.py's C tracer, on a real tree.

Run from the repo root (results: docs/change-impact.md)::

    python -m tools.record_crosscheck collect --root /tmp/sglrec --hw cpu \\
        --suite base-a-test-cpu --files-from sample.txt --out /tmp/sglcov \\
        --python /tmp/sglvenv12/bin/python
    python -m tools.record_crosscheck judge --root /tmp/sglrec --records /tmp/sglrec-deps \\
        --coverage /tmp/sglcov [--rows rows.jsonl]

``collect`` runs each listed test file alone through ``run_suite.py`` with coverage.py started
in every Python process of its tree (``COVERAGE_PROCESS_START``; the ``ctrace`` core, not
``sys.monitoring``, so the check does not share the recorder's hook), one data directory per
test file. The runner's own recording is off. With ``--strace`` each run is also traced with
``strace -f -y`` (the opens, working directories and forks of every process), and ``judge``
lists the files of the tree a test's processes opened that its record does not note (C code's
reads, which the audit hook does not see, show up here), apart from what a built-in rule runs
everything for and a record that keeps its test for any change (an unbounded program).

``judge`` maps the lines coverage.py saw to the blocks of :mod:`ci_runner.impact.blocks` and,
for each test file whose record is valid and whose coverage run passed, lists the blocks that
coverage.py saw run and the record lacks (a blind spot of the recorder: a change there could
drop the test). With ``--rows`` (``tools.recorded_savings --json``), it also lists, for each
commit, the test files the recorded selection dropped although coverage.py saw them run a block
that the commit changed: misses, judged by the other tracer. A commit's changed blocks are those
whose hash differs between the commit and its first parent; a file that does not parse on either
side counts whole.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from coverage import CoverageData

from ci_runner.impact.blocks import MODULE, block_hashes, executed_blocks
from ci_runner.impact.path_rules import matching_pattern
from ci_runner.impact.record_format import FileRecord, read_records, record_name
from ci_runner.impact.selection import BUILTIN_RUN_EVERYTHING

RUN_SUITE = Path(__file__).resolve().parents[1] / "run_suite.py"
STATUS_FILE = "status.txt"
STRACE_FILE = "strace.txt"
# one line of ``strace -f -y``: pid, then a call's start or a call resumed
_LINE = re.compile(r"^(\d+) +(?:<\.\.\. (\w+) resumed>(.*)|(\w+)\((.*))$")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_DIR_FD = re.compile(r"^(?:AT_FDCWD|\d+)<([^>]*)>, ")  # openat's directory, as -y prints it
_CHILD = re.compile(r"= (\d+)")
_FORKS = ("clone", "clone3", "fork", "vfork")
_TRACED = "trace=open,openat,openat2,chdir,fchdir,clone,clone3,fork,vfork"


def collect(args: argparse.Namespace) -> int:
    """Run each listed file under coverage.py; one directory of data files per test file."""
    root = Path(args.root).resolve()
    out = Path(args.out).resolve()
    tests = [line.strip() for line in Path(args.files_from).read_text().splitlines()]
    for test in filter(None, tests):
        data = out / record_name(test)
        data.mkdir(parents=True, exist_ok=False)
        config = data / "coveragerc"
        config.write_text(
            f"[run]\nparallel = true\ndata_file = {data}/.coverage\nsource = {root}\n"
            "concurrency = thread,multiprocessing\n"
        )
        env = dict(os.environ, COVERAGE_PROCESS_START=str(config), COVERAGE_CORE="ctrace")
        env.pop("CI_RUNNER_RECORD_DEPS", None)
        trace = ["strace", "-f", "-y", "-qq", "-e", _TRACED, "-o",
                 str(data / STRACE_FILE)] if args.strace else []  # fmt: skip
        done = subprocess.run(
            [*trace, args.python, str(RUN_SUITE), "--root", str(root), "--hw", args.hw,
             "--suite", args.suite, "--files", test, "--timeout-per-file", "600"],
            env=env, cwd=root, capture_output=True, text=True,
        )  # fmt: skip
        status = "passed" if done.returncode == 0 else f"exit {done.returncode}"
        (data / STATUS_FILE).write_text(f"{test}\n{status}\n")
        print(f"{test}: {status}", flush=True)
    return 0


def covered_blocks(root: Path, data_dir: Path) -> dict[str, set[str]]:
    """``{path: block keys}`` of the tree's files that coverage.py saw run in ``data_dir``."""
    lines: dict[str, set[int]] = {}
    for data_file in sorted(data_dir.glob(".coverage*")):
        data = CoverageData(basename=str(data_file))
        data.read()
        for measured in data.measured_files():
            try:
                path = Path(measured).resolve().relative_to(root).as_posix()
            except ValueError:
                continue
            lines.setdefault(path, set()).update(data.lines(measured) or ())
    found: dict[str, set[str]] = {}
    for path, executed in lines.items():
        if not path.endswith(".py") or not (root / path).is_file():
            continue
        blocks = executed_blocks((root / path).read_bytes(), executed)
        found[path] = set(blocks) if blocks is not None else {MODULE}
    return found


def opened_files(root: Path, trace: Path) -> set[str]:
    """The tree's files that the test's processes opened or tried to open (``strace -f -y``):
    not the runner's own process (the trace's first pid), not directories, not ``.git/``.
    Relative paths are resolved from the directory ``-y`` prints for ``openat``'s
    ``AT_FDCWD`` or descriptor, else from the process's working directory, followed through
    ``chdir``, ``fchdir`` and the forks that pass it on (the runner starts in the root)."""
    cwd: dict[str, str] = {}
    found: set[str] = set()
    runner = None
    for line in trace.read_text(errors="replace").splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        pid = match.group(1)
        runner = runner or pid
        here = cwd.setdefault(pid, str(root))
        name, rest = (match.group(2), match.group(3)) if match.group(2) else match.group(4, 5)
        if name in _FORKS:
            child = _CHILD.search(rest.rsplit(")", 1)[-1])
            if child:  # (a vfork child may have run, and changed directory, first)
                cwd.setdefault(child.group(1), here)
            continue
        if name == "fchdir":
            target = re.search(r"<([^>]*)>", rest)
            if target and " = 0" in rest:
                cwd[pid] = target.group(1)
            continue
        quoted = _QUOTED.search(rest)
        if quoted is None or match.group(2):
            continue
        base = _DIR_FD.match(rest)
        path = os.path.normpath(os.path.join(base.group(1) if base else here, quoted.group(1)))
        if name == "chdir":
            if "= -1" not in rest:
                cwd[pid] = path
            continue
        if pid == runner or "O_DIRECTORY" in rest:
            continue
        try:
            relative = Path(path).relative_to(root).as_posix()
        except ValueError:
            continue
        if not relative.startswith(".git/"):
            found.add(relative)
    return found


def unexplained_opens(opened: set[str], record: FileRecord) -> list[str]:
    """The files of ``opened`` that the record neither noted as opened nor ran code of (a
    ``.pyc`` counts as its source), and that no built-in rule runs every test for (pytest's
    configuration discovery reads ``pyproject.toml``, ``tox.ini``, ...; unnoted by design)."""
    known = set(record.opened) | set(record.code)
    for use in record.kernels:
        known |= set(use.dependencies) | set(use.sources)
    ruled = tuple(pattern for pattern, _ in BUILTIN_RUN_EVERYTHING)
    found = []
    for path in sorted(opened):
        source = re.sub(r"__pycache__/([^/]+?)\.[^/]*\.pyc$", r"\1.py", path)
        if path not in known and source not in known and not matching_pattern(ruled, path):
            found.append(path)
    return found


def git_show(root: Path, commit: str, path: str) -> bytes | None:
    """The file at ``commit``; None where it does not exist there."""
    done = subprocess.run(["git", "-C", str(root), "show", f"{commit}:{path}"], capture_output=True)
    return done.stdout if done.returncode == 0 else None


def changed_blocks(root: Path, commit: str) -> dict[str, set[str] | None]:
    """``{path: changed block keys}`` of each Python file the commit changed against its first
    parent; None: the whole file (added, deleted, or not parsed on one side)."""
    names = subprocess.run(
        ["git", "-C", str(root), "diff", "--name-only", "--no-renames", f"{commit}^", commit],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    changed: dict[str, set[str] | None] = {}
    for path in names:
        if not path.endswith(".py"):
            continue
        old, new = git_show(root, f"{commit}^", path), git_show(root, commit, path)
        before = block_hashes(old) if old is not None else None
        after = block_hashes(new) if new is not None else None
        if before is None or after is None:
            changed[path] = None
            continue
        changed[path] = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    return changed


def judge(args: argparse.Namespace) -> int:
    """Print the blind spots of each record and, with ``--rows``, the misses of each commit."""
    root = Path(args.root).resolve()
    records = read_records(Path(args.records), "--records").tests
    covered: dict[str, dict[str, set[str]]] = {}
    for data_dir in sorted(p for p in Path(args.coverage).iterdir() if p.is_dir()):
        if not (data_dir / STATUS_FILE).is_file():
            print(f"{data_dir.name}: not judged (its run did not finish)")
            continue
        test, status = (data_dir / STATUS_FILE).read_text().split("\n")[:2]
        record = records.get(test)
        if status != "passed" or record is None or record.problems:
            print(f"{test}: not judged (coverage run {status}, record "
                  f"{'missing' if record is None else record.problems or 'valid'})")  # fmt: skip
            continue
        covered[test] = covered_blocks(root, data_dir)
        unseen = sorted(
            f"{path}:{key}"
            for path, keys in covered[test].items()
            for key in keys - set(record.code.get(path, {}))
        )
        blocks = sum(map(len, covered[test].values()))
        print(f"{test}: {blocks} blocks run, {len(unseen)} not in its record", flush=True)
        for name in unseen[: args.show]:
            print(f"    {name}")
        if (data_dir / STRACE_FILE).is_file():
            opened = opened_files(root, data_dir / STRACE_FILE)
            # a record with a program whose reads it does not see keeps its test for any change
            unknown = [] if record.unbounded else unexplained_opens(opened, record)
            print(f"    strace: {len(opened)} files of the tree opened, {len(unknown)} not in "
                  "its record")  # fmt: skip
            for path in unknown[: args.show]:
                print(f"    opened {path}")
    print(f"judged {len(covered)} test files")
    if args.rows:
        misses = 0
        rows = [json.loads(line) for line in Path(args.rows).read_text().splitlines()]
        for row in rows:
            if row.get("applies") is False:
                continue
            changed = changed_blocks(root, row["commit"])
            kept = set(row["kept_recorded"])
            # A selection that runs everything lists no kept files.
            dropped = set() if row["files_recorded"] > len(kept) else set(covered) - kept
            found = [
                (test, path)
                for test in sorted(dropped)
                for path, keys in changed.items()
                if path in covered[test] and (keys is None or keys & covered[test][path])
            ]
            misses += len(found)
            print(f"{row['commit']}: {len(changed)} Python files changed, {len(dropped)} of "
                  f"{len(covered)} judged files dropped, {len(found)} ran a changed block")  # fmt: skip
            for test, path in found:
                print(f"    MISS {test} ran {path}")
        print(f"misses: {misses}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("collect", help="run each listed test file under coverage.py")
    run.add_argument("--root", required=True, help="the tree at the recorded commit")
    run.add_argument("--hw", required=True)
    run.add_argument("--suite", required=True)
    run.add_argument("--files-from", required=True, help="test paths, one per line")
    run.add_argument("--out", required=True, help="a new directory for the coverage data")
    run.add_argument("--python", default=sys.executable, help="the runner's interpreter")
    run.add_argument(
        "--strace", action="store_true", help="also trace every open of the file's processes"
    )
    check = commands.add_parser("judge", help="compare the records with coverage.py's data")
    check.add_argument("--root", required=True, help="the tree at the recorded commit")
    check.add_argument("--records", required=True, help="the --record-deps directory")
    check.add_argument("--coverage", required=True, help="collect's --out directory")
    check.add_argument("--rows", help="tools.recorded_savings --json rows to judge for misses")
    check.add_argument("--show", type=int, default=20, help="blind spots listed per test file")
    args = parser.parse_args(argv)
    return collect(args) if args.command == "collect" else judge(args)


if __name__ == "__main__":
    sys.exit(main())
