"""Mutation replay of recorded change impact against pytest-testmon (lab tool, not shipped).

    python -m tools.impact_replay run boltons --commits 30 --mutants 210 --out /tmp/replay
    python -m tools.impact_replay summary /tmp/replay/boltons.jsonl

For each of the newest first-parent commits ``c`` of a project that change the body of a
function in its source directories, in a scratch tree:

1. the tree at ``c``'s parent ``P``, with an overlay that registers every test file with the
   runner (a ``register_cpu_ci`` call and a ``__main__`` block appended, a catalog appended to
   ``pyproject.toml``), committed to a git repository of its own;
2. at ``P``: ``run_suite.py --record-deps`` (the record and each case's time), then
   ``pytest --testmon`` (testmon's database);
3. the tree moved to ``c`` (the overlay again), committed; at ``c``, the whole suite under
   coverage: which files pass, and which lines run;
4. mutants: one operator, constant or return value changed, on a line that runs at ``c``, in a
   function whose body ``c`` changed; for each, with ``c``'s changed files as the change:
   ``run_suite.py --dry-run --changed-files --deps-from`` gives our selection (whole files, or
   the node ids of the cases a change reaches), which runs with pytest; ``pytest --testmon`` (from ``P``'s database) selects and runs testmon's; if neither
   fails, the whole suite runs. A mutant is killed when a file that passed at ``c`` fails (or a
   run times out); a miss is a mutant the whole suite kills and a selection does not (its
   failing files are run again to rule out flakiness).

Each mutant is one JSON line in ``<out>/<project>.jsonl``: commit, file, line, operator, our
and testmon's selection shares of the case time at ``P`` (and ours of the files' wall time),
who killed it. ``summary`` prints the table of docs/change-impact.md.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNNER = REPO / "run_suite.py"
PLUGIN = REPO / "ci_runner" / "execution" / "record_child.py"
SUITE = "replay"


@dataclass(frozen=True)
class Project:
    """A code base to replay: where its history is and how its tests are laid out."""

    name: str
    git_dir: str
    rev: str
    registered_dir: str
    test_globs: tuple[str, ...]
    sources: tuple[str, ...]  # directories whose functions get mutants
    overlay_tests: bool = True  # register the test files (False: they already are)
    catalog: str = ""  # text appended to pyproject.toml
    exclude: tuple[str, ...] = ()  # test files left out of the suite (removed from the tree)
    skip_mutant_files: tuple[str, ...] = ()


SELF_SUBSET_EXCLUDE = ()  # filled from the commit's tree: see _self_catalog

PROJECTS = {
    "boltons": Project(
        "boltons",
        "/work/.mirror/mahmoud+boltons/repo",
        "HEAD",
        "tests",
        ("tests/test_*.py",),
        ("boltons",),
    ),
    "toolz": Project(
        "toolz",
        "/work/.mirror/pytoolz+toolz/repo",
        "HEAD",
        "toolz",
        ("toolz/tests/test_*.py", "toolz/sandbox/tests/test_*.py"),
        ("toolz", "tlz"),
        skip_mutant_files=("toolz/tests/", "toolz/sandbox/tests/"),
    ),
    "marshmallow": Project(
        "marshmallow",
        "/work/.mirror/marshmallow-code+marshmallow/repo",
        "HEAD",
        "tests",
        ("tests/test_*.py",),
        ("src",),
        catalog='[tool.ci-runner.change-impact]\npython-roots = ["src"]\n',
        # a mypy input, not a test; the package marker (the runner collects no package)
        exclude=("tests/mypy_test_cases/test_validation_error.py", "tests/__init__.py"),
    ),
    "gpu-kernel-ci": Project(
        "gpu-kernel-ci",
        "/work/main/.git",
        "main",
        "registered",
        ("registered/ci_runner/test_*.py",),
        ("ci_runner", "cpp_includes"),
        overlay_tests=False,
    ),
}


def sh(
    args: list[str],
    cwd: Path | None = None,
    timeout: float | None = None,
    env=None,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=env, check=check)  # fmt: skip


def git(git_dir: str, *args: str) -> str:
    return sh(["git", "--git-dir", git_dir, *args]).stdout


def local_git(work: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "r", "GIT_AUTHOR_EMAIL": "r@r", "GIT_COMMITTER_NAME": "r",
           "GIT_COMMITTER_EMAIL": "r@r", "GIT_CONFIG_GLOBAL": os.devnull}  # fmt: skip
    return sh(["git", "-C", str(work), *args], env=env).stdout


# ----------------------------------------------------------------------------- the trees


OVERLAY_MARK = "# --- impact replay overlay ---"


def overlay(work: Path, project: Project) -> list[str]:
    """Register the test files and append the catalog; returns the test files."""
    tests = sorted(
        str(p.relative_to(work)) for g in project.test_globs for p in work.glob(g) if p.is_file()
    )
    tests = [t for t in tests if t not in project.exclude]
    for left_out in project.exclude:  # the runner collects every test_*.py: remove it
        (work / left_out).unlink(missing_ok=True)
    if project.overlay_tests:
        for test in tests:
            path = work / test
            text = path.read_text(encoding="utf-8")
            if OVERLAY_MARK in text:
                continue
            path.write_text(
                text.rstrip("\n")
                + f"\n\n\n{OVERLAY_MARK}\nfrom ci_runner import register_cpu_ci\n\n"
                f'register_cpu_ci(est_time=5, suite="{SUITE}")\n\n'
                'if __name__ == "__main__":\n    import sys as _sys\n\n    import pytest as _pytest\n\n'
                '    _sys.exit(_pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))\n',
                encoding="utf-8",
            )
        pyproject = work / "pyproject.toml"
        text = pyproject.read_text(encoding="utf-8") if pyproject.exists() else ""
        if OVERLAY_MARK not in text:
            pyproject.write_text(
                text + f"\n{OVERLAY_MARK}\n[tool.ci-runner]\nregistered-dir = "
                f'"{project.registered_dir}"\n{project.catalog}\n[[tool.ci-runner.suites]]\n'
                f'name = "{SUITE}"\nhw = "cpu"\ngpus-per-file = 0\ntimeout-per-file = 300\n',
                encoding="utf-8",
            )
    else:
        tests = _self_overlay(work, tests)
    return tests


SELF_MAX_EST = 3.0


def _self_overlay(work: Path, tests: list[str]) -> list[str]:
    """This repository: the CPU files of est_time <= 4 s run as the suite ``replay``; the
    runner's own code is not run-everything (the harness runs from an unchanged copy)."""
    import re

    chosen = []
    for test in tests:
        path = work / test
        text = path.read_text(encoding="utf-8")
        match = re.search(r'register_cpu_ci\(est_time=([\d.]+), suite="base-a-test-cpu"\)', text)
        if match and float(match.group(1)) <= SELF_MAX_EST and "test_docs" not in test:
            path.write_text(
                text.replace(
                    match.group(0), f'register_cpu_ci(est_time={match.group(1)}, suite="{SUITE}")'
                ),
                encoding="utf-8",
            )
            chosen.append(test)
    pyproject = work / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    if OVERLAY_MARK not in text:
        text = re.sub(r"run-everything = \[[^\]]*\]", 'run-everything = [".ci/**"]', text)
        text += (f"\n{OVERLAY_MARK}\n[[tool.ci-runner.suites]]\nname = \"{SUITE}\"\nhw = \"cpu\"\n"
                 "gpus-per-file = 0\ntimeout-per-file = 300\n")  # fmt: skip
        pyproject.write_text(text, encoding="utf-8")
    # The recording plugin is the harness's (coverage imports it by name, from the tree first):
    # the tree's own, older one would record by older rules.
    shutil.copy(PLUGIN, work / "ci_runner" / "execution" / "record_child.py")
    return chosen


def extract(project: Project, work: Path, commit: str) -> None:
    """The files of ``commit`` into ``work`` as a checkout has them (``git archive`` would apply
    ``export-subst`` and write the commit into files such as versioneer's ``_version.py``)."""
    index = work.parent / f".{work.name}.index"
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    base = ["git", "--git-dir", project.git_dir, "--work-tree", str(work)]
    sh([*base, "read-tree", commit], env=env)
    sh([*base, "checkout-index", "-a", "-f"], env=env)
    index.unlink()


def checkout(project: Project, work: Path, commit: str) -> list[str]:
    """A fresh tree at ``commit`` with the overlay, committed; returns the test files."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    extract(project, work, commit)
    tests = overlay(work, project)
    local_git(work, "init", "-q", "-b", "main")
    (work / ".git" / "info" / "exclude").write_text(
        "__pycache__/\n.testmondata*\n*.pyc\n.pytest_cache/\n"
    )
    local_git(work, "add", "-A")
    local_git(work, "commit", "-q", "-m", f"parent {commit}")
    return tests


def move_to(project: Project, work: Path, commit: str) -> tuple[list[str], list[str]]:
    """Move the tree to ``commit`` (its own diff against its parent), overlay, commit; returns
    (test files, changed files)."""
    status = git(project.git_dir, "diff-tree", "-r", "--no-commit-id", "--name-status",
                 "--no-renames", f"{commit}^", commit)  # fmt: skip
    changed = []
    for line in status.splitlines():
        code, path = line.split("\t", 1)
        changed.append(path)
        if code == "D" and (work / path).exists():
            (work / path).unlink()
    extract(project, work, commit)
    tests = overlay(work, project)
    local_git(work, "add", "-A")
    local_git(work, "commit", "-q", "--allow-empty", "-m", f"commit {commit}")
    return tests, changed


# ----------------------------------------------------------------------------- running


def child_env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_")}
    src = [str(work / "src")] if (work / "src").is_dir() else []  # a src layout's packages
    env["PYTHONPATH"] = os.pathsep.join([*src, str(work), str(REPO)])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def cases_of(junit: Path) -> dict[tuple[str, str], tuple[str, float, str]]:
    """(classname, name) -> (outcome, seconds, file) of a JUnit file."""
    found: dict[tuple[str, str], tuple[str, float, str]] = {}
    if not junit.exists():
        return found
    try:
        tree = ET.parse(junit)
    except ET.ParseError:
        return found
    for suite in tree.iter("testsuite"):
        suite_name = suite.get("name", "")
        for case in suite.iter("testcase"):
            outcome = "passed"
            for child in case:
                if child.tag in ("failure", "error"):
                    outcome = "failed"
                elif child.tag == "skipped" and outcome == "passed":
                    outcome = "skipped"
            file = case.get("file") or (suite_name if suite_name.endswith(".py") else "")
            key = (case.get("classname", ""), case.get("name", ""))
            found[key] = (outcome, float(case.get("time") or 0), file)
    return found


def file_of(classname: str, tests: list[str]) -> str | None:
    """The test file of a pytest classname (``tests.test_x.TestY`` -> ``tests/test_x.py``)."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        candidate = "/".join(parts[:end]) + ".py"
        if candidate in tests:
            return candidate
    return None


def pytest_run(
    work: Path, files: list[str], junit: Path, timeout: float, extra: tuple[str, ...] = ()
) -> tuple[dict, bool]:
    """Run pytest on ``files``; (cases, timed out)."""
    if junit.exists():
        junit.unlink()
    plugins = () if "--testmon" in extra else ("-p", "no:cacheprovider")  # testmon needs it
    args = [sys.executable, "-m", "pytest", "-q", *plugins, "-o", "junit_family=xunit1",
            f"--junitxml={junit}", *extra, *files]  # fmt: skip
    try:
        sh(args, cwd=work, timeout=timeout, env=child_env(work), check=False)
    except subprocess.TimeoutExpired:
        return cases_of(junit), True
    return cases_of(junit), False


def failing_files(cases: dict, tests: list[str], passing: set[str]) -> set[str]:
    return {
        f for (cls, _), (outcome, _, file) in cases.items()
        if outcome == "failed" and (f := (file if file in tests else file_of(cls, tests))) in passing
    }  # fmt: skip


@dataclass
class Baseline:
    """What the parent and the commit give: the record, testmon's database, times, passes."""

    record: Path
    testmon_db: Path
    case_time: dict[tuple[str, str], float] = field(default_factory=dict)
    case_file: dict[tuple[str, str], str] = field(default_factory=dict)
    file_wall: dict[str, float] = field(default_factory=dict)
    passing: set[str] = field(default_factory=set)  # files that pass at c
    executed: dict[str, set[int]] = field(default_factory=dict)  # lines run at c
    suite_seconds: float = 0.0


def at_parent(work: Path, tests: list[str], scratch: Path, base: Baseline) -> None:
    """The recording run and testmon's database at the parent."""
    junit, timings = scratch / "record.xml", scratch / "timings.jsonl"
    for stale in (junit, timings):
        if stale.exists():
            stale.unlink()
    if base.record.exists():
        shutil.rmtree(base.record)
    sh([sys.executable, str(RUNNER), "--root", str(work), "--hw", "cpu", "--suite", SUITE,
        "--continue-on-error", "--record-deps", str(base.record), "--junit-xml", str(junit),
        "--timings-out", str(timings)], env=child_env(work), check=False, timeout=3600)  # fmt: skip
    for key, (_, seconds, file) in cases_of(junit).items():
        base.case_time[key] = seconds
        base.case_file[key] = file if file in tests else (file_of(key[0], tests) or file)
    if timings.exists():
        for line in timings.read_text().splitlines():
            row = json.loads(line)
            if "path" in row and "elapsed" in row:
                base.file_wall[row["path"]] = float(row["elapsed"])
    for leftover in work.glob(".testmondata*"):
        leftover.unlink()
    sh([sys.executable, "-m", "pytest", "-q", "--testmon", *tests],
       cwd=work, env=child_env(work), check=False, timeout=3600)  # fmt: skip
    for old in base.testmon_db.parent.glob("testmondata*"):
        old.unlink()
    for saved in work.glob(".testmondata*"):  # the database and its write-ahead log
        shutil.copy(saved, base.testmon_db.parent / saved.name[1:])


def at_commit(work: Path, tests: list[str], scratch: Path, base: Baseline) -> None:
    """The whole suite at the commit, under coverage: passing files and executed lines."""
    data = scratch / "cov.data"
    junit = scratch / "commit.xml"
    started = time.monotonic()
    sh([sys.executable, "-m", "coverage", "run", f"--data-file={data}", f"--source={work}",
        "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit1",
        f"--junitxml={junit}", *tests], cwd=work, env=child_env(work), check=False,
       timeout=3600)  # fmt: skip
    base.suite_seconds = time.monotonic() - started
    cases = cases_of(junit)
    failed = failing_files(cases, tests, set(tests))
    seen = {
        file if file in tests else file_of(cls, tests) for (cls, _), (_, _, file) in cases.items()
    }
    base.passing = {t for t in tests if t in seen and t not in failed}
    from coverage import CoverageData

    cov = CoverageData(basename=str(data))
    cov.read()
    for measured in cov.measured_files():
        try:
            relative = str(Path(measured).relative_to(work))
        except ValueError:
            continue
        base.executed[relative] = set(cov.lines(measured) or ())


# ----------------------------------------------------------------------------- mutants


@dataclass(frozen=True)
class Mutant:
    file: str
    line: int
    operator: str
    before: str  # the whole line
    after: str


_BINOPS = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "+"), ast.Div: ("/", "*"),
           ast.FloorDiv: ("//", "*"), ast.Mod: ("%", "//"), ast.BitAnd: ("&", "|"),
           ast.BitOr: ("|", "&"), ast.LShift: ("<<", ">>"), ast.RShift: (">>", "<<")}  # fmt: skip
_CMPOPS = {ast.Eq: ("==", "!="), ast.NotEq: ("!=", "=="), ast.Lt: ("<", "<="),
           ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">"),
           ast.Is: (" is ", " is not "), ast.IsNot: (" is not ", " is "),
           ast.In: (" in ", " not in "), ast.NotIn: (" not in ", " in ")}  # fmt: skip


def changed_lines(project: Project, commit: str, path: str) -> set[int]:
    diff = git(project.git_dir, "diff", "-U0", f"{commit}^", commit, "--", path)
    lines: set[int] = set()
    for row in diff.splitlines():
        if row.startswith("@@"):
            new = row.split("+", 1)[1].split(" ", 1)[0]
            start, _, count = new.partition(",")
            count_n = int(count) if count else 1
            lines.update(range(int(start), int(start) + max(count_n, 1)))
    return lines


def _replace_between(
    lines: list[str], node_a: ast.AST, node_b: ast.AST, old: str, new: str
) -> tuple[int, str] | None:
    """Replace the first ``old`` between the end of ``node_a`` and the start of ``node_b`` when
    both are on one line."""
    if node_a.end_lineno != node_b.lineno:
        return None
    line = lines[node_b.lineno - 1].encode()
    start, end = node_a.end_col_offset, node_b.col_offset
    segment = line[start:end].decode(errors="replace")
    if old not in segment:
        return None
    mutated = line[:start].decode() + segment.replace(old, new, 1) + line[end:].decode()
    return node_b.lineno, mutated


def mutants_of(source: str, path: str, touched: set[int], executed: set[int]) -> list[Mutant]:
    """Every mutant on an executed line of a function whose body holds a touched line."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    lines = source.splitlines()
    functions = [
        n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        and touched & set(range(n.body[0].lineno, (n.end_lineno or 0) + 1))
    ]  # fmt: skip
    found: dict[tuple[int, str], Mutant] = {}

    def add(line: int, operator: str, after: str) -> None:
        before = lines[line - 1]
        if after != before and line in executed:
            found.setdefault((line, after), Mutant(path, line, operator, before, after))

    for function in functions:
        body = [n for stmt in function.body for n in ast.walk(stmt)]
        docstring = function.body[0] if isinstance(function.body[0], ast.Expr) else None
        for node in body:
            if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
                old, new = _BINOPS[type(node.op)]
                hit = _replace_between(lines, node.left, node.right, old, new)
                if hit:
                    add(hit[0], f"{old.strip()} to {new.strip()}", hit[1])
            elif (
                isinstance(node, ast.Compare)
                and len(node.ops) == 1
                and type(node.ops[0]) in _CMPOPS
            ):
                old, new = _CMPOPS[type(node.ops[0])]
                hit = _replace_between(lines, node.left, node.comparators[0], old, new)
                if hit:
                    add(hit[0], f"{old.strip()} to {new.strip()}", hit[1])
            elif isinstance(node, ast.BoolOp) and len(node.values) >= 2:
                old, new = (" and ", " or ") if isinstance(node.op, ast.And) else (" or ", " and ")
                hit = _replace_between(lines, node.values[0], node.values[1], old, new)
                if hit:
                    add(hit[0], f"{old.strip()} to {new.strip()}", hit[1])
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                line = lines[node.lineno - 1].encode()
                segment = line[node.col_offset : node.operand.col_offset].decode(errors="replace")
                if node.lineno == node.operand.lineno and segment.strip() == "not":
                    add(
                        node.lineno,
                        "drop not",
                        (line[: node.col_offset] + line[node.operand.col_offset :]).decode(),
                    )
            elif isinstance(node, ast.Constant) and node is not getattr(docstring, "value", None):
                if node.lineno != node.end_lineno:
                    continue
                line = lines[node.lineno - 1].encode()
                text = line[node.col_offset : node.end_col_offset].decode(errors="replace")
                replacement = None
                if node.value is True and text == "True":
                    replacement = "False"
                elif node.value is False and text == "False":
                    replacement = "True"
                elif type(node.value) is int and text.isdigit():
                    replacement = str(node.value + 1)
                if replacement is not None:
                    mutated = (
                        line[: node.col_offset].decode()
                        + replacement
                        + line[node.end_col_offset :].decode()
                    )
                    add(node.lineno, f"{text} to {replacement}", mutated)
            elif isinstance(node, ast.Return) and node.value is not None:
                value = node.value
                if value.lineno == value.end_lineno == node.lineno and not (
                    isinstance(value, ast.Constant) and value.value is None
                ):
                    line = lines[node.lineno - 1].encode()
                    mutated = (
                        line[: value.col_offset].decode()
                        + "None"
                        + line[value.end_col_offset :].decode()
                    )
                    add(node.lineno, "return None", mutated)
    return list(found.values())


def apply(work: Path, mutant: Mutant) -> str:
    path = work / mutant.file
    original = path.read_text(encoding="utf-8")
    lines = original.split("\n")
    assert lines[mutant.line - 1] == mutant.before, (mutant.file, mutant.line)
    lines[mutant.line - 1] = mutant.after
    path.write_text("\n".join(lines), encoding="utf-8")
    return original


# ----------------------------------------------------------------------------- one mutant


class Selector:
    """Our selection, in-process through the library API (the CLI's ``--deps-from`` path)."""

    def __init__(self, work: Path, record: Path) -> None:
        from ci_runner.catalog import load_catalog
        from ci_runner.collect import collect
        from ci_runner.impact import read_records
        from ci_runner.select import request_from_text, select_files

        self.work = work
        self.catalog = load_catalog(work)
        collection = collect(self.catalog)
        request = request_from_text(self.catalog, "cpu", SUITE, False)
        self.selection = select_files(collection.registrations, self.catalog, request, False)
        self.records = read_records(record)

    def select(
        self, changed: list[str], scratch: Path
    ) -> tuple[dict[str, tuple[str, ...]], list[str]]:
        """Kept file -> the node ids of its cases to run (``()``: every case); the notes."""
        from ci_runner.impact import changes_from_list, select_with_records

        listing = scratch / "changed.txt"
        listing.write_text("\n".join(changed) + "\n")
        change_set = changes_from_list(self.work, str(listing))
        impact = select_with_records(self.selection, self.catalog, change_set, self.records)
        whole = {
            path: kept.whole or f"keeps every case ({len(kept.cases)} of {kept.total})"
            for path, kept in impact.cases.items()
            if not kept.cases or len(kept.cases) == kept.total
        }
        notes = [*impact.record_lines, *(f"{p}: every case: {w}" for p, w in whole.items())]
        return {f.path: f.cases for f in impact.selection.files}, notes


def junit_key(case_id: str) -> tuple[str, str]:
    """(classname, name) of a case id as the runner's JUnit writes it (and pytest's xunit1)."""
    path, _, rest = case_id.partition("::")
    parts = rest.split("::")
    return ".".join([path.removesuffix(".py").replace("/", "."), *parts[:-1]]), parts[-1]


def replay_mutant(
    work: Path,
    tests: list[str],
    changed: list[str],
    mutant: Mutant,
    base: Baseline,
    scratch: Path,
    selector: Selector,
) -> dict:
    timeout = max(60.0, 6 * base.suite_seconds)
    passing = sorted(base.passing)
    original = apply(work, mutant)
    try:
        started = time.monotonic()
        ours, notes = selector.select(changed, scratch)
        selection_seconds = time.monotonic() - started
        for stale in work.glob(".testmondata*"):
            stale.unlink()
        for saved in scratch.glob("testmondata*"):
            shutil.copy(saved, work / ("." + saved.name))
        tm_cases, tm_timeout = pytest_run(
            work, passing, scratch / "testmon.xml", timeout, ("--testmon",)
        )
        tm_kill = tm_timeout or bool(failing_files(tm_cases, tests, base.passing))
        run_ours = [p for p in ours if p in base.passing]
        run_args = [arg for p in run_ours for arg in (ours[p] or (p,))]  # node ids or the file
        ours_cases, ours_timeout = (pytest_run(work, run_args, scratch / "ours.xml", timeout, ("-x",))
                                    if run_ours else ({}, False))  # fmt: skip
        ours_kill = ours_timeout or bool(failing_files(ours_cases, tests, base.passing))
        full_kill, killers, confirmed = ours_kill or tm_kill, [], True
        rest = [p for p in passing if p not in set(run_ours) or ours[p]]  # a part ran: all again
        if tm_kill and not ours_kill:  # a miss of ours, unless testmon's failures do not repeat
            killers = sorted(failing_files(tm_cases, tests, base.passing))
            again, _ = pytest_run(work, killers, scratch / "again.xml", timeout)
            confirmed = tm_timeout or bool(failing_files(again, tests, base.passing))
        elif not ours_kill and rest:
            rest_cases, rest_timeout = pytest_run(
                work, rest, scratch / "rest.xml", timeout, ("-x",)
            )
            killers = sorted(failing_files(rest_cases, tests, base.passing))
            full_kill = full_kill or rest_timeout or bool(killers)
            if killers:  # a miss of ours, unless the failure does not repeat
                again, _ = pytest_run(work, killers, scratch / "again.xml", timeout)
                confirmed = bool(failing_files(again, tests, base.passing))
    finally:
        (work / mutant.file).write_text(original, encoding="utf-8")
        for leftover in work.glob(".testmondata*"):
            leftover.unlink()
    total = sum(base.case_time.values()) or 1.0
    whole = {p for p, cases in ours.items() if not cases}
    some = {junit_key(case) for cases in ours.values() for case in cases}
    ours_share = (
        sum(t for k, t in base.case_time.items() if base.case_file.get(k) in whole or k in some)
        / total
    )
    tm_share = sum(base.case_time.get(k, 0.0) for k in tm_cases) / total
    wall_total = sum(base.file_wall.values()) or 1.0
    return {
        "file": mutant.file, "line": mutant.line, "operator": mutant.operator,
        "after": mutant.after.strip()[:160],
        "ours_files": len(ours), "ours_partial": sum(1 for c in ours.values() if c),
        "ours_cases": sum(len(c) for c in ours.values()), "tests": len(tests),
        "ours_share": round(ours_share, 4),
        "ours_wall_share": round(sum(base.file_wall.get(p, 0.0) for p in ours) / wall_total, 4),
        "testmon_share": round(tm_share, 4), "testmon_cases": len(tm_cases),
        "ours_kill": ours_kill, "testmon_kill": tm_kill, "full_kill": full_kill,
        "confirmed": confirmed, "killers": killers,
        "ours_miss": full_kill and confirmed and not ours_kill,
        "testmon_miss": full_kill and confirmed and not tm_kill,
        "records_used": notes,
        "selection_seconds": round(selection_seconds, 2),
    }  # fmt: skip


# ----------------------------------------------------------------------------- driver


def candidate_commits(project: Project, limit: int) -> list[str]:
    commits = git(project.git_dir, "rev-list", "--first-parent", "--no-merges", project.rev,
                  "--max-count=400").split()  # fmt: skip
    found = []
    for commit in commits:
        try:
            files = git(project.git_dir, "diff-tree", "-r", "--no-commit-id", "--name-only",
                        "--diff-filter=M", f"{commit}^", commit).split()  # fmt: skip
        except subprocess.CalledProcessError:  # the parent is not in the mirror
            continue
        if any(_mutable(project, f) for f in files):
            found.append(commit)
        if len(found) >= limit:
            break
    return found


def _mutable(project: Project, path: str) -> bool:
    return (path.endswith(".py") and path.split("/")[0] in project.sources
            and not any(path.startswith(s) for s in project.skip_mutant_files)
            and "/tests/" not in path and not path.split("/")[-1].startswith("test_"))  # fmt: skip


def run(args: argparse.Namespace) -> int:
    project = PROJECTS[args.project]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    scratch = out / f"{project.name}-scratch"
    scratch.mkdir(exist_ok=True)
    work = out / f"{project.name}-work"
    results = out / f"{project.name}.jsonl"
    done_commits = set()
    if results.exists():
        done_commits = {
            json.loads(line)["commit"] for line in results.read_text().splitlines() if line
        }
    rng = random.Random(args.seed)
    commits = candidate_commits(project, args.commits + args.spare)
    total = sum(1 for _ in results.read_text().splitlines()) if results.exists() else 0
    replayed = len(done_commits)
    per_commit = max(1, -(-args.mutants // args.commits))
    for commit in commits:
        if replayed >= args.commits and total >= args.mutants:
            break
        if commit in done_commits:
            continue
        started = time.monotonic()
        print(f"{commit[:10]}: replaying", flush=True)
        base = Baseline(scratch / "record", scratch / "testmondata")
        tests = checkout(project, work, f"{commit}^")
        at_parent(work, tests, scratch, base)
        passed = sum(1 for p in (base.record / "tests").glob("*.json")
                     if json.loads(p.read_text())["status"] == "passed")  # fmt: skip
        if passed * 2 < len(tests):
            print(f"{commit[:10]}: {passed} of {len(tests)} files pass at the parent here "
                  "(an older Python?); skipped", flush=True)  # fmt: skip
            continue
        tests_c, changed = move_to(project, work, commit)
        at_commit(work, tests_c, scratch, base)
        candidates: list[Mutant] = []
        for path in changed:
            if not _mutable(project, path) or not (work / path).exists():
                continue
            source = (work / path).read_text(encoding="utf-8")
            candidates += mutants_of(source, path, changed_lines(project, commit, path),
                                     base.executed.get(path, set()))  # fmt: skip
        if not candidates or not base.passing:
            print(
                f"{commit[:10]}: no mutant on an executed line of a changed function; skipped",
                flush=True,
            )
            continue
        rng.shuffle(candidates)
        chosen = candidates[:per_commit]
        replayed += 1
        selector = Selector(work, base.record)
        for mutant in chosen:
            row = replay_mutant(work, tests_c, changed, mutant, base, scratch, selector)
            row.update(
                commit=commit, changed=len(changed), suite_seconds=round(base.suite_seconds, 2)
            )
            with results.open("a") as handle:
                handle.write(json.dumps(row) + "\n")
            total += 1
        print(f"{commit[:10]}: {len(chosen)} mutants in {time.monotonic() - started:.0f}s "
              f"({replayed} commits, {total} mutants)", flush=True)  # fmt: skip
    return 0


def summary(args: argparse.Namespace) -> int:
    print(
        "| code base | commits | mutants | killed by the whole suite | misses: ours / testmon | "
        "median share of case time: ours / testmon | mean: ours / testmon | "
        "kept files run in part |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    misses = []
    for name in args.results:
        rows = [json.loads(line) for line in Path(name).read_text().splitlines() if line]
        killed = [r for r in rows if r["full_kill"] and r["confirmed"]]
        ours = [r["ours_share"] for r in rows]
        theirs = [r["testmon_share"] for r in rows]
        print(f"| {Path(name).stem} | {len({r['commit'] for r in rows})} | {len(rows)} | "
              f"{len(killed)} | {sum(r['ours_miss'] for r in rows)} / "
              f"{sum(r['testmon_miss'] for r in rows)} | {statistics.median(ours):.1%} / "
              f"{statistics.median(theirs):.1%} | {statistics.fmean(ours):.1%} / "
              f"{statistics.fmean(theirs):.1%} | "
              f"{sum(r.get('ours_partial', 0) for r in rows)} of "
              f"{sum(r['ours_files'] for r in rows)} |")  # fmt: skip
        misses += [(Path(name).stem, r) for r in rows if r["ours_miss"] or r["testmon_miss"]]
    for project, r in misses:
        print(f"miss: {project} {r['commit'][:10]} {r['file']}:{r['line']} {r['operator']}: "
              f"ours {'missed' if r['ours_miss'] else 'ok'}, testmon "
              f"{'missed' if r['testmon_miss'] else 'ok'}; killed by {r['killers']}")  # fmt: skip
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    go = commands.add_parser("run")
    go.add_argument("project", choices=sorted(PROJECTS))
    go.add_argument("--commits", type=int, default=30)
    go.add_argument("--spare", type=int, default=40, help="more candidate commits to try")
    go.add_argument("--mutants", type=int, default=210)
    go.add_argument("--seed", type=int, default=46)
    go.add_argument("--out", default="/tmp/impact-replay")
    show = commands.add_parser("summary")
    show.add_argument("results", nargs="+")
    args = parser.parse_args()
    return run(args) if args.command == "run" else summary(args)


if __name__ == "__main__":
    sys.exit(main())
