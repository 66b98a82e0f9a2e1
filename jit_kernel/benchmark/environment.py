"""Where a benchmark ran: the environment block of the JSON, and repository-relative locations.

Every value that cannot be found is ``None``, and ``notes`` says why, so a stored result never
claims a GPU, driver or commit it did not see. No host name is recorded.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

COMMAND_TIMEOUT_S = 10  # nvidia-smi and git answer in well under a second on a healthy machine
COPY_BYTES = 256 * 2**20  # copy-bandwidth probe: 256 MiB each way, 5x an H100's 50 MB L2


def repository_root(path: Path) -> Path | None:
    """The nearest directory at or above ``path`` holding ``.git`` (a dir or a worktree file)."""
    for candidate in (path, *path.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def relative_location(path: str | Path) -> str:
    """``path`` relative to its repository root, else to the working directory, else as given.

    Posix separators, so a result written on one machine names the same file on another.
    """
    resolved = Path(path).resolve()
    for base in (repository_root(resolved.parent), Path.cwd().resolve()):
        if base is not None and resolved.is_relative_to(base):
            return resolved.relative_to(base).as_posix()
    return resolved.as_posix()


def _command_output(command: list[str], cwd: Path | None = None) -> tuple[str | None, str]:
    """``(stripped stdout, "")`` or ``(None, why not)``."""
    if shutil.which(command[0]) is None:
        return None, f"{command[0]} is not on PATH"
    try:
        done = subprocess.run(
            command,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"{' '.join(command)}: {error}"
    if done.returncode != 0:
        return None, f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()[:200]}"
    return done.stdout.strip(), ""


def _package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _commit(notes: list[str]) -> tuple[str | None, bool | None]:
    """The commit of the checkout that holds jit_kernel, and whether it has local changes."""
    root = repository_root(Path(__file__).resolve().parent)
    if root is None:
        notes.append("commit: jit_kernel is not inside a git checkout")
        return None, None
    sha, why = _command_output(["git", "rev-parse", "HEAD"], cwd=root)
    if sha is None:
        notes.append(f"commit: {why}")
        return None, None
    status, why = _command_output(["git", "status", "--porcelain", "--untracked-files=no"], root)
    if status is None:
        notes.append(f"dirty: {why}")
    return sha, None if status is None else bool(status)


def _gpu(notes: list[str]) -> tuple[str | None, str | None, str | None]:
    """``(GPU name, driver version, CUDA runtime of torch)``."""
    torch = sys.modules.get("torch")  # a benchmark that never imported torch ran no GPU code
    if torch is None:
        notes.append("gpu: the benchmark did not import torch")
        return None, None, None
    runtime = torch.version.cuda
    if not torch.cuda.is_available():
        notes.append("gpu: torch.cuda.is_available() is False")
        return None, None, runtime
    name = torch.cuda.get_device_name(torch.cuda.current_device())
    driver, why = _command_output(
        ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", "--id=0"]
    )
    if driver is None:
        notes.append(f"driver: {why}")
    return name, driver, runtime


def measure_copy_gbps() -> float | None:
    """GB/s (1e9 bytes/s, read + write) of a device-to-device copy of 256 MiB: the practical peak.

    ``None`` without a GPU (or when the benchmark never imported torch). Timed by do_bench like every cell, so the line the plot draws is
    measured the same way as the kernels under it.
    """
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    from jit_kernel.benchmark.timing import do_bench

    src = torch.empty(COPY_BYTES, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    result = do_bench(
        dst.copy_,
        input_args=(src,),
        graph_clone_args=None,  # 256 MiB already spans several L2 sizes
        memory_args=(src,),
        memory_output=(dst,),
        disable_log_bandwidth=False,
    )
    del src, dst
    return result.bandwidth_gbps


def collect_environment(copy_gbps: float | None = None) -> dict[str, Any]:
    """The ``environment`` block: GPU, driver, CUDA runtime, package versions, commit, time."""
    notes: list[str] = []
    gpu, driver, runtime = _gpu(notes)
    commit, dirty = _commit(notes)
    torch_version = _package_version("torch")
    return {
        "gpu": gpu,
        "driver": driver,
        "cuda_runtime": runtime,
        "torch": torch_version,
        "apache_tvm_ffi": _package_version("apache-tvm-ffi"),
        "jit_kernel_commit": commit,
        "jit_kernel_dirty": dirty,
        "python": platform.python_version(),
        "timestamp": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "copy_gbps": copy_gbps,
        "notes": notes,
    }
