"""Custom all-reduce over CUDA IPC peer buffers: ``CustomAllReduce(group).all_reduce(x)``.

A sum all-reduce of one tensor across the 2..8 GPUs of one host, for small and medium messages
(latency-bound sizes where NCCL's ring/tree protocols cost several microseconds of overhead).
Each rank owns one IPC-shareable device buffer (signal flags + two staging halves); every rank
maps every other rank's buffer, so a kernel reads its peers' data directly over NVLink / PCIe.

* **one-shot** (small messages): copy the input into the own staging buffer, a cross-GPU
  barrier, then every rank reads every rank's copy, sums in fp32 and writes its output.
* **two-shot** (larger messages): reduce-scatter (rank r sums chunk r from every rank), a second
  barrier, all-gather of the reduced chunks. Less traffic per rank for larger world sizes.
* ``algo="auto"`` (default) takes one-shot up to ``one_shot_max_bytes`` (default
  :func:`default_one_shot_max_bytes`: every size for 2 GPUs, 512 KiB for 3-4, 256 KiB for 5-8), else
  two-shot.

Results are bit-identical on every rank (fp32 accumulation in rank order, one rounding). The
input is copied inside the kernel, so CUDA-graph capture works and replays read new data.

What the caller must guarantee (as with NCCL): every rank of the group calls
:meth:`CustomAllReduce.all_reduce` the same number of times, in the same order, with the same
shape, dtype and ``algo``; the calls of one communicator are ordered on each rank (one stream,
or streams ordered by events). An argument error is raised on the calling rank before anything
is launched; since arguments agree across ranks, every rank raises the same error. If only some
ranks launch, the others wait forever (as NCCL would).

No silent fallback: ``all_reduce`` raises for an input it cannot handle (wrong dtype or device,
non-contiguous, larger than ``max_bytes``, not 16-byte aligned). Callers decide what to do:
check :meth:`CustomAllReduce.can_use` (or :func:`can_use_custom_all_reduce` before creating one)
and call ``torch.distributed.all_reduce`` otherwise.

NVLink multicast (NVLS) is never used: no cuMulticastCreate, no symmetric-memory multimem
operations. See :mod:`jit_kernel.distributed.launch` for the environment that keeps NCCL's
NVLS off in launched processes.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import torch

from jit_kernel.compiler import build_only, is_arch_support_pdl, load_jit, make_cpp_args
from jit_kernel.distributed.peers import (
    MAX_WORLD_SIZE,
    MIN_WORLD_SIZE,
    p2p_problems,
    setup_problems,
)
from jit_kernel.wrapper import cache_once, raise_argument_error, register_precompile

if TYPE_CHECKING:
    import torch.distributed as dist
    from tvm_ffi.module import Module

__all__ = [
    "ALGORITHMS",
    "DEFAULT_MAX_BYTES",
    "MAX_BLOCKS",
    "MAX_WORLD_SIZE",
    "MIN_WORLD_SIZE",
    "SUPPORTED_DTYPES",
    "CustomAllReduce",
    "can_use_custom_all_reduce",
    "default_one_shot_max_bytes",
    "p2p_problems",
    "precompile_custom_all_reduce",
]

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
MAX_BLOCKS = 64  # kMaxBlocks in custom_all_reduce.cuh
MAX_BYTES_LIMIT = 1 << 30  # kMaxBytesLimit in custom_all_reduce.cuh
DEFAULT_MAX_BYTES = 8 * 1024 * 1024
ALIGNMENT = 16  # bytes: input and out data pointers
ALGORITHMS = ("auto", "one_shot", "two_shot")
_ALGO_CODES = {"auto": 0, "one_shot": 1, "two_shot": 2}
_OP = "custom_all_reduce"


def default_one_shot_max_bytes(world_size: int) -> int:
    """Largest message (bytes) that ``algo="auto"`` sends one-shot for ``world_size`` GPUs.

    One-shot reads (W - 1) x size bytes from the peers per rank, two-shot 2 (W - 1) / W x size
    but needs a second barrier: with 2 GPUs the traffic is the same, with 8 one-shot reads 3.5x
    more, so 2 GPUs always take one-shot (the communicator caps the threshold at its
    ``max_bytes``). ``python -m benchmarks.bench_all_reduce`` prints both algorithms side by side
    to tune them per machine (``one_shot_max_bytes=``); its figures are in
    ``verification/verify_multi_gpu.md``.
    """
    if world_size <= 2:
        return 1 << 62
    if world_size <= 4:
        return 512 * 1024
    return 256 * 1024


@cache_once
def _jit_custom_all_reduce_module() -> Module:
    """Build (or load from the cache) the one module: every dtype and world size, both algos."""
    args = make_cpp_args(is_arch_support_pdl())
    exports = ["create", "ipc_handle", "open_peers", "close_peers", "destroy", "epoch"]
    return load_jit(
        "custom_all_reduce",
        *args,
        cuda_files=["distributed/custom_all_reduce.cuh"],
        cuda_wrappers=[(name, name) for name in exports] + [("all_reduce", f"all_reduce<{args}>")],
    )


register_precompile(_jit_custom_all_reduce_module, [()])


def precompile_custom_all_reduce() -> None:
    """Build the module for the current GPU (or ``TVM_FFI_CUDA_ARCH_LIST``) without loading it.

    Launchers call this once in the parent process so that the ranks they spawn find it in the
    cache instead of compiling it several times in parallel.
    """
    with build_only():
        _jit_custom_all_reduce_module.__wrapped__()


def can_use_custom_all_reduce(
    devices: Sequence[int] | None = None,
    *,
    numel: int | None = None,
    dtype: torch.dtype | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> bool:
    """True when a :class:`CustomAllReduce` can run across ``devices`` (default: all visible).

    Checks 2..8 distinct GPUs with peer access between every pair (:func:`p2p_problems` says
    which pair lacks it), and, when given, that ``dtype`` is float16/bfloat16/float32 and
    ``numel`` elements of it fit in ``max_bytes``. Cheap (no compilation), never raises.
    """
    try:
        if dtype is not None and dtype not in SUPPORTED_DTYPES:
            return False
        if type(max_bytes) is not int or not (numel is None or type(numel) is int):
            return False  # a bool is no count of bytes or elements
        if numel is not None:
            element = torch.empty((), dtype=dtype or torch.float32).element_size()
            if numel < 0 or numel * element > max_bytes:
                return False
        return not p2p_problems(devices)
    except Exception:
        return False


# ------------------------------------------------------------------------------- communicator


def _raise_call_error(error: BaseException, input: object, out: object, algo: object) -> NoReturn:
    """The TypeError/ValueError naming the bad argument of ``all_reduce`` (error path only)."""
    if not isinstance(algo, str) or algo not in _ALGO_CODES:
        raise ValueError(
            f"{_OP}: algo must be one of {', '.join(map(repr, ALGORITHMS))}, got {algo!r}"
        ) from None
    raise_argument_error(CustomAllReduce.all_reduce, error, {"input": input, "out": out}, op=_OP)


class CustomAllReduce:
    """A sum all-reduce across the ranks of ``group`` through CUDA IPC peer buffers.

    Creating one is collective: every rank of ``group`` (a torch.distributed process group,
    default the world; NCCL or gloo backend, used only to exchange handles) constructs it with the
    same arguments. Each rank uses its current CUDA device (or ``device``). Requirements, checked
    collectively so that every rank raises the same RuntimeError: 2..8 ranks on one host, one
    distinct GPU per rank, peer access between every pair of them, equal arguments everywhere.

    ``max_bytes``: the largest message in bytes (default 8 MiB); each rank allocates
    2 x ``max_bytes`` + 12 KiB of device memory. ``one_shot_max_bytes``: the ``algo="auto"``
    threshold (default :func:`default_one_shot_max_bytes`). ``max_blocks``: the largest grid
    (default: 64, at most the smallest SM count among the GPUs).

    Use :meth:`all_reduce`; :meth:`close` (collective) frees the buffers. Also a context manager.
    """

    def __init__(
        self,
        group: dist.ProcessGroup | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        *,
        device: torch.device | int | None = None,
        one_shot_max_bytes: int | None = None,
        max_blocks: int | None = None,
    ) -> None:
        import torch.distributed as dist

        self._handle = 0
        for name, value in (("max_bytes", max_bytes), ("one_shot_max_bytes", one_shot_max_bytes)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise TypeError(f"CustomAllReduce: {name} must be an int, got {value!r}")
        if not 0 < max_bytes <= MAX_BYTES_LIMIT:
            raise ValueError(
                f"CustomAllReduce: max_bytes must be in [1, {MAX_BYTES_LIMIT}], got {max_bytes}"
            )
        if one_shot_max_bytes is not None and one_shot_max_bytes < 0:
            raise ValueError(
                f"CustomAllReduce: one_shot_max_bytes must be >= 0, got {one_shot_max_bytes}"
            )
        if max_blocks is not None and (
            isinstance(max_blocks, bool)
            or not isinstance(max_blocks, int)
            or not 1 <= max_blocks <= MAX_BLOCKS
        ):
            raise ValueError(
                f"CustomAllReduce: max_blocks must be an int in [1, {MAX_BLOCKS}], got {max_blocks!r}"
            )
        if isinstance(device, bool):  # torch.device("cuda", True) would be cuda:1
            raise TypeError(
                f"CustomAllReduce: device must be a torch.device or an int, got {device!r}"
            )
        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError(
                "CustomAllReduce: torch.distributed is not initialized; call "
                "torch.distributed.init_process_group first (see jit_kernel.distributed.launch)"
            )
        self._group = group if group is not None else dist.group.WORLD
        self._rank = dist.get_rank(self._group)
        self._world_size = dist.get_world_size(self._group)
        if not MIN_WORLD_SIZE <= self._world_size <= MAX_WORLD_SIZE:
            raise ValueError(
                f"CustomAllReduce: the group has {self._world_size} ranks; supported: "
                f"{MIN_WORLD_SIZE}..{MAX_WORLD_SIZE}"
            )
        if not torch.cuda.is_available():
            raise RuntimeError("CustomAllReduce: no CUDA GPU is visible")
        if device is None:
            device = torch.cuda.current_device()
        self._device = (
            torch.device("cuda", device) if isinstance(device, int) else torch.device(device)
        )
        if self._device.type != "cuda" or self._device.index is None:
            raise ValueError(
                f"CustomAllReduce: device must be a CUDA device with an index, got {device!r}"
            )
        self._max_bytes = max_bytes
        if one_shot_max_bytes is None:
            one_shot_max_bytes = default_one_shot_max_bytes(self._world_size)
        self._one_shot_max_bytes = min(one_shot_max_bytes, max_bytes)
        with torch.cuda.device(self._device):
            self._setup(max_blocks)

    # -- construction (collective) ------------------------------------------------------

    def _gather(self, value: Any) -> list[Any]:
        import torch.distributed as dist

        gathered: list[Any] = [None] * self._world_size
        dist.all_gather_object(gathered, value, group=self._group)
        return gathered

    def _agree(self, error: str | None, what: str) -> None:
        """Raise the same RuntimeError on every rank if ``what`` failed on any rank."""
        errors = self._gather(error)
        failed = [f"rank {rank}: {text}" for rank, text in enumerate(errors) if text]
        if failed:
            raise RuntimeError(f"CustomAllReduce: {what} failed on " + "; ".join(failed))

    def _local_info(self, max_blocks: int | None) -> dict[str, Any]:
        index = self._device.index
        count = torch.cuda.device_count()
        uuids = [str(torch.cuda.get_device_properties(i).uuid) for i in range(count)]
        access = {
            uuids[i]: i == index or bool(torch.cuda.can_device_access_peer(index, i))
            for i in range(count)
        }
        return {
            "host": socket.gethostname(),
            "device": index,
            "uuid": uuids[index],
            "sm_count": torch.cuda.get_device_properties(index).multi_processor_count,
            "access": access,  # peer access from this GPU to each visible GPU, by uuid
            "args": (self._max_bytes, self._one_shot_max_bytes, max_blocks),
        }

    def _setup(self, max_blocks: int | None) -> None:
        infos = self._gather(self._local_info(max_blocks))
        problems = setup_problems(infos)
        if problems:
            raise RuntimeError("CustomAllReduce: cannot run on these ranks: " + "; ".join(problems))
        limit = min(MAX_BLOCKS, *(info["sm_count"] for info in infos))
        self._max_blocks = min(max_blocks, limit) if max_blocks is not None else limit

        error = None
        try:
            module = _jit_custom_all_reduce_module()
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        self._agree(error, "building or loading the kernel module")
        self._module = module
        self._all_reduce_fn = module.all_reduce  # looked up once: the hot path calls it directly

        handle = 0
        error = None
        try:
            handle = module.create(
                self._device.index,
                self._rank,
                self._world_size,
                self._max_bytes,
                self._one_shot_max_bytes,
                self._max_blocks,
            )
            ipc = bytes(module.ipc_handle(handle))
        except Exception as exc:
            error, ipc = f"{type(exc).__name__}: {exc}", b""
        try:
            self._agree(error, "allocating the IPC buffer")
        except BaseException:
            if handle:  # no rank has mapped it yet: free it without waiting for the others
                module.destroy(handle)
            raise
        handles = self._gather(ipc)
        error = None
        try:
            module.open_peers(handle, b"".join(handles))
        except Exception as exc:  # open_peers unmapped what it had opened
            error = f"{type(exc).__name__}: {exc}"
        try:
            self._agree(error, "opening the peers' IPC buffers (cudaIpcOpenMemHandle)")
        except BaseException:
            self._teardown(handle)  # collective: every rank is here, each with a buffer
            raise
        self._handle = handle

    def _teardown(self, handle: int) -> None:
        """Collective: unmap the peers everywhere, then free (no rank frees a mapped buffer)."""
        import torch.distributed as dist

        torch.cuda.synchronize(self._device)
        error = None
        try:
            self._module.close_peers(handle)
        except Exception as exc:
            error = exc
        dist.barrier(group=self._group)
        self._module.destroy(handle)
        if error is not None:
            raise error

    # -- properties -------------------------------------------------------------------------

    @property
    def rank(self) -> int:
        """This process's rank in the group."""
        return self._rank

    @property
    def world_size(self) -> int:
        """The number of ranks (GPUs)."""
        return self._world_size

    @property
    def device(self) -> torch.device:
        """This rank's GPU."""
        return self._device

    @property
    def max_bytes(self) -> int:
        """The largest message in bytes."""
        return self._max_bytes

    @property
    def one_shot_max_bytes(self) -> int:
        """``algo="auto"`` uses one-shot up to this many bytes, two-shot above."""
        return self._one_shot_max_bytes

    @property
    def max_blocks(self) -> int:
        """The largest grid of a call (the same on every rank)."""
        return self._max_blocks

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._handle == 0

    # -- calls ------------------------------------------------------------------------------

    def can_use(self, input: object) -> bool:
        """True when :meth:`all_reduce` accepts ``input``; cheap, never raises.

        ``input`` must be a contiguous float16/bfloat16/float32 tensor on this rank's GPU, at most
        ``max_bytes`` bytes, with a 16-byte aligned data pointer (a fresh allocation always is;
        a view with a storage offset may not be), and the communicator must be open.
        """
        try:
            return (
                self._handle != 0
                and isinstance(input, torch.Tensor)
                and input.device == self._device
                and input.dtype in SUPPORTED_DTYPES
                and input.is_contiguous()
                and input.numel() * input.element_size() <= self._max_bytes
                and input.data_ptr() % ALIGNMENT == 0
            )
        except Exception:
            return False

    def all_reduce(
        self, input: torch.Tensor, out: torch.Tensor | None = None, *, algo: str = "auto"
    ) -> torch.Tensor:
        """Return the element-wise sum of ``input`` over all ranks (written into ``out`` if given).

        Collective: every rank calls it with the same shape, dtype and ``algo``. ``input``: any
        shape, contiguous, float16/bfloat16/float32, on this rank's GPU, at most ``max_bytes``
        bytes, 16-byte aligned data pointer. It is not modified unless ``out`` is ``input``.
        ``out``: optional, same shape/dtype/device, contiguous, 16-byte aligned; ``out=input``
        reduces in place; any other overlap with ``input`` is rejected. Without ``out`` a new
        tensor is returned. ``algo``: ``"auto"``, ``"one_shot"`` or ``"two_shot"``.

        The sum is accumulated in fp32 in rank order and rounded once: bit-identical on every
        rank, within half an ulp of the exact sum (plus fp32 accumulation error). An empty tensor
        returns at once. Asynchronous like any kernel (on the current stream); capturable in a
        CUDA graph. Raises (before launching anything) TypeError for a non-tensor, ValueError for
        an unknown ``algo``, RuntimeError naming the tensor for a wrong dtype, device, size,
        layout or alignment, or when the communicator is closed.
        """
        try:
            if out is None:
                out = torch.empty_like(input)
            self._all_reduce_fn(self._handle, out, input, _ALGO_CODES[algo])
        except (AttributeError, TypeError, KeyError) as error:
            _raise_call_error(error, input, out, algo)
        return out

    def epoch(self) -> int:
        """Completed calls on this rank, read from the device counter (synchronizes; for tests)."""
        if self._handle == 0:
            raise RuntimeError(f"{_OP}: this CustomAllReduce is closed")
        torch.cuda.synchronize(self._device)
        return int(self._module.epoch(self._handle))

    def close(self) -> None:
        """Free the buffers. Collective: every rank calls it (it waits for all of them, then
        frees). Pending work on this GPU is synchronized first. Calling it again does nothing;
        ``all_reduce`` raises afterwards."""
        handle, self._handle = self._handle, 0
        if handle:
            with torch.cuda.device(self._device):
                self._teardown(handle)

    def __enter__(self) -> CustomAllReduce:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        # Not collective: garbage collection happens at different times on different ranks.
        # Unmaps the peers and frees this rank's buffer without waiting for the others; call
        # close() on every rank for an orderly teardown.
        handle = getattr(self, "_handle", 0)
        if handle:
            self._handle = 0
            with contextlib.suppress(Exception):
                self._module.destroy(handle)

    def __repr__(self) -> str:
        state = "closed" if self._handle == 0 else "open"
        return (
            f"CustomAllReduce(rank={self._rank}, world_size={self._world_size}, "
            f"device={self._device}, max_bytes={self._max_bytes}, "
            f"one_shot_max_bytes={self._one_shot_max_bytes}, {state})"
        )
