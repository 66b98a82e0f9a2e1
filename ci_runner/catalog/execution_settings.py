"""``[tool.ci-runner.execution]``: how the repository's files are run, as catalog data.

Every key is optional; the defaults are this runner's own behaviour. ``run_suite.py init`` on a
repository whose runner is SGLang's ``test/run_suite.py`` writes the values that reproduce it
(see docs/adopting.md, "Flags and behaviour compared with SGLang's run_suite.py"). Flags of the
same name (``--retry-wait-seconds``, ``--retry-timeout-increase``) override the table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from ci_runner.catalog.keys import unknown_keys_message
from ci_runner.catalog.limits import MAX_SECONDS, is_finite_number, number_text
from ci_runner.exit_codes import EXIT_TEST_FAILURES

EST_TIMEOUT_CI_RUNNER = "ci-runner"  # min(max(3*est+60, 60), cap)
EST_TIMEOUT_SGLANG = "sglang"  # max(1.5*est, est+1800), no cap
EST_TIMEOUT_RULES = (EST_TIMEOUT_CI_RUNNER, EST_TIMEOUT_SGLANG)
RETRY_ANY_FAILURE = "any-failure"  # every failure that can be flaky (structured evidence)
RETRY_OUTPUT_PATTERNS = "output-patterns"  # only failures whose output matches SGLang's patterns
RETRY_RULES = (RETRY_ANY_FAILURE, RETRY_OUTPUT_PATTERNS)
LAUNCHER_PYTHON = "python"  # python <file>: the file's __main__ block runs its tests
LAUNCHER_PYTEST = "pytest"  # python -m pytest <file>: no __main__ block needed
LAUNCHERS = (LAUNCHER_PYTHON, LAUNCHER_PYTEST)
DEFAULT_RETRY_WAIT_SECONDS = 30.0
TIMINGS_STDOUT, TIMINGS_STDERR = "stdout", "stderr"
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_DIR_NAME = re.compile(r"(?!\.\.?\Z)[A-Za-z0-9._-]+\Z")


class ExecutionSettingsError(ValueError):
    """A bad value in the execution table; the message names the file, the key and what was
    expected (the catalog loader turns it into a ``CatalogError``)."""


@dataclass(frozen=True)
class CudaCoredump:
    """Where CUDA coredumps go when the switch variable is true (SGLang: ``SGLANG_CUDA_COREDUMP``).

    The dump directory is ``$<dir_variable>``, else ``$RUNNER_TEMP/<dir_name>``, else
    ``/tmp/<dir_name>``, plus ``<GITHUB_RUN_ID>-<GITHUB_RUN_ATTEMPT>`` when the run id is set.
    """

    switch_variable: str
    dir_variable: str
    dir_name: str


@dataclass(frozen=True)
class ExecutionSettings:
    """The parsed table; every field's default is this runner's behaviour."""

    est_timeout: str = EST_TIMEOUT_CI_RUNNER  # formula of --timeout-from-est-time
    retry_timeout_increase: float = 0.0  # seconds added to a flat limit with --enable-retry
    retry_wait_seconds: float = DEFAULT_RETRY_WAIT_SECONDS  # default of --retry-wait-seconds
    retry_on: str = RETRY_ANY_FAILURE  # which failures --enable-retry retries
    launcher: str = LAUNCHER_PYTHON  # how a file is started (a suite may override it)
    retry_timeouts: bool = False  # timeouts are retried with --enable-retry
    working_directory: str = "."  # where files run, relative to the root
    file_arguments: tuple[str, ...] = ()  # appended to ``python <file>``
    timings_block: bool = False  # print SGLang's TIMINGS block at the end of a shard
    timings_stream: str = TIMINGS_STDOUT  # where the block goes: stdout, or stderr as SGLang's
    one_file_at_a_time: bool = False  # on cuda: one file at a time unless --gpus/--gpu-ids
    cuda_coredump: CudaCoredump | None = None
    failure_exit_status: int = EXIT_TEST_FAILURES  # a shard with a failing file exits with this


DEFAULT_EXECUTION_SETTINGS = ExecutionSettings()

_KEYS = (
    "est-timeout",
    "retry-timeout-increase",
    "retry-wait-seconds",
    "retry-on",
    "retry-timeouts",
    "launcher",
    "working-directory",
    "file-arguments",
    "timings-block",
    "one-file-at-a-time",
    "cuda-coredump",
    "failure-exit-status",
)
_COREDUMP_KEYS = ("switch-variable", "dir-variable", "dir-name")


def parse_execution_settings(raw: object, where: str) -> ExecutionSettings:
    """Validate the ``execution`` table (``where`` names the catalog, e.g. ``pyproject.toml
    [tool.ci-runner]``); absent means every default."""
    if raw is None:
        return DEFAULT_EXECUTION_SETTINGS
    where = f"{where}.execution"
    if not isinstance(raw, dict):
        raise ExecutionSettingsError(f"{where}: must be a table, got {type(raw).__name__}")
    _no_unknown(raw, _KEYS, where)
    return ExecutionSettings(
        est_timeout=_choice(raw, "est-timeout", EST_TIMEOUT_RULES, where, EST_TIMEOUT_CI_RUNNER),
        retry_timeout_increase=_seconds(raw, "retry-timeout-increase", where, 0.0),
        retry_wait_seconds=_seconds(raw, "retry-wait-seconds", where, DEFAULT_RETRY_WAIT_SECONDS),
        retry_on=_choice(raw, "retry-on", RETRY_RULES, where, RETRY_ANY_FAILURE),
        launcher=parse_launcher(raw, where),
        retry_timeouts=_boolean(raw, "retry-timeouts", where),
        working_directory=_relative_directory(raw, "working-directory", where),
        file_arguments=_strings(raw, "file-arguments", where),
        **_timings(raw, where),
        one_file_at_a_time=_boolean(raw, "one-file-at-a-time", where),
        cuda_coredump=_coredump(raw.get("cuda-coredump"), f"{where}.cuda-coredump"),
        failure_exit_status=_exit_status(raw, "failure-exit-status", where),
    )


def parse_launcher(raw: dict, where: str) -> str:
    """The ``launcher`` key of the execution table or of a suite (``where`` names it)."""
    return _choice(raw, "launcher", LAUNCHERS, where, LAUNCHER_PYTHON)


def _timings(raw: dict, where: str) -> dict[str, object]:
    """``timings-block``: false, true (on stdout), or the stream ``"stdout"`` / ``"stderr"``."""
    value = raw.get("timings-block", False)
    if isinstance(value, bool):
        return {"timings_block": value}
    if value in (TIMINGS_STDOUT, TIMINGS_STDERR):
        return {"timings_block": True, "timings_stream": value}
    raise ExecutionSettingsError(
        f'{where}: timings-block must be true, false, "stdout" or "stderr", got '
        f"{number_text(value)}"
    )


def _exit_status(raw: dict, key: str, where: str) -> int:
    """An exit status from 1 to 255 (a failure must not look like success or a signal's 128+N
    is allowed: SGLang's runner exits 255 = -1)."""
    value = raw.get(key, EXIT_TEST_FAILURES)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 255:
        raise ExecutionSettingsError(
            f"{where}: {key} must be an exit status from 1 to 255 (SGLang's runner: 255), "
            f"got {number_text(value)}"
        )
    return value


def _no_unknown(raw: dict, known: tuple[str, ...], where: str) -> None:
    if message := unknown_keys_message(raw, known, where):
        raise ExecutionSettingsError(message)


def _choice(raw: dict, key: str, choices: tuple[str, ...], where: str, default: str) -> str:
    value = raw.get(key, default)
    if value not in choices:
        raise ExecutionSettingsError(
            f"{where}: {key} must be one of {', '.join(repr(c) for c in choices)}, "
            f"got {number_text(value)}"
        )
    return str(value)


def _seconds(raw: dict, key: str, where: str, default: float) -> float:
    value = raw.get(key, default)
    if not is_finite_number(value) or not 0 <= value <= MAX_SECONDS:
        raise ExecutionSettingsError(
            f"{where}: {key} must be a number of seconds from 0 to {MAX_SECONDS}, "
            f"got {number_text(value)}"
        )
    return float(value)


def _boolean(raw: dict, key: str, where: str) -> bool:
    value = raw.get(key, False)
    if not isinstance(value, bool):
        raise ExecutionSettingsError(
            f"{where}: {key} must be true or false, got {number_text(value)}"
        )
    return value


def _strings(raw: dict, key: str, where: str) -> tuple[str, ...]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(
        isinstance(item, str) and item and "\0" not in item for item in value
    ):
        raise ExecutionSettingsError(
            f'{where}: {key} must be a list of non-empty strings (e.g. ["-f"]), '
            f"got {number_text(value)}"
        )
    return tuple(value)


def _relative_directory(raw: dict, key: str, where: str) -> str:
    value = raw.get(key, ".")
    path = PurePosixPath(value) if isinstance(value, str) else None
    if (
        path is None
        or not value.strip()
        or "\0" in value
        or path.is_absolute()
        or ".." in path.parts
    ):
        raise ExecutionSettingsError(
            f"{where}: {key} must be a directory relative to the repository root (not "
            f'absolute, no "..", e.g. "test"), got {number_text(value)}'
        )
    return path.as_posix()


def _coredump(raw: object, where: str) -> CudaCoredump | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ExecutionSettingsError(
            f"{where}: must be a table with {', '.join(_COREDUMP_KEYS)}, got {number_text(raw)}"
        )
    _no_unknown(raw, _COREDUMP_KEYS, where)
    values = []
    for key, pattern, example in (
        ("switch-variable", _VARIABLE, "SGLANG_CUDA_COREDUMP"),
        ("dir-variable", _VARIABLE, "SGLANG_CUDA_COREDUMP_DIR"),
        ("dir-name", _DIR_NAME, "sglang_cuda_coredumps"),
    ):
        value = raw.get(key)
        if not isinstance(value, str) or not pattern.match(value):
            what = "an environment variable name" if pattern is _VARIABLE else "a directory name"
            raise ExecutionSettingsError(
                f'{where}: {key} must be {what} (e.g. "{example}"), got {number_text(value)}'
            )
        values.append(value)
    return CudaCoredump(*values)
