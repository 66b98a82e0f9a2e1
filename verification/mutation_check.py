#!/usr/bin/env python3
"""Mutation check of change selection: a bug planted in any kernel file fails a selected test.

    python verification/mutation_check.py --list                # CPU: the mutants and selections
    python verification/mutation_check.py                       # GPU: run them (<= 7.5 min, 1 H100)

For every kernel source (``jit_kernel/csrc``) and every header of the library
(``jit_kernel/include/sgl_kernel``), ``--per-file`` mutants (default 1, a seeded sample) each
change one operator or constant on a code line (``a + b`` to ``a - b``, ``<`` to ``<=``, ``==``
to ``!=``, ``&&`` to ``||``, ``+=`` to ``-=``, a literal ``1`` to ``2``, ...). A mutant lives in
its own copy of the tree; there ``run_suite.py --hw cuda --suite SUITE --changed-files <the
file>`` selects the tests the change can affect and runs them, stopping at the first failure
(the runner's default). The mutant is *killed* when that run fails (a failed build counts, and
is counted apart), *survives* when every selected test passes, and is *uncovered* when the
suite holds no test that can reach the file (on one GPU: the all-reduce kernel sources, whose
tests need two GPUs).
Every survivor is a missed bug to look at: an equivalent mutant, or a test gap.

The JIT cache (``$JIT_KERNEL_CACHE_DIR``, else a new temporary directory) is shared by all
mutants (keys cover file contents, so a mutated header gets its own modules) and warmed first
with ``python -m jit_kernel precompile``. ``--jobs`` mutants run at once; mutants not started
within ``--time-budget`` seconds (300, counted from the start) are reported as not run, and a
mutant runs at most ``--mutant-timeout`` seconds (150), so a run ends within about 7.5 minutes.
Writes ``mutation_check.json`` (every mutant: file, line, before/after, selection, outcome,
seconds) and ``mutation_check.log`` to ``$OUT`` (default ``./mutation-check``); prints the
counts: files, mutants, killed (by a failing test / by a failed build), survived, uncovered,
not run, and the selection sizes. Exit status 0 when no mutant survived, 1 otherwise, 2 on bad
usage or when the unmutated tree does not build (a broken environment would fail, and so
"kill", every mutant). Each mutant first builds its modules with ``--build-jobs`` parallel
builds (a header change rebuilds every module that includes it), then runs its tests.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
KERNEL_DIRS = ("jit_kernel/include/sgl_kernel", "jit_kernel/csrc")
SUITE = "base-b-kernel-unit-1-gpu-large"
HW = ["cuda"]  # --hw
# (name, pattern on the code part of a line, replacement); the first group is kept
OPERATORS = (
    ("+ to -", re.compile(r"(\w|\)|\]) \+ (?=[\w(])"), r"\1 - "),
    ("- to +", re.compile(r"(\w|\)|\]) - (?=[\w(])"), r"\1 + "),
    ("* to +", re.compile(r"(\w|\)|\]) \* (?=[\w(])"), r"\1 + "),
    ("< to <=", re.compile(r"(\w|\)) < (?=[\w(])"), r"\1 <= "),
    ("> to >=", re.compile(r"(\w|\)) > (?=[\w(])"), r"\1 >= "),
    ("<= to <", re.compile(r"(\w|\)) <= "), r"\1 < "),
    ("== to !=", re.compile(r"(\w|\)) == "), r"\1 != "),
    ("!= to ==", re.compile(r"(\w|\)) != "), r"\1 == "),
    ("&& to ||", re.compile(r"(\w|\)) && "), r"\1 || "),
    ("+= to -=", re.compile(r"(\w|\]) \+= "), r"\1 -= "),
    ("drop !", re.compile(r"([(\s])!(?=[\w(])"), r"\1"),
    ("max to min", re.compile(r"(::|\(|= |, |return )(f?)max(f?)\("), r"\1\2min\3("),
    ("min to max", re.compile(r"(::|\(|= |, |return )(f?)min(f?)\("), r"\1\2max\3("),
    ("1 to 2", re.compile(r"([^\w.])1(?=[;,)\s])"), r"\g<1>2"),
    ("0 to 1", re.compile(r"([^\w.])0(?=[;,)\s])"), r"\g<1>1"),
    ("16u to 8u", re.compile(r"([^\w.])16u\b"), r"\g<1>8u"),
    ("float halved", re.compile(r"([^\w.])(\d+\.\d*)f\b"), r"\g<1>0.5f * \2f"),
)
_STRING = re.compile(r'"(?:\\.|[^"\\])*"')


def with_python_path(root: Path) -> str:
    """PYTHONPATH with ``root`` first, the caller's entries (carried packages) after it."""
    return os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH", "")]))


def outside_strings(pattern: re.Pattern[str], code: str) -> re.Match[str] | None:
    """The first match of ``pattern`` in ``code`` that is not inside a string literal."""
    strings = [m.span() for m in _STRING.finditer(code)]
    for match in pattern.finditer(code):
        if not any(start <= match.start() < end for start, end in strings):
            return match
    return None


@dataclass
class Mutant:
    file: str
    line: int
    operator: str
    before: str
    after: str
    selected: list[str] = field(default_factory=list)
    outcome: str = "not run"  # killed, killed (build), survived, uncovered, not run, error
    failed_test: str = ""
    seconds: float = 0.0


def code_lines(text: str) -> list[tuple[int, str]]:
    """``(line number, code)`` of the lines that hold code: comments, preprocessor directives,
    ``static_assert`` and template headers are left out (a mutant there is no runtime bug)."""
    lines, in_block = [], False
    for number, line in enumerate(text.splitlines(), 1):
        code = line
        if in_block:
            if "*/" not in code:
                continue
            code, in_block = code.split("*/", 1)[1], False
        if "/*" in code:
            head, _, tail = code.partition("/*")
            in_block = "*/" not in tail
            code = head
        code = code.split("//", 1)[0]
        stripped = code.strip()
        if not stripped or stripped.startswith(("#", "static_assert", "template <", "using")):
            continue
        lines.append((number, code))
    return lines


def mutants_of(relative: str, per_file: int, seed: int) -> list[Mutant]:
    """A seeded sample of ``per_file`` mutants of one file (all candidates, shuffled)."""
    text = (REPO_ROOT / relative).read_text()
    candidates = []
    for number, code in code_lines(text):
        for name, pattern, replacement in OPERATORS:
            if outside_strings(pattern, code):
                candidates.append((number, name, pattern, replacement))
    rng = random.Random(f"{seed}:{relative}")
    rng.shuffle(candidates)
    chosen, lines = [], text.splitlines()
    for number, name, pattern, replacement in candidates[:per_file]:
        before = lines[number - 1]
        code_end = len(before.split("//", 1)[0])
        match = outside_strings(pattern, before[:code_end])
        assert match is not None
        after = before[: match.start()] + match.expand(replacement) + before[match.end() :]
        chosen.append(Mutant(relative, number, name, before.strip(), after.strip()))
    return chosen


def kernel_files() -> list[str]:
    found = []
    for directory in KERNEL_DIRS:
        for path in sorted((REPO_ROOT / directory).rglob("*")):
            if path.suffix in (".h", ".cuh", ".cu", ".cpp") and path.is_file():
                found.append(path.relative_to(REPO_ROOT).as_posix())
    return found


def tree_files(skip: Path) -> list[str]:
    """The files of the working tree: git's (tracked, and untracked ones it does not ignore), or
    without git every file outside hidden directories, ``__pycache__`` and ``skip``."""
    listing = subprocess.run(
        [
            "git",
            "-C",
            str(REPO_ROOT),
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ],
        capture_output=True,
    )
    if listing.returncode == 0 and listing.stdout:
        names = listing.stdout.decode().split("\0")
        return [name for name in names if name and (REPO_ROOT / name).is_file()]
    found = []
    for directory, subdirs, names in os.walk(REPO_ROOT):
        here = Path(directory)
        subdirs[:] = [
            d
            for d in subdirs
            if not d.startswith(".") and d != "__pycache__" and (here / d).resolve() != skip
        ]
        found += [(here / n).relative_to(REPO_ROOT).as_posix() for n in names]
    return found


def copy_tree(files: list[str], destination: Path) -> None:
    for name in files:
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / name, target)


def apply(mutant: Mutant, root: Path) -> None:
    path = root / mutant.file
    lines = path.read_text().splitlines(keepends=True)
    original = lines[mutant.line - 1]
    indent = original[: len(original) - len(original.lstrip())]
    ending = original[len(original.rstrip("\r\n")) :]
    lines[mutant.line - 1] = indent + mutant.after + ending
    path.write_text("".join(lines))


def runner(root: Path, suite: str, listing: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "run_suite.py",
        "--hw",
        HW[0],
        "--suite",
        suite,
        "--allow-empty",
        "--changed-files",
        str(listing),
        *extra,
    ]


def selection_of(file: str, suite: str, env: dict[str, str]) -> list[str]:
    """The files of ``suite`` that a change to ``file`` selects (the runner's own dry run)."""
    with tempfile.TemporaryDirectory() as scratch:
        listing = Path(scratch) / "changed.txt"
        listing.write_text(file + "\n")
        done = subprocess.run(
            runner(REPO_ROOT, suite, listing, "--dry-run", "--format", "json"),
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
    if done.returncode != 0:
        raise RuntimeError(f"selection for {file} failed:\n{done.stderr}")
    return [entry["path"] for entry in json.loads(done.stdout)["files"]]


def run_in_session(command: list[str], root: Path, env: dict[str, str], seconds: float):
    """``(exit code, output)`` of ``command`` in ``root``; (-1, output + "timed out") once it has
    run ``seconds``: the whole process group is killed (the runner and every test it started)."""
    process = subprocess.Popen(
        command,
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=max(seconds, 1.0))
        return process.returncode, output
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        return -1, process.communicate()[0] + "\ntimed out"


def run_mutant(mutant: Mutant, args: argparse.Namespace, files: list[str], log) -> None:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mutant-") as scratch:
        root = Path(scratch) / "tree"
        copy_tree(files, root)
        apply(mutant, root)
        listing = Path(scratch) / "changed.txt"
        listing.write_text(mutant.file + "\n")
        env = {
            **os.environ,
            "PYTHONPATH": with_python_path(root),
            "CI_RUNNER_CACHE_DIR": scratch + "/rc",
        }
        code, output, tests = 0, "", ""
        if args.build_jobs:  # the mutant's modules built in parallel, before its tests run
            precompile = ["-m", "jit_kernel", "precompile", "--jobs", str(args.build_jobs)]
            code, output = run_in_session(
                [sys.executable, *precompile], root, env, args.mutant_timeout
            )
            output = f"precompile: exit {code}\n" + output[-2000:] + "\n"
        if code != -1:  # a failed build is left to the tests that use the module
            left = args.mutant_timeout - (time.monotonic() - started)
            code, tests = run_in_session(runner(root, args.suite, listing), root, env, left)
            output += tests
    mutant.seconds = round(time.monotonic() - started, 1)
    # judged on the tests' output alone (a module no selected test uses may fail to build)
    counts = re.search(r"summary: (\d+) passed, (\d+) failed, (\d+) skipped", tests)
    if code == 0 and counts is not None and int(counts.group(1)) == 0:
        mutant.outcome = "uncovered"  # every selected file was skipped (too few GPUs, ...)
    elif code == 0:
        mutant.outcome = "survived"
    elif code == -1:
        mutant.outcome = "error"
    else:
        built_wrong = "failed to build JIT module" in tests or "JitCompileError" in tests
        mutant.outcome = "killed (build)" if built_wrong else "killed"
        failed = re.search(r"^\s*(?:FAILED|failed)\W+(registered/\S+\.py)", tests, re.MULTILINE)
        mutant.failed_test = failed.group(1) if failed else ""
    with log["lock"]:
        log["file"].write(
            f"=== {mutant.file}:{mutant.line} {mutant.operator}: {mutant.outcome} "
            f"({mutant.seconds}s)\n{output[-4000:]}\n"
        )
        log["file"].flush()
    print(f"{mutant.outcome:15} {mutant.file}:{mutant.line} ({mutant.operator}) {mutant.seconds}s")


def summary(mutants: list[Mutant], files: int) -> list[str]:
    counts: dict[str, int] = {}
    for mutant in mutants:
        counts[mutant.outcome] = counts.get(mutant.outcome, 0) + 1
    sizes = [len(m.selected) for m in mutants]
    lines = [
        f"files {files}, mutants {len(mutants)}: "
        + ", ".join(f"{name} {count}" for name, count in sorted(counts.items())),
        f"selection size per mutant: median {statistics.median(sizes) if sizes else 0}, "
        f"min {min(sizes, default=0)}, max {max(sizes, default=0)}",
    ]
    lines += [
        f"SURVIVED {m.file}:{m.line} {m.before!r} -> {m.after!r} (selected {m.selected})"
        for m in mutants
        if m.outcome == "survived"
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--list",
        "--dry-run",
        dest="list",
        action="store_true",
        help="print the mutants and their selections; run nothing (CPU)",
    )
    parser.add_argument("--per-file", type=int, default=1, help="mutants per file (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--suite", default=SUITE)
    parser.add_argument("--hw", default="cuda", help="the suite's backend (default cuda)")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        help="only files whose path contains this (repeat for several)",
    )
    parser.add_argument("--no-warm", action="store_true", help="skip the precompile warm-up")
    parser.add_argument("--jobs", type=int, default=6, help="mutants at once (default 6)")
    parser.add_argument(
        "--time-budget",
        type=float,
        default=300.0,
        help="start no mutant after this many seconds (default 300)",
    )
    parser.add_argument("--mutant-timeout", type=float, default=150.0)
    parser.add_argument(
        "--build-jobs",
        type=int,
        default=None,
        help="parallel builds of each mutant's modules before its tests run (default: CPUs / "
        "--jobs; 0: let each test build its module when it first calls it)",
    )
    args = parser.parse_args(argv)
    if args.per_file < 1 or args.jobs < 1:
        parser.error("--per-file and --jobs must be at least 1")
    if args.build_jobs is None:
        args.build_jobs = max(1, (os.cpu_count() or 1) // args.jobs)
    elif args.build_jobs < 0:
        parser.error("--build-jobs must be at least 0")
    out = Path(os.environ.get("OUT") or "mutation-check")
    env = {**os.environ, "PYTHONPATH": with_python_path(REPO_ROOT)}

    started = time.monotonic()  # the budget counts the selections and the warm-up too
    HW[0] = args.hw
    files = [f for f in kernel_files() if not args.only or any(part in f for part in args.only)]
    mutants = [m for f in files for m in mutants_of(f, args.per_file, args.seed)]
    without = sorted(set(files) - {m.file for m in mutants})
    for mutant in mutants:  # a change to the same file selects the same tests: ask once
        mutant.selected = selection_of(mutant.file, args.suite, env)
        if not mutant.selected:
            mutant.outcome = "uncovered"
    if args.list:
        for m in mutants:
            print(f"{m.file}:{m.line} [{m.operator}] {m.before!r} -> {m.after!r}")
            print(f"    selects {len(m.selected)}: {' '.join(m.selected) or '(none in the suite)'}")
        print(f"files without a mutable code line: {without or 'none'}")
        print("\n".join(summary(mutants, len(files))))
        return 0

    out.mkdir(parents=True, exist_ok=True)
    # the shared JIT cache lives outside $OUT: its libraries are not results
    os.environ.setdefault("JIT_KERNEL_CACHE_DIR", tempfile.mkdtemp(prefix="mutation-jit-"))
    if not args.no_warm:
        warm = subprocess.run(
            [sys.executable, "-m", "jit_kernel", "precompile"],
            cwd=REPO_ROOT,
            env={**env, "JIT_KERNEL_CACHE_DIR": os.environ["JIT_KERNEL_CACHE_DIR"]},
        )
        print(f"precompile: exit {warm.returncode} in {time.monotonic() - started:.0f}s")
        if warm.returncode != 0:  # every mutant would fail for the same reason: not a kill
            print(
                "mutation_check: the unmutated tree does not build (python -m jit_kernel "
                "precompile failed, output above): fix the environment first",
                file=sys.stderr,
            )
            return 2
    tree = tree_files(out.resolve())
    pending = [m for m in mutants if m.outcome != "uncovered"]
    pending.sort(key=lambda m: len(m.selected))  # quick ones first: more fit in the budget
    with (out / "mutation_check.log").open("w") as handle:
        log = {"file": handle, "lock": threading.Lock()}

        def one(mutant: Mutant) -> None:
            if time.monotonic() - started > args.time_budget:
                return  # stays "not run"
            run_mutant(mutant, args, tree, log)

        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            list(pool.map(one, pending))
    lines = summary(mutants, len(files))
    lines.append(f"wall time {time.monotonic() - started:.0f}s")
    print("\n".join(lines))
    (out / "mutation_check.json").write_text(
        json.dumps({"summary": lines, "mutants": [asdict(m) for m in mutants]}, indent=1)
    )
    return 1 if any(m.outcome == "survived" for m in mutants) else 0


if __name__ == "__main__":
    sys.exit(main())
