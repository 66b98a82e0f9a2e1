"""Our runner on the same tree, as an adopter runs it: ``run_suite.py init``, then one
``run_suite.py ... --dry-run --format json`` subprocess per case (only its JSON is read)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

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


def run_init(runner: Path, root: Path) -> tuple[int, str]:
    """``run_suite.py init --root ROOT``: exit status and its console output."""
    done = subprocess.run(
        [sys.executable, str(runner), "init", "--root", str(root)],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


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
    command = dry_run_command(runner, root, case, shard_id, extra)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    empty = OursResult(done.returncode, (), {}, (), (), None, None, done.stderr, tuple(command))
    if done.returncode != 0:
        return empty
    try:
        document = json.loads(done.stdout)
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
        stderr=done.stderr,
        command=tuple(command),
    )
