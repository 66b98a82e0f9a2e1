"""Run a function on several GPUs, one spawned process per rank, for multi-GPU tests/benchmarks.

``run_on_gpus(world_size, fn, *args, timeout=...) -> [result of rank 0, result of rank 1, ...]``

* one process per rank, started with the ``spawn`` start method (never fork a CUDA process);
* rendezvous on a free TCP port of 127.0.0.1 (``MASTER_ADDR``/``MASTER_PORT``, ``RANK``,
  ``LOCAL_RANK``, ``WORLD_SIZE`` are also exported, as torchrun does);
* in each child, before CUDA or NCCL is initialized: NVLink multicast off
  (:data:`NVLS_OFF_ENV`), ``torch.cuda.set_device(devices[rank])`` (rank r on GPU r by
  default), ``init_process_group(backend)``; then ``fn(*args)``; then the group is destroyed;
* ``fn`` and ``args`` are pickled into the children, so ``fn`` must be a module-level function
  of an importable module, and its result must be picklable;
* a rank that raises, crashes or exits without a result fails the whole call with a
  :class:`WorkerError` that carries each rank's traceback or exit code. The other ranks get
  ``grace`` seconds to finish (they are usually stuck in a collective waiting for the failed
  rank), then they are killed. After ``timeout`` seconds every rank still running is killed and
  the error says which ranks did not finish. It never hangs.

:func:`init_from_env` joins a group from the torchrun-style variables instead (for processes
started by another launcher, e.g. one rank under ``compute-sanitizer``, see
``verification/memcheck_all_reduce.py``).
"""

from __future__ import annotations

import multiprocessing
import operator
import os
import pickle
import queue
import socket
import time
import traceback
from collections.abc import Callable, Iterable, MutableMapping, Sequence
from datetime import timedelta
from typing import Any

__all__ = [
    "NVLS_OFF_ENV",
    "WorkerError",
    "disable_nvlink_multicast",
    "free_port",
    "init_from_env",
    "run_on_gpus",
]

# NVLink multicast (NVLS / multimem) can take shared GPUs out of service: keep it off in every
# process that launches or joins a multi-GPU job.
NVLS_OFF_ENV = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}

DEFAULT_TIMEOUT = 600.0  # seconds for the whole run
DEFAULT_GRACE = 10.0  # seconds the other ranks get after one rank failed
EXIT_GRACE = 30.0  # seconds a rank that reported its result gets to exit (group teardown)


class WorkerError(RuntimeError):
    """A rank raised, crashed or did not finish; ``failures`` maps rank -> what happened."""

    def __init__(self, message: str, failures: dict[int, str]) -> None:
        super().__init__(message)
        self.failures = failures


def disable_nvlink_multicast(environ: MutableMapping[str, str] | None = None) -> None:
    """Set :data:`NVLS_OFF_ENV` in ``environ`` (default ``os.environ``), overriding any value."""
    (os.environ if environ is None else environ).update(NVLS_OFF_ENV)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _init_group(
    rank: int,
    world_size: int,
    backend: str,
    device: int | None,
    init_method: str,
    timeout: float,
) -> None:
    import torch
    import torch.distributed as dist

    kwargs: dict[str, Any] = {}
    if device is not None:
        torch.cuda.set_device(device)
        if backend == "nccl":
            kwargs["device_id"] = torch.device("cuda", device)
    dist.init_process_group(
        backend,
        init_method=init_method,
        rank=rank,
        world_size=world_size,
        timeout=timedelta(seconds=timeout),
        **kwargs,
    )


def _destroy_group() -> None:
    try:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()
    except Exception:
        traceback.print_exc()


def _child_main(
    rank: int,
    world_size: int,
    port: int,
    backend: str,
    device: int | None,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    results: Any,
    extra_env: dict[str, str],
    timeout: float,
) -> None:
    """One rank: environment, group, ``fn(*args)``, report (as pickled bytes), teardown."""
    os.environ.update(NVLS_OFF_ENV)
    os.environ.update(extra_env)
    os.environ.update(
        {
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "WORLD_SIZE": str(world_size),
            "LOCAL_WORLD_SIZE": str(world_size),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
        }
    )
    try:
        _init_group(rank, world_size, backend, device, f"tcp://127.0.0.1:{port}", timeout)
        value = fn(*args)
        payload = pickle.dumps((rank, True, value))
    except BaseException:
        payload = pickle.dumps((rank, False, traceback.format_exc()))
    results.put(payload)
    _destroy_group()


def _describe_fn(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def device_indices(devices: Iterable[object], what: str) -> list[int]:
    """The CUDA device indices in ``devices``; a TypeError starting with ``what`` for an entry
    that is not an integer (a bool or a float is no device index: ``int()`` would take both)."""
    indices = []
    for device in devices:
        try:
            if isinstance(device, bool):
                raise TypeError
            indices.append(operator.index(device))
        except TypeError:
            raise TypeError(f"{what} must be CUDA device indices (ints), got {device!r}") from None
    return indices


def _resolve_devices(
    world_size: int, backend: str, devices: Sequence[int] | str | None
) -> list[int | None]:
    if devices == "auto":
        devices = list(range(world_size)) if backend == "nccl" else None
    if devices is None:
        return [None] * world_size
    devices = device_indices(devices, "run_on_gpus: devices")  # type: ignore[arg-type]
    if len(devices) != world_size:
        raise ValueError(
            f"run_on_gpus: {len(devices)} devices given for world size {world_size}: {devices}"
        )
    import torch

    count = torch.cuda.device_count()
    if max(devices) >= count or min(devices) < 0:
        raise ValueError(
            f"run_on_gpus: world size {world_size} needs GPUs {devices} but {count} are visible "
            f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')})"
        )
    return list(devices)


def run_on_gpus(
    world_size: int,
    fn: Callable[..., Any],
    *args: Any,
    timeout: float = DEFAULT_TIMEOUT,
    backend: str = "nccl",
    devices: Sequence[int] | str | None = "auto",
    grace: float = DEFAULT_GRACE,
    env: dict[str, str] | None = None,
) -> list[Any]:
    """Run ``fn(*args)`` in ``world_size`` spawned ranks of a fresh process group; return the
    results in rank order.

    ``backend``: ``"nccl"`` (default) or ``"gloo"`` (no GPU needed). ``devices``: the GPU of
    each rank; ``"auto"`` means rank r on GPU r for NCCL and no GPU (no ``set_device``) for
    gloo. ``env``: extra environment variables for the children (the NVLS-off variables always
    win). ``timeout``: seconds for the whole run; ``grace``: seconds the remaining ranks get once
    one rank failed. Raises ValueError for a bad world size or too few GPUs, TypeError when
    ``fn`` cannot be pickled, and :class:`WorkerError` when a rank failed or did not finish.
    """
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"run_on_gpus: world_size must be a positive int, got {world_size!r}")
    if timeout <= 0:
        raise ValueError(f"run_on_gpus: timeout must be positive, got {timeout}")
    rank_devices = _resolve_devices(world_size, backend, devices)
    disable_nvlink_multicast()  # the parent too: it may use NCCL itself, and children inherit
    child_env = {key: str(value) for key, value in (env or {}).items()}
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    port = free_port()
    name = _describe_fn(fn)
    processes: list[Any] = []
    reported: set[int] = set()
    try:
        for rank in range(world_size):
            process = context.Process(
                target=_child_main,
                args=(
                    rank,
                    world_size,
                    port,
                    backend,
                    rank_devices[rank],
                    fn,
                    args,
                    results,
                    child_env,
                    timeout,
                ),
                name=f"rank{rank}",
                daemon=True,
            )
            try:
                process.start()
            except (pickle.PicklingError, AttributeError, TypeError) as error:
                raise TypeError(
                    f"run_on_gpus: cannot send {name} and its arguments to the spawned ranks "
                    f"(they must be picklable; fn must be a module-level function): {error}"
                ) from error
            processes.append(process)
        values, failures, reported = _collect(processes, results, timeout, grace)
    finally:
        _stop(processes, reported)
        results.close()
    if failures:
        lines = [f"run_on_gpus({name}, world_size={world_size}, backend={backend}) failed:"]
        for rank in sorted(failures):
            lines.append(f"--- rank {rank}: {failures[rank].rstrip()}")
        raise WorkerError("\n".join(lines), failures)
    return [values[rank] for rank in range(world_size)]


def _collect(
    processes: list[Any], results: Any, timeout: float, grace: float
) -> tuple[dict[int, Any], dict[int, str], set[int]]:
    """Read the ranks' reports until all are in, one failed (+ grace), or the time is up.
    Returns the results, the failures and the ranks that reported (a result or an exception)."""
    world_size = len(processes)
    values: dict[int, Any] = {}
    failures: dict[int, str] = {}
    reported: set[int] = set()
    start = time.monotonic()
    deadline = start + timeout
    first_failure: float | None = None

    def receive(payload: bytes) -> None:
        nonlocal deadline, first_failure
        rank, ok, value = pickle.loads(payload)
        reported.add(rank)
        if ok:
            values[rank] = value
        else:
            failures[rank] = f"raised:\n{value}"
            if first_failure is None:
                first_failure = time.monotonic()
                deadline = min(deadline, first_failure + grace)

    def pending() -> list[int]:
        return [rank for rank in range(world_size) if rank not in values and rank not in failures]

    while pending():
        now = time.monotonic()
        if now >= deadline:
            break
        try:
            receive(results.get(timeout=min(0.5, deadline - now)))
            continue
        except queue.Empty:
            pass
        for rank in pending():
            code = processes[rank].exitcode
            if code is None:
                continue
            try:  # it may have reported just before exiting: drain what is in flight
                while True:
                    receive(results.get(timeout=0.5))
            except queue.Empty:
                pass
            if rank in pending():
                failures[rank] = f"exited with code {code} without reporting a result"
                if first_failure is None:
                    first_failure = time.monotonic()
                    deadline = min(deadline, first_failure + grace)
    for rank in pending():
        if first_failure is not None:
            failures[rank] = (
                f"did not finish within {grace:g} s after another rank failed (killed; "
                "probably waiting for the failed rank in a collective or a kernel)"
            )
        else:
            failures[rank] = (
                f"did not finish within the {timeout:g} s timeout (killed; hung in a "
                "collective or a kernel, or too slow)"
            )
    return values, failures, reported


def _stop(processes: list[Any], reported: set[int]) -> None:
    """Kill (by pid) every child still running, giving ranks that reported a result up to
    EXIT_GRACE seconds to finish their teardown first; a rank that never reported is killed
    at once (it is hung, or waiting for a rank that failed)."""
    deadline = time.monotonic() + EXIT_GRACE
    for rank, process in enumerate(processes):
        if rank in reported and process.exitcode is None:
            process.join(timeout=max(0.0, deadline - time.monotonic()))
    for process in processes:
        if process.is_alive():
            process.kill()
    for process in processes:
        process.join(timeout=10)


def init_from_env(backend: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> tuple[int, int]:
    """Join a process group from torchrun-style variables; returns ``(rank, world_size)``.

    Reads ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT`` and ``LOCAL_RANK`` (default:
    ``RANK``). Turns NVLink multicast off first, selects GPU ``LOCAL_RANK`` when CUDA is
    available, and initializes ``backend`` (default: NCCL with a GPU, else gloo).
    """
    missing = [
        key for key in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if key not in os.environ
    ]
    if missing:
        raise RuntimeError(f"init_from_env: environment variables not set: {', '.join(missing)}")
    disable_nvlink_multicast()
    import torch

    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    device = local_rank if torch.cuda.is_available() else None
    if backend is None:
        backend = "nccl" if device is not None else "gloo"
    _init_group(rank, world_size, backend, device, "env://", timeout)
    return rank, world_size
