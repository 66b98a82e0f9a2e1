"""Registration lints for pre-commit and CI, built on the runner's own collector.

* :func:`package_offenders`: a ``register_*_ci(...)`` call (or a malformed one) inside an
  importable package ships the test in the wheel, and the runner never collects it there.
* :func:`registered_tree_problems`: the registered tree validates exactly as ``run_suite.py``
  would (same :func:`ci_runner.collect.collect`), so a bad registration fails at commit time
  instead of failing every CI job.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ci_runner.catalog import CatalogError, find_root, load_catalog, load_syntax
from ci_runner.catalog.syntax import DEFAULT_SYNTAX, RegistrationSyntax
from ci_runner.cli_errors import StoreOnce, robust_output, usage_error
from ci_runner.collect import collect, scan_markers, walk_files
from ci_runner.collect.source_text import may_mention
from ci_runner.env import EnvVarError
from ci_runner.file_safety import read_regular, why
from ci_runner.model import Problem
from ci_runner.safe_text import one_line


def discover_packages(root: Path) -> list[str]:
    """Importable packages of the repository: top-level (or ``src/``) directories with an
    ``__init__.py``. Here: ci_runner and jit_kernel."""
    found: list[str] = []
    for base in (root, root / "src"):
        if not base.is_dir():
            continue
        for child in sorted(base.iterdir()):
            if (
                child.is_dir()
                and not child.name.startswith(".")
                and (child / "__init__.py").is_file()
            ):
                found.append(child.relative_to(root).as_posix())
    return found


def package_offenders(
    root: Path, packages: Sequence[str], syntax: RegistrationSyntax = DEFAULT_SYNTAX
) -> list[Problem]:
    """Every registration or malformed marker call in the package directories.

    ``syntax``: the catalog's markers and arguments (extra backends, suite-template).
    """
    offenders: list[Problem] = []
    for package in packages:
        walk = walk_files(root, root / package, lambda name: name.endswith(".py"), "*.py")
        offenders.extend(walk.problems)  # a file that cannot be read cannot be checked
        for rel in walk.files:
            try:
                source = read_regular(root / rel, follow_links=False)
            except OSError as exc:
                offenders.append(Problem(rel, 1, 1, f"cannot read: {why(exc)}"))
                continue
            if not may_mention(source, ("register_", *syntax.markers)):
                continue  # cheap prefilter: no marker name, nothing to parse
            # parsed from the bytes, as Python reads the file: its BOM, its coding cookie
            registrations, problems = scan_markers(source, rel, syntax)
            offenders.extend(
                Problem(
                    r.path, r.line, r.col, f"registers a CI test ({r.backend}, suite {r.suite!r})"
                )
                for r in registrations
            )
            offenders.extend(problems)  # a malformed marker call is still a misplaced test
    return sorted(offenders, key=lambda p: (p.path, p.line, p.col))


def registered_tree_problems(root: Path) -> tuple[int, list[Problem]]:
    """(files collected, every problem) for the registered tree, as the runner sees it."""
    collection = collect(load_catalog(root))
    return len(collection.files), collection.problems


def _directory_inside(root: Path, relative: str) -> bool:
    path = (root / relative).resolve()
    return path.is_dir() and (path == root.resolve() or root.resolve() in path.parents)


def _root(value: str | None) -> Path:
    return Path(value).resolve() if value else find_root(Path.cwd())


def main_no_tests_in_package(argv: Sequence[str] | None = None) -> int:
    """``check-no-registered-tests-in-package``: exit 1 listing every offender."""
    robust_output()
    parser = argparse.ArgumentParser(
        prog="python -m ci_runner.maintenance check-no-registered-tests-in-package",
        description="Fail when a register_*_ci(...) call sits inside an importable package.",
    )
    parser.add_argument(
        "--root", action=StoreOnce, help="repository root (default: found from the cwd)"
    )
    parser.add_argument(
        "--package",
        action="append",
        metavar="DIR",
        help="package directory to scan, repeatable (default: every top-level or src/ "
        "directory with an __init__.py)",
    )
    args = parser.parse_args(argv)
    try:
        root = _root(args.root)
    except CatalogError as exc:
        return usage_error(exc)
    if not root.is_dir():
        return usage_error(f"--root {args.root}: not a directory")
    try:
        registered_dir = load_catalog(root).registered_dir + "/"
    except CatalogError:  # a broken catalog is check_registered_tests' business
        registered_dir = "the registered directory"
    try:
        syntax = load_syntax(root)
    except CatalogError:
        syntax = DEFAULT_SYNTAX
    if args.package:
        missing = [p for p in args.package if not _directory_inside(root, p)]
        if missing:
            return usage_error(f"--package {', '.join(missing)}: not a directory under {root}")
        packages = args.package
    else:
        packages = discover_packages(root)
    offenders = package_offenders(root, packages, syntax)
    if not offenders:
        return 0
    print("error: CI-registered test(s) found inside a package:", file=sys.stderr)
    for problem in offenders:
        print(f"  {one_line(str(problem))}", file=sys.stderr)
    print(
        f"Registered tests belong under {registered_dir} (the [tool.ci-runner] registered-dir): "
        "there run_suite.py collects them, and they are not shipped in the wheel. Inside a "
        "package they are shipped to users and never run. Move the file, or drop the call.",
        file=sys.stderr,
    )
    return 1


def main_registered_tests(argv: Sequence[str] | None = None) -> int:
    """``check-registered-tests``: exit 1 listing every registration problem."""
    robust_output()
    parser = argparse.ArgumentParser(
        prog="python -m ci_runner.maintenance check-registered-tests",
        description="Validate every registered test file exactly as run_suite.py does.",
    )
    parser.add_argument(
        "--root", action=StoreOnce, help="repository root (default: found from the cwd)"
    )
    args = parser.parse_args(argv)
    try:
        files, problems = registered_tree_problems(_root(args.root))
    except (CatalogError, EnvVarError) as exc:  # EnvVarError: CI_RUNNER_PARSE_CACHE=maybe
        return usage_error(exc)
    for problem in problems:
        print(one_line(str(problem)), file=sys.stderr)
    if problems:
        count = len({p.path for p in problems})
        print(
            f"{len(problems)} registration problem(s) in {count} of {files} file(s); "
            "run_suite.py would refuse to run any suite",
            file=sys.stderr,
        )
        return 1
    print(f"{files} registered file(s) OK")
    return 0
