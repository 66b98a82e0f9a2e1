"""Mutation replay of recorded change impact against pytest-testmon (lab tool, not shipped).

    python -m tools.impact_replay run boltons --commits 30 --mutants 210 --out /tmp/replay
    python -m tools.impact_replay rejudge /tmp/replay boltons
    python -m tools.impact_replay rerecord /tmp/replay boltons --to /tmp/again
    python -m tools.impact_replay rejudge /tmp/replay boltons --rerecorded /tmp/again
    python -m tools.impact_replay summary /tmp/replay/boltons.jsonl

For each of the newest first-parent commits ``c`` of a project that change the body of a
function in its source directories, in a scratch tree whose git repository keeps every replayed
commit (tags ``parent-<c>`` and ``commit-<c>``):

1. the tree at ``c``'s parent ``P`` and at ``c``, each with an overlay that registers every test
   file with the runner (a ``register_cpu_ci`` call and a ``__main__`` block appended, a catalog
   appended to ``pyproject.toml``), committed;
2. at ``c``: the whole suite under coverage: which files pass, which lines run; mutants: one
   operator, constant or return value changed, on a line that runs, in a function whose body
   ``c`` changed (none: the commit is skipped before anything else runs);
3. at ``P``: ``run_suite.py --record-deps`` (the record, kept per commit, and each case's time),
   then ``pytest --testmon`` (testmon's database);
4. at ``c``, for each mutant: our selection (the library call of ``--dry-run --changed-files
   --deps-from``, ``c``'s changed files as the change), testmon's (``pytest --testmon
   --collect-only`` prints the node ids it would run, from ``P``'s database) and one run of the
   whole suite (its failing files run once more: a failure that does not repeat is flaky, not
   the mutant's).

The kill data does not depend on any selection: a mutant is killed when the whole suite fails a
case or file that passed at ``c``, and a selection misses it when none of its cases is among
those failures. ``rejudge`` computes our selection again with the current checkout's code for
every stored mutant and rewrites the verdicts and shares; ``rerecord`` makes the parents'
records again with this checkout's recorder (into a copy of the scratch repository, where the
harness's recording plugin is this checkout's at both ``P`` and ``c``), which ``rejudge
--rerecorded`` then uses; ``summary`` prints the table of docs/change-impact.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tools.impact_replay_judge import (
    TABLE_HEAD,
    case_file,
    cases_of,
    collected_ids,
    failures_of,
    judge,
    miss_lines,
    read_rows,
    table_row,
)
from tools.impact_replay_mutants import Mutant, apply, mutants_of, touched_lines

REPO = Path(__file__).resolve().parents[1]
RUNNER = REPO / "run_suite.py"
# The recorder's modules the tested processes import (the start-up hook's, and its code recorder)
RECORDER_MODULES = ("record_child.py", "executed_code.py")
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
    catalog: str = ""  # text appended to the [tool.ci-runner] table of pyproject.toml
    exclude: tuple[str, ...] = ()  # files or directories removed from the tree
    skip_mutant_files: tuple[str, ...] = ()
    rewrites: tuple[tuple[str, str, str], ...] = ()  # (file, old, new) text replaced
    first_parent: bool = True  # only the main line's own commits (False: its branches' too)


PROJECTS = {
    "boltons": Project(
        "boltons",
        "/work/.mirror/mahmoud+boltons/repo",
        "HEAD",
        "tests",
        ("tests/test_*.py",),
        ("boltons",),
    ),
    "packaging": Project(
        "packaging",
        "/work/.mirror/pypa+packaging/repo",
        "HEAD",
        "tests",
        ("tests/test_[!v]*.py",),
        ("src",),
        # test_version.py is 51,523 of the 62,435 cases (a cross product of versions, 95 of the
        # suite's 100 s here): it stays in the tree (test_specifiers imports its VERSIONS) but
        # not in the suite. The property tests are opt-in upstream (-m "not property").
        catalog='file-patterns = ["test_[!v]*.py"]\n'
        '[tool.ci-runner.change-impact]\npython-roots = ["src"]\n',
        exclude=("tests/__init__.py", "tests/property"),
        rewrites=(
            ("tests/test_specifiers.py", "from .test_version import", "from test_version import"),
        ),
    ),
    "cachetools": Project(
        "cachetools",
        "/work/.mirror/tkem+cachetools/repo",
        "HEAD",
        "tests",
        ("tests/test_*.py",),
        ("src",),
        # its test files import their shared mixin from the package tests/ (``from . import``):
        # pytest imports them as tests.test_x, a plain ``python tests/test_x.py`` cannot
        catalog='[tool.ci-runner.execution]\nlauncher = "pytest"\n'
        '[tool.ci-runner.change-impact]\npython-roots = ["src"]\n',
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
        # most of its history is on merged branches: the main line itself is mostly merges
        first_parent=False,
        # the overlay puts the harness's copy there: the commit's own version is not in the tree
        skip_mutant_files=("ci_runner/execution/record_child.py",),
    ),
}


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix.rstrip("/") + "/")


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
    tests = [t for t in tests if not any(_under(t, x) for x in project.exclude)]
    for left_out in project.exclude:  # the runner collects every test_*.py: remove it
        if (work / left_out).is_dir():
            shutil.rmtree(work / left_out)
        else:
            (work / left_out).unlink(missing_ok=True)
    for path, old, new in project.rewrites:
        if (work / path).exists():
            text = (work / path).read_text(encoding="utf-8")
            (work / path).write_text(text.replace(old, new), encoding="utf-8")
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
    # The recorder is the harness's (the start-up hook imports it by name, from the tree first):
    # the tree's own, older one would record by older rules.
    copy_recorder(work)
    return chosen


def copy_recorder(work: Path) -> None:
    """Put the harness's recorder modules into the scratch tree of this repository."""
    for name in RECORDER_MODULES:
        shutil.copy(
            REPO / "ci_runner" / "execution" / name, work / "ci_runner" / "execution" / name
        )


def extract(project: Project, work: Path, commit: str) -> None:
    """The files of ``commit`` into ``work`` as a checkout has them (``git archive`` would apply
    ``export-subst`` and write the commit into files such as versioneer's ``_version.py``)."""
    index = work.parent / f".{work.name}.index"
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    base = ["git", "--git-dir", project.git_dir, "--work-tree", str(work)]
    sh([*base, "read-tree", commit], env=env)
    sh([*base, "checkout-index", "-a", "-f"], env=env)
    index.unlink()


def init_repo(work: Path) -> None:
    """The scratch tree's own git repository (kept: it holds every replayed commit)."""
    if (work / ".git").is_dir():
        return
    work.mkdir(parents=True, exist_ok=True)
    local_git(work, "init", "-q", "-b", "main")
    (work / ".git" / "info" / "exclude").write_text(
        "__pycache__/\n.testmondata*\n*.pyc\n.pytest_cache/\n"
    )


def snapshot(project: Project, work: Path, commit: str, tag: str) -> list[str]:
    """The tree at ``commit`` with the overlay, committed and tagged ``tag``; the test files."""
    for entry in work.iterdir():
        if entry.name != ".git":
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    extract(project, work, commit)
    tests = overlay(work, project)
    local_git(work, "add", "-A")
    local_git(work, "commit", "-q", "--allow-empty", "-m", tag)
    local_git(work, "tag", "-f", tag)
    return tests


def switch(work: Path, tag: str) -> None:
    """The scratch tree at ``tag``, with nothing else in it."""
    local_git(work, "checkout", "-q", "-f", tag)
    local_git(work, "clean", "-q", "-ffdx")


def changed_files(project: Project, commit: str) -> list[str]:
    status = git(project.git_dir, "diff-tree", "-r", "--no-commit-id", "--name-only",
                 "--no-renames", f"{commit}^", commit)  # fmt: skip
    return status.split("\n")[:-1]


# ----------------------------------------------------------------------------- running


def child_env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_")}
    src = [str(work / "src")] if (work / "src").is_dir() else []  # a src layout's packages
    env["PYTHONPATH"] = os.pathsep.join([*src, str(work), str(REPO)])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def pytest_run(
    work: Path, args: list[str], junit: Path, timeout: float, extra: tuple[str, ...] = ()
) -> tuple[dict, bool, int]:
    """Run pytest on ``args`` (files or node ids); (cases, timed out, exit status)."""
    if junit.exists():
        junit.unlink()
    plugins = () if "--testmon" in extra else ("-p", "no:cacheprovider")  # testmon needs it
    command = [sys.executable, "-m", "pytest", "-q", *plugins, "-o", "junit_family=xunit1",
               f"--junitxml={junit}", *extra, *args]  # fmt: skip
    try:
        done = sh(command, cwd=work, timeout=timeout, env=child_env(work), check=False)
    except subprocess.TimeoutExpired:
        return cases_of(junit), True, -1
    return cases_of(junit), False, done.returncode


def at_commit(
    work: Path, tests: list[str], measured: list[str], scratch: Path
) -> tuple[set[str], dict, float]:
    """The whole suite at the commit, under coverage of the ``measured`` files only (the
    mutants' candidates: the rest is not traced): (passing files, their lines run, seconds)."""
    data, junit = scratch / "cov.data", scratch / "commit.xml"
    for stale in (data, junit):
        stale.unlink(missing_ok=True)
    started = time.monotonic()
    env = {
        **child_env(work),
        "COVERAGE_CORE": "sysmon" if sys.version_info >= (3, 12) else "ctrace",
    }
    include = ",".join(str(work / path) for path in measured)
    sh([sys.executable, "-m", "coverage", "run", f"--data-file={data}", f"--include={include}",
        "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit1",
        f"--junitxml={junit}", *tests], cwd=work, env=env, check=False,
       timeout=3600)  # fmt: skip
    seconds = time.monotonic() - started
    cases = cases_of(junit)
    failed = {f for f, _, _ in failures_of(cases, tests, set(tests))}
    seen = {case_file(key, file, tests) for key, (_, _, file) in cases.items()}
    passing = {t for t in tests if t in seen and t not in failed}
    executed: dict[str, set[int]] = {}
    if data.exists():
        from coverage import CoverageData

        cov = CoverageData(basename=str(data))
        cov.read()
        for traced in cov.measured_files():
            try:
                relative = str(Path(traced).relative_to(work))
            except ValueError:
                continue
            executed[relative] = set(cov.lines(traced) or ())
    return passing, executed, seconds


def at_parent(work: Path, tests: list[str], record: Path, scratch: Path) -> dict:
    """The recording run (into ``record``) and testmon's database (into ``scratch``) at the
    parent; the case times and file wall times of the recording run."""
    junit, timings = scratch / "record.xml", scratch / "timings.jsonl"
    for stale in (junit, timings):
        stale.unlink(missing_ok=True)
    if record.exists():
        shutil.rmtree(record)
    started = time.monotonic()
    sh([sys.executable, str(RUNNER), "--root", str(work), "--hw", "cpu", "--suite", SUITE,
        "--continue-on-error", "--record-deps", str(record), "--junit-xml", str(junit),
        "--timings-out", str(timings)], env=child_env(work), check=False, timeout=7200)  # fmt: skip
    recorded = time.monotonic() - started
    case_time = [
        [key[0], key[1], seconds, case_file(key, file, tests) or file]
        for key, (_, seconds, file) in sorted(cases_of(junit).items())
    ]
    file_wall: dict[str, float] = {}
    if timings.exists():
        for line in timings.read_text().splitlines():
            row = json.loads(line)
            if "path" in row and "elapsed" in row:
                file_wall[row["path"]] = float(row["elapsed"])
    for leftover in work.glob(".testmondata*"):
        leftover.unlink()
    started = time.monotonic()
    sh([sys.executable, "-m", "pytest", "-q", "--testmon", *tests],
       cwd=work, env=child_env(work), check=False, timeout=7200)  # fmt: skip
    for old in scratch.glob("testmondata*"):
        old.unlink()
    for saved in work.glob(".testmondata*"):  # the database and its write-ahead log
        shutil.copy(saved, scratch / saved.name[1:])
    return {"case_time": case_time, "file_wall": file_wall, "record_seconds": round(recorded, 1),
            "testmon_seconds": round(time.monotonic() - started, 1)}  # fmt: skip


def testmon_selection(work: Path, passing: list[str], scratch: Path, timeout: float) -> list[str]:
    """The node ids testmon would run (``--collect-only`` with ``P``'s database). A file that
    fails to collect counts whole (its run would error), and so does every file when pytest
    cannot start at all (a mutant in code pytest imports itself: any run of it would fail)."""
    for stale in work.glob(".testmondata*"):
        stale.unlink()
    for saved in scratch.glob("testmondata*"):
        shutil.copy(saved, work / ("." + saved.name))
    try:
        done = sh([sys.executable, "-m", "pytest", "-q", "--testmon", "--collect-only", *passing],
                  cwd=work, env=child_env(work), check=False, timeout=timeout)  # fmt: skip
        output, status = done.stdout, done.returncode
    except subprocess.TimeoutExpired:
        output, status = "", -1
    finally:
        for leftover in work.glob(".testmondata*"):
            leftover.unlink()
    return collected_ids(output, status, passing)


def whole_suite(
    work: Path, tests: list[str], passing: list[str], scratch: Path, timeout: float
) -> tuple[list[list[str]], list[list[str]], str]:
    """One run of every file that passed at the commit: (failures, flaky failures, note). A
    run that times out is run file by file (a file that times out fails as a file); a pytest
    that exits with no JUnit (the mutant broke pytest's own import of the code) fails every
    file; the failing files run again and a failure that does not repeat is flaky."""
    cases, timed_out, status = pytest_run(work, passing, scratch / "whole.xml", timeout)
    note = ""
    if timed_out:
        note = "timed out: run file by file"
        failures = []
        for path in passing:
            one, late, _ = pytest_run(work, [path], scratch / "one.xml", timeout)
            failures += [[path, "", "timed out"]] if late else failures_of(one, tests, {path})
    elif not cases and status != 0:
        return [[p, "", f"pytest exited {status} with no JUnit"] for p in passing], [], "crashed"
    else:
        failures = failures_of(cases, tests, set(passing))
    files = sorted({f for f, _, _ in failures})
    if not failures or timed_out or len(files) > 3:
        return failures, [], note
    again, _, _ = pytest_run(work, files, scratch / "again.xml", timeout)
    repeated = {tuple(f) for f in failures_of(again, tests, set(files))}
    return [f for f in failures if tuple(f) in repeated], [f for f in failures
            if tuple(f) not in repeated], note  # fmt: skip


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

    def select(self, changed: list[str]) -> tuple[dict[str, list[str]], list[str], float]:
        """Kept file -> the node ids of its cases to run (``[]``: every case); the notes; the
        seconds it took."""
        from ci_runner.impact import changes_from_list, select_with_records

        started = time.monotonic()
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as listing:
            listing.write("\n".join(changed) + "\n")
        try:
            change_set = changes_from_list(self.work, listing.name)
        finally:
            os.unlink(listing.name)
        impact = select_with_records(self.selection, self.catalog, change_set, self.records)
        whole = {
            path: kept.whole or f"keeps every case ({len(kept.cases)} of {kept.total})"
            for path, kept in impact.cases.items()
            if not kept.cases or len(kept.cases) == kept.total
        }
        notes = [*impact.record_lines, *(f"{p}: every case: {w}" for p, w in whole.items())]
        ours = {f.path: list(f.cases) for f in impact.selection.files}
        return ours, notes, round(time.monotonic() - started, 3)


def selector_version() -> str:
    """The commit of the selection code that judged (with ``+dirty`` for local edits)."""
    head = sh(["git", "-C", str(REPO), "rev-parse", "--short=10", "HEAD"], check=False).stdout
    if not head.strip():  # an exported copy (git archive): name the copy
        return f"unversioned copy at {REPO}"
    dirty = sh(["git", "-C", str(REPO), "status", "--porcelain", "--", "ci_runner"], check=False)
    return head.strip() + ("+dirty" if dirty.stdout.strip() else "")


def replay_mutant(
    work: Path, base: dict, mutant: Mutant, scratch: Path, selector: Selector
) -> dict:
    """One mutant: the whole suite's failures, testmon's selection, ours, and the verdicts."""
    timeout = max(120.0, 5 * base["suite_seconds"])
    passing = base["passing"]
    original = apply(work, mutant)
    try:
        ours, notes, selection_seconds = selector.select(base["changed"])
        started = time.monotonic()
        testmon = testmon_selection(work, passing, scratch, timeout)
        testmon_seconds = time.monotonic() - started
        started = time.monotonic()
        failures, flaky, note = whole_suite(work, base["tests"], passing, scratch, timeout)
        whole_seconds = time.monotonic() - started
    finally:
        (work / mutant.file).write_text(original, encoding="utf-8")
    row = {
        "commit": base["commit"], "file": mutant.file, "line": mutant.line,
        "operator": mutant.operator, "before": mutant.before, "after": mutant.after,
        "failures": failures, "flaky": flaky, "whole_note": note,
        "whole_seconds": round(whole_seconds, 1), "testmon_selected": testmon,
        "testmon_collect_seconds": round(testmon_seconds, 1), "ours": ours,
        "records_used": notes, "selection_seconds": selection_seconds,
        "judged_by": selector_version(),
    }  # fmt: skip
    row.update(judge(row, base, ours))
    return row


# ----------------------------------------------------------------------------- driver


def candidate_commits(project: Project, limit: int) -> list[str]:
    line = ["--first-parent"] if project.first_parent else ["--topo-order"]
    commits = git(project.git_dir, "rev-list", *line, "--no-merges", project.rev,
                  "--max-count=600").split()  # fmt: skip
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


@dataclass(frozen=True)
class Layout:
    """Where a code base's replay keeps its data under ``--out``."""

    out: Path
    name: str

    @property
    def results(self) -> Path:  # one JSON line per mutant
        return self.out / f"{self.name}.jsonl"

    @property
    def skipped(self) -> Path:  # one JSON line per commit skipped, with why
        return self.out / f"{self.name}-skipped.jsonl"

    @property
    def work(self) -> Path:  # the scratch tree; its git repository keeps every commit
        return self.out / f"{self.name}-work"

    @property
    def scratch(self) -> Path:
        return self.out / f"{self.name}-scratch"

    def base(self, commit: str) -> Path:  # per commit: tests, changed files, case times
        return self.out / f"{self.name}-commits" / f"{commit}.json"

    def record(self, commit: str) -> Path:  # per commit: the parent's record directory
        return self.out / f"{self.name}-records" / commit


def _commits_in(path: Path) -> set[str]:
    return {row["commit"] for row in read_rows(path)} if path.exists() else set()


def _skip(layout: Layout, commit: str, why: str) -> None:
    print(f"{commit[:10]}: {why}; skipped", flush=True)
    with layout.skipped.open("a") as handle:
        handle.write(json.dumps({"commit": commit, "why": why}) + "\n")


def mutant_candidates(
    project: Project, work: Path, commit: str, measured: list[str], executed: dict
) -> list[Mutant]:
    """Every mutant on an executed line of a function ``commit`` changed in ``measured``."""
    found: list[Mutant] = []
    for path in measured:
        diff = git(project.git_dir, "diff", "-U0", f"{commit}^", commit, "--", path)
        source = (work / path).read_text(encoding="utf-8")
        found += mutants_of(source, path, touched_lines(diff), executed.get(path, set()))
    return found


def run(args: argparse.Namespace) -> int:
    project = PROJECTS[args.project]
    if args.rev:
        project = dataclasses.replace(project, rev=args.rev)
    layout = Layout(Path(args.out), project.name)
    layout.scratch.mkdir(parents=True, exist_ok=True)
    init_repo(layout.work)
    done = _commits_in(layout.results)
    tried = done | _commits_in(layout.skipped)
    total = len(read_rows(layout.results)) if layout.results.exists() else 0
    replayed = len(done)
    per_commit = max(1, -(-args.mutants // args.commits))
    for commit in candidate_commits(project, args.commits + args.spare):
        if replayed >= args.commits and total >= args.mutants:
            break
        if commit in tried:
            continue
        started = time.monotonic()
        print(f"{commit[:10]}: replaying", flush=True)
        parent_tag, commit_tag = f"parent-{commit}", f"commit-{commit}"
        tests_p = snapshot(project, layout.work, f"{commit}^", parent_tag)
        tests = snapshot(project, layout.work, commit, commit_tag)
        changed = changed_files(project, commit)
        measured = [p for p in changed if _mutable(project, p) and (layout.work / p).exists()]
        if not measured:
            _skip(layout, commit, "no changed source file is left at the commit")
            continue
        passing, executed, suite_seconds = at_commit(layout.work, tests, measured, layout.scratch)
        if len(passing) * 2 < len(tests):
            _skip(layout, commit, f"{len(passing)} of {len(tests)} files pass at the commit here")
            continue
        candidates = mutant_candidates(project, layout.work, commit, measured, executed)
        if not candidates:
            _skip(layout, commit, "no mutant on an executed line of a changed function")
            continue
        chosen = random.Random(f"{args.seed}-{commit}").sample(
            candidates, min(per_commit, len(candidates))
        )
        covered = time.monotonic()
        switch(layout.work, parent_tag)
        parent = at_parent(layout.work, tests_p, layout.record(commit), layout.scratch)
        if not layout.record(commit).is_dir():  # the parent's recording run wrote nothing
            _skip(layout, commit, "the recording run at the parent wrote no record")
            continue
        switch(layout.work, commit_tag)
        base = {
            "commit": commit, "parent_tag": parent_tag, "commit_tag": commit_tag,
            "record": str(layout.record(commit)), "tests": tests, "changed": changed,
            "passing": sorted(passing), "suite_seconds": round(suite_seconds, 2), **parent,
        }  # fmt: skip
        layout.base(commit).parent.mkdir(parents=True, exist_ok=True)
        layout.base(commit).write_text(json.dumps(base, indent=1) + "\n")
        selector = Selector(layout.work, layout.record(commit))
        mutants_started = time.monotonic()
        for mutant in chosen:
            row = replay_mutant(layout.work, base, mutant, layout.scratch, selector)
            with layout.results.open("a") as handle:
                handle.write(json.dumps(row) + "\n")
            total += 1
        replayed += 1
        now = time.monotonic()
        print(f"{commit[:10]}: {len(chosen)} mutants in {now - started:.0f}s (commit under "
              f"coverage {suite_seconds:.0f}s, record {parent['record_seconds']:.0f}s, testmon "
              f"{parent['testmon_seconds']:.0f}s, mutants {now - mutants_started:.0f}s; "
              f"{covered - started:.0f}s to the mutants' choice) ({replayed} commits, {total} "
              "mutants)", flush=True)  # fmt: skip
    if args.top_up and total < args.mutants:
        top_up(project, layout, args, total)
    return 0


def top_up(project: Project, layout: Layout, args: argparse.Namespace, total: int) -> None:
    """More mutants in the commits already replayed (their stored baseline and record), one
    more per commit per round, until ``--mutants``: for a history whose older commits no longer
    run here. Each new mutant is one the commit's earlier rows do not hold."""
    rows = read_rows(layout.results)
    planted: dict[str, set[tuple]] = {}
    for row in rows:
        planted.setdefault(row["commit"], set()).add((row["file"], row["line"], row["after"]))
    candidates: dict[str, list[Mutant]] = {}
    selectors: dict[str, Selector] = {}
    while total < args.mutants:
        added = 0
        for commit in planted:
            if total >= args.mutants:
                break
            base = json.loads(layout.base(commit).read_text())
            switch(layout.work, base["commit_tag"])
            if commit not in candidates:
                measured = [p for p in base["changed"]
                            if _mutable(project, p) and (layout.work / p).exists()]  # fmt: skip
                _, executed, _ = at_commit(layout.work, base["tests"], measured, layout.scratch)
                found = mutant_candidates(project, layout.work, commit, measured, executed)
                random.Random(f"{args.seed}-{commit}-top-up").shuffle(found)
                candidates[commit] = found
            fresh = [m for m in candidates[commit]
                     if (m.file, m.line, m.after) not in planted[commit]]  # fmt: skip
            if not fresh:
                continue
            mutant = fresh[0]
            planted[commit].add((mutant.file, mutant.line, mutant.after))
            if commit not in selectors:
                selectors[commit] = Selector(layout.work, Path(base["record"]))
            row = replay_mutant(layout.work, base, mutant, layout.scratch, selectors[commit])
            with layout.results.open("a") as handle:
                handle.write(json.dumps(row) + "\n")
            total += 1
            added += 1
            print(f"{commit[:10]}: one more mutant ({total} mutants)", flush=True)
        if not added:
            print(f"top-up: no commit has a mutant left to plant ({total} mutants)", flush=True)
            return


def rejudge(args: argparse.Namespace) -> int:
    """Our selection again, with this checkout's code, for every stored mutant; the verdicts
    and shares rewritten (to ``--to``, else in place: not while a run appends to it)."""
    layout = Layout(Path(args.out), args.project)
    if not layout.results.exists():
        print(f"rejudge: {layout.results}: no such file (run the replay first)", file=sys.stderr)
        return 2
    rows = read_rows(layout.results)
    lacking = sorted({r["commit"] for r in rows if not layout.base(r["commit"]).exists()})
    if lacking:
        print(f"rejudge: {layout.base(lacking[0])}: no such file ({len(lacking)} commit(s) of "
              f"{layout.results} have no stored baseline: rows of an older replay?)",
              file=sys.stderr)  # fmt: skip
        return 2
    target = Path(args.to) if args.to else layout.results
    again = Path(args.rerecorded) if args.rerecorded else None
    work = again / "work" if again else layout.work
    changed_verdicts = 0
    with tempfile.TemporaryDirectory(prefix="impact-rejudge-") as temp:
        tree = Path(temp) / "tree"
        sh(["git", "clone", "-q", "--no-checkout", str(work), str(tree)])
        current, selector, base = None, None, {}
        for row in rows:
            if row["commit"] != current:
                current = row["commit"]
                base = json.loads(layout.base(current).read_text())
                local_git(tree, "checkout", "-q", "-f", base["commit_tag"])
                local_git(tree, "clean", "-q", "-ffdx")
                record = again / "records" / current if again else Path(base["record"])
                selector = Selector(tree, record)
            assert selector is not None
            mutant = Mutant(row["file"], row["line"], row["operator"], row["before"], row["after"])
            original = apply(tree, mutant)
            try:
                ours, notes, seconds = selector.select(base["changed"])
            finally:
                (tree / mutant.file).write_text(original, encoding="utf-8")
            before = (row["ours_miss"], row["ours_share"])
            row.update(ours=ours, records_used=notes, selection_seconds=seconds,
                       judged_by=selector_version())  # fmt: skip
            row.update(judge(row, base, ours))
            changed_verdicts += (row["ours_miss"], row["ours_share"]) != before
    staged = target.with_suffix(".tmp")
    staged.write_text("".join(json.dumps(row) + "\n" for row in rows))
    staged.replace(target)
    print(f"rejudged {len(rows)} mutants of {args.project} with {selector_version()}: "
          f"{changed_verdicts} changed their miss or share; written to {target}")  # fmt: skip
    return 0


def rerecord(args: argparse.Namespace) -> int:
    """The parents' recording runs again, with this checkout's runner and recorder, for every
    commit with stored mutants: ``--to``/work is a copy of the scratch repository whose tags
    point to the same trees with this checkout's recording plugin, ``--to``/records/<c> the
    records."""
    project = PROJECTS[args.project]
    layout = Layout(Path(args.out), args.project)
    if not layout.results.exists():
        print(f"rerecord: {layout.results}: no such file (run the replay first)", file=sys.stderr)
        return 2
    target = Path(args.to)
    work, records = target / "work", target / "records"
    if not work.exists():
        sh(["git", "clone", "-q", "--no-checkout", str(layout.work), str(work)])
        local_git(work, "fetch", "-q", "origin", "refs/tags/*:refs/tags/*")
    commits = list(dict.fromkeys(row["commit"] for row in read_rows(layout.results)))
    for number, commit in enumerate(commits, start=1):
        if (records / commit / "record.json").exists():
            continue
        started = time.monotonic()
        for tag in (f"commit-{commit}", f"parent-{commit}"):  # the parent last: it is recorded
            switch(work, tag)
            if not project.overlay_tests:  # this repository: the plugin is the harness's
                copy_recorder(work)
            local_git(work, "add", "-A")
            local_git(work, "commit", "-q", "--allow-empty", "-m", f"{tag} (rerecord)")
            local_git(work, "tag", "-f", tag)
        base = json.loads(layout.base(commit).read_text())
        scratch = target / "scratch"
        scratch.mkdir(parents=True, exist_ok=True)
        junit = scratch / "record.xml"
        sh([sys.executable, str(RUNNER), "--root", str(work), "--hw", "cpu", "--suite", SUITE,
            "--continue-on-error", "--record-deps", str(records / commit), "--junit-xml",
            str(junit)], env=child_env(work), check=False, timeout=7200)  # fmt: skip
        print(f"{commit[:10]}: recorded {len(base['tests'])} file(s) in "
              f"{time.monotonic() - started:.0f}s ({number} of {len(commits)})", flush=True)  # fmt: skip
    return 0


def floor(args: argparse.Namespace) -> int:
    """The floor of every stored mutant (``tools/impact_replay_floor.py``) beside the shares."""
    from ci_runner.impact.record_format import read_records
    from tools.impact_replay_floor import floor_lines, floor_share

    layout = Layout(Path(args.out), args.project)
    if not layout.results.exists():
        print(f"floor: {layout.results}: no such file (run the replay first)", file=sys.stderr)
        return 2
    again = Path(args.rerecorded) if args.rerecorded else None
    work = again / "work" if again else layout.work
    rows = read_rows(Path(args.results) if args.results else layout.results)
    floors, records, bases = [], {}, {}
    for row in rows:
        commit = row["commit"]
        if commit not in bases:
            bases[commit] = json.loads(layout.base(commit).read_text())
            where = again / "records" / commit if again else Path(bases[commit]["record"])
            records[commit] = read_records(where).tests
        source = local_git(work, "show", f"{bases[commit]['commit_tag']}:{row['file']}")
        floors.append(floor_share(row, bases[commit], records[commit], source))
    print("\n".join(floor_lines(args.project, floors, rows)))
    return 0


def summary(args: argparse.Namespace) -> int:
    print(TABLE_HEAD)
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    misses = []
    for name in args.results:
        rows = read_rows(Path(name))
        if not rows:
            continue
        print(table_row(Path(name).stem, rows))
        misses += miss_lines(Path(name).stem, rows)
    for line in misses:
        print(line)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    go = commands.add_parser("run", help="replay commits (goes on where the results end)")
    go.add_argument("project", choices=sorted(PROJECTS))
    go.add_argument("--commits", type=int, default=30)
    go.add_argument("--spare", type=int, default=60, help="more candidate commits to try")
    go.add_argument("--mutants", type=int, default=210)
    go.add_argument("--seed", type=int, default=46)
    go.add_argument("--rev", help="replay the history of this commit (default: the project's)")
    go.add_argument("--top-up", action="store_true",
                    help="then plant more mutants in replayed commits until --mutants")  # fmt: skip
    go.add_argument("--out", default="/tmp/impact-replay")
    again = commands.add_parser("rejudge", help="our selection again, with this checkout's code")
    again.add_argument("out", help="the --out of the run")
    again.add_argument("project", choices=sorted(PROJECTS))
    again.add_argument("--to", help="write the rejudged rows here (default: in place)")
    again.add_argument("--rerecorded", help="use the records and repository of `rerecord --to`")
    redo = commands.add_parser("rerecord", help="the parents' records again, with this recorder")
    redo.add_argument("out", help="the --out of the run")
    redo.add_argument("project", choices=sorted(PROJECTS))
    redo.add_argument("--to", required=True, help="where the repository copy and records go")
    least = commands.add_parser("floor", help="the least a safe selection runs, per mutant")
    least.add_argument("out", help="the --out of the run")
    least.add_argument("project", choices=sorted(PROJECTS))
    least.add_argument("--rerecorded", help="use the records and repository of `rerecord --to`")
    least.add_argument("--results", help="the rows to read (default: the run's)")
    show = commands.add_parser("summary", help="the table of docs/change-impact.md")
    show.add_argument("results", nargs="+")
    args = parser.parse_args()
    commands_ = {
        "run": run, "rejudge": rejudge, "rerecord": rerecord, "floor": floor, "summary": summary,
    }  # fmt: skip
    return commands_[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
