"""What one attempt of a file runs with: its files on disk and its environment.

Each attempt has private paths in the shard's temporary directory (:class:`AttemptFiles`): the
combined stdout+stderr (``<stem>.log``), the case record (``<stem>.cases``, see
:mod:`ci_runner.execution.case_record`), one stack-dump file per Python process
(``<stem>.stack.<pid>``; no directory of their own: creating and removing one per file cost the
runner more than all the rest of its new work) and, when it runs only some cases, the case
selection (``<stem>.select``, see :mod:`ci_runner.execution.case_selection`). The
environment puts the child bootstrap (:mod:`ci_runner.execution.child`) first on ``PYTHONPATH``
and tells it where those files are; ``PYTEST_ADDOPTS`` loads the case-record plugin and sets
pytest's ``faulthandler_timeout`` just under the file's time limit.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ci_runner.env import RUN_FULL_TESTS
from ci_runner.execution.child import CHILD_DIR, PYTEST_PLUGIN
from ci_runner.execution.child.ci_runner_case_record import (
    DEPTH_VARIABLE,
    RECORD_VARIABLE,
    ROOT_VARIABLE,
    STACK_PREFIX_VARIABLE,
)
from ci_runner.execution.child.ci_runner_case_select import SELECTION_VARIABLE
from ci_runner.execution.gpu_slots import VISIBLE_DEVICES
from ci_runner.execution.process_tree import TOKEN_VARIABLE

ATTEMPT_VARIABLE = "CI_RUNNER_ATTEMPT"
ADDOPTS_VARIABLE = "PYTEST_ADDOPTS"


@dataclass(frozen=True)
class AttemptFiles:
    """The private files of one attempt; ``output`` is ``<stem>.log``, the others beside it."""

    output: Path

    @property
    def record(self) -> Path:
        return self.output.with_suffix(".cases")

    @property
    def stack_prefix(self) -> str:
        """Each Python process of the attempt dumps its stacks to ``<stack_prefix><pid>``."""
        return str(self.output.with_suffix(".stack."))

    def stack_file(self, pid: int) -> Path:
        return Path(f"{self.stack_prefix}{pid}")

    @property
    def selection(self) -> Path:
        return self.output.with_suffix(".select")

    def remove(self) -> None:
        """Delete them (whatever the file did to them)."""
        for path in (self.output, self.record, self.selection):
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
        start = self.output.with_suffix(".stack.").name
        with contextlib.suppress(OSError), os.scandir(self.output.parent) as entries:
            for entry in entries:
                if entry.name.startswith(start):
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)


def pytest_addopts(existing: str | None) -> str:
    """``PYTEST_ADDOPTS`` for the child: the caller's value, then no cache and the case-record
    plugin."""
    ours = f"-p no:cacheprovider -p {PYTEST_PLUGIN}"
    return f"{existing} {ours}" if existing and existing.strip() else ours


def python_path(root: Path, existing: str | None) -> str:
    """The child bootstrap, then the root, then the caller's ``PYTHONPATH``."""
    parts = [str(CHILD_DIR), str(root)]
    if existing:
        parts.append(existing)
    return os.pathsep.join(parts)


def child_environment(
    base_env: Mapping[str, str],
    root: Path,
    nightly: bool,
    files: AttemptFiles,
    *,
    gpu_ids: tuple[str, ...],
    pin_gpus: bool,
    attempt: int,
    token: str,
    selects_cases: bool = False,
) -> dict[str, str]:
    """The environment of one attempt (docs/running-and-reports.md, "How a file runs")."""
    env = dict(base_env)
    env["PYTHONPATH"] = python_path(root, env.get("PYTHONPATH"))
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.setdefault("PYTHONFAULTHANDLER", "1")
    if nightly and not env.get(RUN_FULL_TESTS, "").strip():
        env[RUN_FULL_TESTS] = "1"
    env[ADDOPTS_VARIABLE] = pytest_addopts(base_env.get(ADDOPTS_VARIABLE))
    if pin_gpus:
        env[VISIBLE_DEVICES] = ",".join(gpu_ids)
    env[ATTEMPT_VARIABLE] = str(attempt)
    env[TOKEN_VARIABLE] = token
    env[RECORD_VARIABLE] = str(files.record)
    env[ROOT_VARIABLE] = str(root)
    env[DEPTH_VARIABLE] = "0"
    env[STACK_PREFIX_VARIABLE] = files.stack_prefix
    env.pop(SELECTION_VARIABLE, None)
    if selects_cases:  # the file files.selection names the cases to run
        env[SELECTION_VARIABLE] = str(files.selection)
    return env
