"""CUDA coredump collection, when the catalog names a switch variable and it is true.

Before the shard: the dump directory is created and stale ``cuda_coredump_*`` files are removed;
every file then runs with the CUDA driver's coredump variables (a variable already set in the
environment is kept, with a notice). After a shard with a failure, the dumps found are listed
with their sizes and how to open them. The directory rule and the variables are SGLang's, so its
``upload-cuda-coredumps`` action finds the dumps.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ci_runner.catalog.execution_settings import CudaCoredump
from ci_runner.env import EnvVarError, get_bool_env

DUMP_PREFIX = "cuda_coredump_"
# Lightweight dumps: no device memory contents, enough for a backtrace in cuda-gdb.
GENERATION_FLAGS = (
    "skip_nonrelocated_elf_images,skip_global_memory,"
    "skip_shared_memory,skip_local_memory,skip_constbank_memory"
)


@dataclass(frozen=True)
class CoredumpCollection:
    """Where this shard's dumps go and the variables every file gets."""

    directory: Path
    variables: dict[str, str]  # to add to each file's environment
    kept: tuple[str, ...]  # CUDA variables the environment already sets (left as they are)


def dump_directory(settings: CudaCoredump, environ: Mapping[str, str]) -> Path:
    """``$<dir-variable>``, else ``$RUNNER_TEMP/<dir-name>``, else ``/tmp/<dir-name>``; plus
    ``<run id>-<attempt>`` inside a GitHub Actions run, so a shared runner never mixes jobs."""
    explicit = environ.get(settings.dir_variable, "")
    runner_temp = environ.get("RUNNER_TEMP", "")
    if explicit:
        base = Path(explicit)
    elif runner_temp:
        base = Path(runner_temp) / settings.dir_name
    else:
        base = Path("/tmp") / settings.dir_name
    run_id = environ.get("GITHUB_RUN_ID", "")
    if run_id:
        attempt = environ.get("GITHUB_RUN_ATTEMPT", "1") or "1"
        for name, value in (("GITHUB_RUN_ID", run_id), ("GITHUB_RUN_ATTEMPT", attempt)):
            if not (value.isascii() and value.isdigit()):  # a name, never a path out of base
                raise EnvVarError(
                    f"environment variable {name}={value[:40]!r} is not a number; GitHub "
                    "Actions sets it to one"
                )
        return base / f"{run_id}-{attempt}"
    return base


def prepare(
    settings: CudaCoredump | None, environ: Mapping[str, str] | None = None
) -> CoredumpCollection | None:
    """The collection of this shard, or None when off. Creates the directory and removes stale
    dumps; raises ``EnvVarError`` when the switch is not a boolean, ``OSError`` when the
    directory cannot be prepared."""
    env = os.environ if environ is None else environ
    if settings is None or not get_bool_env(settings.switch_variable, environ=env):
        return None
    directory = dump_directory(settings, env)
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob(f"{DUMP_PREFIX}*"):
        stale.unlink(missing_ok=True)
    wanted = {
        "CUDA_ENABLE_COREDUMP_ON_EXCEPTION": "1",
        "CUDA_COREDUMP_SHOW_PROGRESS": "1",
        "CUDA_COREDUMP_GENERATION_FLAGS": GENERATION_FLAGS,
        "CUDA_COREDUMP_FILE": f"{directory}/{DUMP_PREFIX}%h.%p.%t",
    }
    kept = tuple(name for name in wanted if name in env)
    variables = {name: value for name, value in wanted.items() if name not in env}
    return CoredumpCollection(directory, variables, kept)


def report_lines(
    collection: CoredumpCollection, environ: Mapping[str, str] | None = None
) -> list[str]:
    """The dumps found after a failed shard, with sizes and how to analyse or download them."""
    env = os.environ if environ is None else environ
    dumps = sorted(collection.directory.glob(f"{DUMP_PREFIX}*"))
    if not dumps:
        return []
    lines = [f"CUDA coredump(s) found ({len(dumps)} file(s)) in {collection.directory}:"]
    for dump in dumps:
        try:
            size = dump.stat().st_size / (1024 * 1024)
        except OSError:
            continue
        lines.append(f"  {dump} ({size:.1f} MB)")
    lines.append("analyse one with: cuda-gdb -c <coredump file>")
    run_id = env.get("GITHUB_RUN_ID", "")
    if run_id:
        repository = env.get("GITHUB_REPOSITORY", "<owner>/<repo>")
        lines.append(f"download them from CI: gh run download {run_id} --repo {repository}")
    return lines
