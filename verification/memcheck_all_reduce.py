#!/usr/bin/env python3
"""Run the custom all-reduce's checks with ONE rank under compute-sanitizer (memcheck).

    python -m verification.memcheck_all_reduce                       # 2 ranks, rank 0 sanitized
    python -m verification.memcheck_all_reduce --world-size 4 --sanitized-rank 2 --log-dir /tmp/mc

Rank ``--sanitized-rank`` runs

    compute-sanitizer --tool memcheck --error-exitcode 86 \\
        python -m testing.all_reduce_selftest --from-env --quick --backend gloo

and every other rank runs the same ``python -m ...`` command plainly. They meet through the
torchrun-style variables (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``MASTER_ADDR=127.0.0.1``,
``MASTER_PORT``: env rendezvous); NVLink multicast is off in every rank. The gloo backend keeps
NCCL and its kernels out of the sanitized process (the handle exchange runs on the CPU); the
checks compare with an exact float64 sum instead of NCCL. The kernel module is built here first,
so no rank compiles and nvcc never runs under the sanitizer.

Two passes: ``nocache`` (every check group but ``graph``, with
``PYTORCH_NO_CUDA_MEMORY_CACHING=1`` on the sanitized rank so that every tensor is its own
allocation and memcheck sees accesses past its end) and ``graph`` (CUDA-graph capture needs the
caching allocator). Each rank's output goes to ``<log-dir>/<pass>.rank<r>.log``. Exit status 0
when every rank of both passes passed its checks and the sanitizer reported 0 errors; 1
otherwise; 2 when it cannot run (fewer GPUs, no peer access, no compute-sanitizer).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

from jit_kernel.distributed.launch import NVLS_OFF_ENV, free_port  # noqa: E402
from testing.all_reduce_checks import GROUPS  # noqa: E402

SANITIZER_EXIT_CODE = 86
# (name, check groups, PYTORCH_NO_CUDA_MEMORY_CACHING on the sanitized rank). CUDA-graph capture
# needs the caching allocator (no cudaMalloc while capturing), so it runs in a pass of its own.
PASSES = (
    ("nocache", tuple(g for g in GROUPS if g != "graph"), True),
    ("graph", ("graph",), False),
)
SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error")


def find_sanitizer(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    candidates = [shutil.which("compute-sanitizer")]
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root:
            candidates.append(str(Path(root) / "bin" / "compute-sanitizer"))
    return next((c for c in candidates if c and Path(c).is_file()), None)


def rank_command(
    rank: int, args: argparse.Namespace, sanitizer: str, groups: tuple[str, ...]
) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "testing.all_reduce_selftest",
        "--from-env",
        "--quick",
        "--backend",
        "gloo",
        "--timeout",
        str(args.timeout),
        "--no-topology",
        "--groups",
        *groups,
    ]
    if rank == args.sanitized_rank:
        command = [
            sanitizer,
            "--tool",
            args.tool,
            "--error-exitcode",
            str(SANITIZER_EXIT_CODE),
            "--target-processes",
            "application-only",
            *command,
        ]
    return command


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--sanitized-rank", type=int, default=0)
    parser.add_argument("--tool", default="memcheck", help="compute-sanitizer tool (memcheck)")
    parser.add_argument("--sanitizer", help="path of compute-sanitizer (default: PATH, CUDA_HOME)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per pass")
    parser.add_argument("--log-dir", type=Path, help="where rank<r>.log go (default: a temp dir)")
    args = parser.parse_args()

    import torch

    from jit_kernel.all_reduce import p2p_problems, precompile_custom_all_reduce

    if not 0 <= args.sanitized_rank < args.world_size:
        parser.error(f"--sanitized-rank must be in [0, {args.world_size})")
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count < args.world_size:
        print(f"memcheck_all_reduce: needs {args.world_size} GPUs, {count} visible", flush=True)
        return 2
    problems = p2p_problems(list(range(args.world_size)))
    if problems:
        print("memcheck_all_reduce: cannot run: " + "; ".join(problems), flush=True)
        return 2
    sanitizer = find_sanitizer(args.sanitizer)
    if sanitizer is None:
        print("memcheck_all_reduce: compute-sanitizer not found (PATH, CUDA_HOME)", flush=True)
        return 2
    precompile_custom_all_reduce()

    log_dir = args.log_dir or Path(tempfile.mkdtemp(prefix="memcheck_all_reduce_"))
    log_dir.mkdir(parents=True, exist_ok=True)
    ok = True
    for name, groups, no_caching in PASSES:
        ok &= run_pass(args, sanitizer, log_dir, name, groups, no_caching)
    print("memcheck_all_reduce: " + ("PASSED" if ok else "FAILED"), flush=True)
    return 0 if ok else 1


def run_pass(
    args: argparse.Namespace,
    sanitizer: str,
    log_dir: Path,
    name: str,
    groups: tuple[str, ...],
    no_caching: bool,
) -> bool:
    """Start every rank of one pass, wait (kill on timeout), report; True when it passed."""
    port = free_port()
    base_env = dict(os.environ)
    base_env.update(NVLS_OFF_ENV)
    base_env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO_ROOT), base_env.get("PYTHONPATH")])
    )
    base_env.update(
        {"WORLD_SIZE": str(args.world_size), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
    )
    print(f"=== pass {name}: groups {' '.join(groups)}", flush=True)
    processes = []
    paths = []
    for rank in range(args.world_size):
        env = dict(
            base_env, RANK=str(rank), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(args.world_size)
        )
        if no_caching and rank == args.sanitized_rank:
            # Every tensor its own cudaMalloc: memcheck sees accesses past a tensor's end.
            env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
        command = rank_command(rank, args, sanitizer, groups)
        path = log_dir / f"{name}.rank{rank}.log"
        paths.append(path)
        with open(path, "w") as log:
            log.write("$ " + " ".join(command) + "\n")
            log.flush()
            print(f"rank {rank}: {' '.join(command)}", flush=True)
            processes.append(
                subprocess.Popen(
                    command,
                    cwd=REPO_ROOT,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group: killed as a whole
                )
            )

    deadline = time.monotonic() + args.timeout
    timed_out = False
    while any(process.poll() is None for process in processes):
        if time.monotonic() > deadline:
            timed_out = True
            for process in processes:
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGKILL)  # the session started above
            break
        time.sleep(1.0)
    for process in processes:
        process.wait()

    ok = not timed_out
    for rank, (process, path) in enumerate(zip(processes, paths, strict=True)):
        text = path.read_text(errors="replace")
        status = f"exit code {process.returncode}"
        if rank == args.sanitized_rank:
            match = SUMMARY.search(text)
            errors = int(match.group(1)) if match else None
            found = f"{errors} errors" if errors is not None else "no ERROR SUMMARY line"
            status += f", {args.tool}: {found}"
            ok &= errors == 0
        ok &= process.returncode == 0
        print(f"rank {rank}: {status} (log {path})", flush=True)
    if timed_out:
        print(f"pass {name}: timed out after {args.timeout:g} s (ranks killed)", flush=True)
    report = paths[0].read_text(errors="replace")
    start = report.find("world_size=")
    if start >= 0:
        print(report[start:].rstrip(), flush=True)
    print(f"=== pass {name}: {'passed' if ok else 'FAILED'}", flush=True)
    return ok


if __name__ == "__main__":
    sys.exit(main())
