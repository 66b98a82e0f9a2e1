"""``run_suite.py init``: write a starting ``[tool.ci-runner]`` catalog for an existing tree.

It surveys the registrations, drafts the catalog (:mod:`ci_runner.adoption.draft`), checks that
the text it is about to write loads as a catalog, writes it and prints where it wrote, the
conflicts to decide, and the registration problems no catalog can fix.

Where: the file that already holds the catalog; else the root ``pyproject.toml`` (appended);
else, for a repository without one, a file of its own, ``ci-runner.toml`` (a root
``pyproject.toml`` would change how pip and IDEs see the repository). An existing catalog is
merged with ``--update`` (:mod:`ci_runner.adoption.update`) or replaced with ``--force``.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ci_runner.catalog import CATALOG_FILE, CatalogError, parse_catalog
from ci_runner.catalog.location import (
    OWN_FILE,
    CatalogFileError,
    CatalogLocation,
    find_catalog,
)
from ci_runner.catalog.syntax import SyntaxConfigError
from ci_runner.cli_errors import StoreOnce, usage_error
from ci_runner.env import EnvVarError
from ci_runner.exit_codes import EXIT_OK
from ci_runner.file_safety import destination_problem, read_regular_text, write_atomic
from ci_runner.safe_text import one_line

if TYPE_CHECKING:
    from ci_runner.adoption.draft import Draft

REGISTERED_DIR_CANDIDATES = ("registered", "test/registered", "tests/registered")
PROG = "run_suite.py init"
_HEADER = re.compile(r"^\s*\[\[?\s*([^\]#]+?)\s*\]\]?\s*(#.*)?$")


class InitError(Exception):
    """``init`` cannot go on; the message says why and what to do."""


DESCRIPTION = (
    "Scan an existing tree of registered test files and write a starting [tool.ci-runner] "
    "catalog for it: every suite seen, its backend, nightly from the majority of its "
    "registrations, and the conflicts to decide."
)


def add_init_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``init`` (also shown under the main parser's ``init`` subcommand)."""
    parser.add_argument(
        "--root",
        action=StoreOnce,
        metavar="DIR",
        default=".",
        help="repository root (default: current directory)",
    )
    parser.add_argument(
        "--registered-dir",
        action=StoreOnce,
        metavar="DIR",
        help="directory of the registered test files, relative to the root (default: the first "
        f"of {', '.join(REGISTERED_DIR_CANDIDATES)} that exists)",
    )
    parser.add_argument(
        "--suite-template",
        action=StoreOnce,
        metavar="TEMPLATE",
        help="keyword arguments that compose suite names, e.g. '{stage}-test-{runner_config}' "
        "(default: that one when registrations use stage=/runner_config=)",
    )
    parser.add_argument(
        "--output",
        action=StoreOnce,
        metavar="PATH",
        help="write the catalog to PATH ('-' for stdout; a file named ci-runner.toml holds it at "
        "its top level) instead of where the repository keeps it (default: its existing "
        "catalog, else the root pyproject.toml, else a new ci-runner.toml)",
    )
    existing = parser.add_mutually_exclusive_group()
    existing.add_argument(
        "--update",
        action="store_true",
        help="merge into the existing catalog: add what is new, keep every hand-written key, "
        "table and comment; print what changed",
    )
    existing.add_argument(
        "--force",
        action="store_true",
        help="replace an existing catalog in the target file",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION)
    add_init_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``run_suite.py init``; exit 0 written, 2 usage or refused."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return _init(args)
    except (InitError, CatalogError, SyntaxConfigError, EnvVarError) as exc:
        return usage_error(exc, prog=PROG)


def _init(args: argparse.Namespace) -> int:
    # Imported here: the main parser imports this module for init's flags on every run.
    from ci_runner.adoption.catalog_text import catalog_text
    from ci_runner.adoption.draft import draft_catalog

    root = Path(args.root).resolve()
    if not root.is_dir():
        raise InitError(f"--root {args.root}: not a directory")
    if args.update and args.output == "-":
        raise InitError("--update needs a file to merge into; --output - prints a new catalog")
    registered_dir = _registered_dir(root, args.registered_dir)
    location, why = _target(root, args.output)
    draft = draft_catalog(root, registered_dir, args.suite_template)
    if not draft.suites:
        raise InitError(
            f"no registration found under {registered_dir}/ ({draft.files} file(s) looked at): "
            "nothing to write; register files with register_<backend>_ci(...) first"
        )
    if location is None:
        text = catalog_text(draft, CatalogLocation(root / CATALOG_FILE, False))
        _check_loads(text, root, CatalogLocation(root / CATALOG_FILE, False))
        sys.stdout.write(text)
        _report(draft, None, why)
        return EXIT_OK
    if args.update:
        changes = _update(location, draft, root)
        _report(draft, location.path, why, changes)
        return EXIT_OK
    text = catalog_text(draft, location)
    _check_loads(text, root, location)
    _write(location, text, args.force)
    _report(draft, location.path, why)
    return EXIT_OK


def _target(root: Path, output: str | None) -> tuple[CatalogLocation | None, str]:
    """Where the catalog goes, and why there (None: stdout)."""
    if output == "-":
        return None, ""
    if output is not None:
        return CatalogLocation.for_file(Path(output)), "--output"
    try:
        found = find_catalog(root)
    except CatalogFileError as exc:
        raise InitError(str(exc)) from None
    if found is not None:
        return found[0], "the repository's catalog"
    if (root / CATALOG_FILE).exists():
        return CatalogLocation(root / CATALOG_FILE, False), f"the root {CATALOG_FILE}"
    return CatalogLocation(root / OWN_FILE, True), (
        f"the root has no {CATALOG_FILE}: a file of its own, which the runner reads"
    )


def _update(location: CatalogLocation, draft: Draft, root: Path) -> list[str]:
    from ci_runner.adoption.update import UpdateError, update_catalog

    path = location.path
    problem = destination_problem(path)
    if problem or not path.exists():
        raise InitError(f"{path}: {problem or 'not found'}; nothing to update")
    try:
        old = read_regular_text(path)
        text, changes = update_catalog(old, draft, location)
    except (OSError, UnicodeDecodeError) as exc:
        raise InitError(f"{path}: cannot read it: {exc}") from None
    except UpdateError as exc:
        raise InitError(str(exc)) from None
    _check_loads(text, root, location, "the updated catalog")
    if text != old:
        write_atomic(path, text.encode("utf-8"))
    return changes


def _registered_dir(root: Path, given: str | None) -> str:
    if given is not None:
        path = (root / given).resolve()
        inside = path == root or root in path.parents
        if Path(given).is_absolute() or ".." in Path(given).parts or not inside:
            raise InitError(
                f"--registered-dir {given}: expected a directory inside the root {root}, "
                "relative to it (no '..')"
            )
        if not path.is_dir():
            raise InitError(f"--registered-dir {given}: not a directory under {root}")
        return Path(given).as_posix().strip("/")
    for candidate in REGISTERED_DIR_CANDIDATES:
        if (root / candidate).is_dir():
            return candidate
    raise InitError(
        f"no registered directory found under {root} (looked for "
        f"{', '.join(REGISTERED_DIR_CANDIDATES)}); pass --registered-dir DIR"
    )


def _check_loads(
    text: str, root: Path, location: CatalogLocation, what: str = "the drafted catalog"
) -> None:
    """The text to write must load as a catalog; anything else is worth a clear message."""
    try:
        table = location.table_of(tomllib.loads(text))
        if table is None:
            raise CatalogError("no catalog table")
        parse_catalog(table, root, what)
    except (tomllib.TOMLDecodeError, CatalogError) as exc:
        raise InitError(f"{what} does not load ({exc}); nothing was written") from None


def _write(location: CatalogLocation, text: str, force: bool) -> None:
    target = location.path
    problem = destination_problem(target)
    if problem:
        raise InitError(f"{target}: {problem}; nothing was written")
    if not target.exists():
        write_atomic(target, text.encode("utf-8"))
        return
    try:
        old = read_regular_text(target)
        data = tomllib.loads(old)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        raise InitError(
            f"{target}: cannot read it as TOML ({exc}); fix it, or write elsewhere with --output"
        ) from None
    if location.own_file and old.strip():
        if not force:
            raise InitError(
                f"{target} already holds a catalog; pass --update to merge the new draft into "
                "it, --force to replace it, or --output FILE to write the new one elsewhere"
            )
        write_atomic(target, text.encode("utf-8"))
        return
    if "ci-runner" in data.get("tool", {}):
        if not force:
            raise InitError(
                f"{target} already has a [tool.ci-runner] catalog; pass --update to merge the "
                "new draft into it, --force to replace it, or --output FILE to write the new one "
                "elsewhere"
            )
        old = _without_catalog(old, target, data)
    joined = old.rstrip("\n") + ("\n\n" if old.strip() else "") + text
    write_atomic(target, joined.encode("utf-8"))


def _without_catalog(text: str, target: Path, data: dict) -> str:
    """``text`` without its ``[tool.ci-runner]`` tables; everything else must parse unchanged."""
    kept: list[str] = []
    inside = False
    for line in text.splitlines(keepends=True):
        header = _HEADER.match(line)
        if header:
            name = re.sub(r"[\s\"']", "", header.group(1))
            inside = name == "tool.ci-runner" or name.startswith("tool.ci-runner.")
        if not inside:
            kept.append(line)
    result = "".join(kept)
    expected = {**data, "tool": {k: v for k, v in data["tool"].items() if k != "ci-runner"}}
    if not expected["tool"]:
        del expected["tool"]
    try:
        same = tomllib.loads(result) == expected
    except tomllib.TOMLDecodeError:
        same = False
    if not same:
        raise InitError(
            f"{target}: could not remove the existing [tool.ci-runner] catalog line by line; "
            "delete it by hand, or write the new one elsewhere with --output"
        )
    return result


def _report(draft: Draft, target: Path | None, why: str, changes: list[str] | None = None) -> None:
    out = sys.stderr if target is None else sys.stdout
    backends = sorted({s.hw for s in draft.suites})
    where = "stdout" if target is None else str(target.resolve())
    reason = f" ({why})" if why else ""
    written = len(draft.written_suites)
    names = (
        f"{len(draft.suites)} suite(s) registered on {', '.join(backends)} (names read from "
        f"{draft.policy.suites_from} on every run; {written} entr(y/ies) with workflow settings)"
        if draft.policy.suites_from
        else f"{len(draft.suites)} suite(s) on {', '.join(backends)}"
    )
    verb = "updated the catalog in" if changes is not None else "wrote the catalog to"
    print(
        f"{verb} {where}{reason}: {names}, from {draft.registration_count} registration(s) in "
        f"{draft.files} file(s) under {draft.scope}",
        file=out,
    )
    if changes is not None:
        print(f"changes ({len(changes)}):" if changes else "changes: none", file=out)
        for change in changes:
            print(f"  {change}", file=out)
    for note in draft.notes:
        print(f"  {note}", file=out)
    if draft.change_impact is not None:
        print("\n".join(f"  {line}" for line in draft.change_impact.review), file=out)
    if draft.conflicts:
        print(f"decide ({len(draft.conflicts)}; also written as comments):", file=out)
        for conflict in draft.conflicts:
            print(f"  - {conflict}", file=out)
    if draft.problems:
        files = len({p.path for p in draft.problems})
        print(
            f"{len(draft.problems)} registration problem(s) in {files} file(s) that no catalog "
            "can fix (the runner reports them until the files change):",
            file=out,
        )
        for problem in draft.problems:
            print(f"  {one_line(str(problem))}", file=out)
    first = max(draft.suites, key=lambda s: (s.files, s.name))
    nightly = " --nightly" if first.nightly else ""
    print(
        f"next: python run_suite.py --hw {first.hw} --suite {first.name}{nightly} --dry-run",
        file=out,
    )
