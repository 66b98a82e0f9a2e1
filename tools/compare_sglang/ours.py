"""Our runner on the same tree, as an adopter runs it: ``run_suite.py init``, then
``run_suite.py ... --dry-run --format json`` per case (only its JSON is read).

Each case runs either as a subprocess (:func:`run_case`, the real CLI) or in this process
(:class:`InProcess`: the same ``main()`` with stdout/stderr captured, the catalog loaded and the
tree collected once per root instead of once per case). ``--cli-sample`` checks that both agree.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from tools.compare_sglang.cases import Case

DEFAULT_RUNNER = Path(__file__).resolve().parents[2] / "run_suite.py"


@dataclass(frozen=True)
class OursResult:
    """One dry run: exit status, the selection and the whole plan (None when it failed)."""

    rc: int
    files: tuple[str, ...]
    est: dict[str, float]
    disabled: tuple[str, ...]
    shards: tuple[tuple[str, ...], ...]
    makespan: float | None
    plan_hash: str | None
    stderr: str
    command: tuple[str, ...]
    broken: str = ""  # exit 0 but no usable JSON on stdout: what was wrong


def run_init(runner: Path, root: Path, *flags: str) -> tuple[int, str]:
    """``run_suite.py init --root ROOT [flags]``: exit status and its console output."""
    done = subprocess.run(
        [sys.executable, str(runner), "init", "--root", str(root), *flags],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def set_catalog_key(root: Path, key: str, value: object) -> None:
    """Set one top-level key of the catalog at ``root`` (edited in place with tomlkit)."""
    import tomlkit

    from ci_runner.catalog.location import find_catalog

    found = find_catalog(root)
    if found is None:
        raise ValueError(f"{root}: no catalog to set {key} in")
    location = found[0]
    document = tomlkit.parse(location.path.read_text(encoding="utf-8"))
    table = document
    for part in location.keys:
        table = table[part]
    table[key] = value
    location.path.write_text(tomlkit.dumps(document), encoding="utf-8")


def dry_run_command(
    runner: Path, root: Path, case: Case, shard_id: int | None, extra: tuple[str, ...]
) -> list[str]:
    command = [sys.executable, str(runner), "--root", str(root), "--hw", case.hw]
    command += ["--suite", case.suite, *(["--nightly"] if case.nightly else [])]
    if case.size is not None:
        command += [
            "--auto-partition-id",
            str(shard_id or 0),
            "--auto-partition-size",
            str(case.size),
        ]
    return [*command, "--dry-run", "--format", "json", *extra]


def run_case(
    runner: Path, root: Path, case: Case, shard_id: int | None, extra: tuple[str, ...] = ()
) -> OursResult:
    """One dry run as a subprocess of ``runner``."""
    command = dry_run_command(runner, root, case, shard_id, extra)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return parse_result(done.returncode, done.stdout, done.stderr, command)


class InProcess:
    """Our ``run_suite.py`` main() in this process; per root, the catalog is loaded and the tree
    collected once (the only change to the CLI's path; every case still parses its flags, checks
    the problems, selects, plans and prints its JSON as the CLI does)."""

    def __init__(self) -> None:
        from ci_runner.catalog import load_catalog
        from ci_runner.cli import command
        from ci_runner.collect import collect

        self._command = command
        self._catalogs: dict[Path, object] = {}
        self._collections: dict[int, object] = {}
        self._load, self._collect = load_catalog, collect
        self._package = command._package_warnings  # reads the tree too: once per catalog
        self._warnings: dict[int, object] = {}

    def _memo_load(self, root: Path) -> object:
        if root not in self._catalogs:
            self._catalogs[root] = self._load(root)
        return self._catalogs[root]

    def _memo_collect(self, catalog: object) -> object:
        if id(catalog) not in self._collections:
            self._collections[id(catalog)] = self._collect(catalog)
        return self._collections[id(catalog)]

    def _memo_package(self, catalog: object) -> object:
        if id(catalog) not in self._warnings:
            self._warnings[id(catalog)] = self._package(catalog)
        return self._warnings[id(catalog)]

    def run_case(
        self,
        runner: Path,
        root: Path,
        case: Case,
        shard_id: int | None,
        extra: tuple[str, ...] = (),
    ) -> OursResult:
        command = dry_run_command(runner, root, case, shard_id, extra)
        out, err = io.StringIO(), io.StringIO()
        module = self._command
        with (
            mock.patch.object(module, "load_catalog", self._memo_load),
            mock.patch.object(module, "collect", self._memo_collect),
            mock.patch.object(module, "_package_warnings", self._memo_package),
            mock.patch.object(module, "robust_output", lambda: None),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            rc = module.main(command[2:])
        return parse_result(rc, out.getvalue(), err.getvalue(), command)


def parse_result(rc: int, stdout: str, stderr: str, command: list[str]) -> OursResult:
    """An :class:`OursResult` from one dry run's exit status and output."""
    empty = OursResult(rc, (), {}, (), (), None, None, stderr, tuple(command))
    if rc != 0:
        return empty
    try:
        document = json.loads(stdout)
    except ValueError:
        return OursResult(**{**empty.__dict__, "broken": "stdout is not JSON"})
    files = tuple(f["path"] for f in document["files"])
    return OursResult(
        rc=0,
        files=files,
        est={f["path"]: float(f["est_time"]) for f in document["files"]},
        disabled=tuple(d["path"] for d in document["disabled"]),
        shards=tuple(tuple(s["files"]) for s in document["shards"]),
        makespan=float(document["makespan"]),
        plan_hash=document.get("plan_hash"),
        stderr=stderr,
        command=tuple(command),
    )
