"""``do_bench``: time one callable on the GPU with CUDA events.

CUDA-graph mode (default): ``n`` input sets are made (set 0 = the caller's inputs, sets 1..n-1 =
clones of the arguments selected by ``graph_clone_args``/``graph_clone_kwargs``), where
``n = ceil(ROTATION_FACTOR * L2 / set_bytes) + 1`` clamped to [2, MAX_INPUT_SETS], so the
rotating working set is several times the L2 and cannot stay resident. One graph captures
``calls`` invocations cycling through the sets (``calls`` = the multiple of ``n`` at or above
100); each replay, bracketed by CUDA events, gives one sample (elapsed / calls). Replays run
back to back; since ``calls`` is a multiple of ``n`` the rotation continues across replays.
The sets exist before the ``warmup_iters`` eager calls, which come right before the capture.
``make_input_sets`` makes the sets once, to time several functions over the same memory
(``graph_input_sets``).

Eager mode (``use_cuda_graph=False``): before every timed call a buffer of
``EAGER_FLUSH_FACTOR * L2`` bytes is zeroed to evict the L2; each call is one sample.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import torch

from jit_kernel.benchmark.metrics import compute_metrics, normalize_metrics
from jit_kernel.benchmark.results import BenchResult
from jit_kernel.env import DISABLE_LOG_BANDWIDTH, get_bool_env

ROTATION_FACTOR = 4  # the input sets together span at least this many L2 sizes
MAX_INPUT_SETS = 64  # cap on input sets (clones cost memory and capture time)
TARGET_CALLS_PER_REPLAY = 100
MIN_REPLAYS = 10
EAGER_FLUSH_FACTOR = 2  # eager mode zeroes this many L2 sizes before each call
PASS_THROUGH_TYPES = (bool, int, float, complex, str, bytes, type(None), torch.dtype, torch.device)

InputSet = tuple[list[Any], dict[str, Any]]  # one call's (args, kwargs) in the graph rotation

_side_streams: dict[int, torch.cuda.Stream] = {}
_flush_buffers: dict[int, torch.Tensor] = {}


class DoBenchError(ValueError):
    """An argument of ``do_bench`` is invalid; the message names it."""


# -- pure helpers (no GPU) --------------------------------------------------------------------


def count_bytes(obj: Any) -> int:
    """Sum of ``nbytes`` of every tensor in ``obj`` (recursing into lists, tuples, dicts)."""
    if isinstance(obj, torch.Tensor):
        return obj.nbytes
    if isinstance(obj, Mapping):
        return sum(count_bytes(v) for v in obj.values())
    if isinstance(obj, list | tuple):
        return sum(count_bytes(v) for v in obj)
    return 0


def choose_input_sets(
    set_bytes: int, l2_bytes: int, factor: float = ROTATION_FACTOR, cap: int = MAX_INPUT_SETS
) -> int:
    """Input sets to rotate: ``ceil(factor * l2 / set_bytes) + 1`` in [2, cap]; 1 if nothing."""
    if set_bytes <= 0:
        return 1
    wanted = math.ceil(factor * l2_bytes / set_bytes) + 1
    return max(2, min(wanted, cap))


def calls_per_replay(input_sets: int, target: int = TARGET_CALLS_PER_REPLAY) -> int:
    """The smallest multiple of ``input_sets`` that is at least ``target``."""
    return input_sets * max(1, math.ceil(target / input_sets))


def _clone_selection(selection: object, option: str, expected: str) -> Iterable[Any] | None:
    """The items a ``graph_clone_*`` selection names: ``None`` for ``"all"``, ``()`` for ``None``.

    A string or a non-iterable raises DoBenchError naming ``option`` and what it ``expected``.
    """
    if isinstance(selection, str) and selection == "all":
        return None
    if selection is None:
        return ()
    if isinstance(selection, str | bytes) or not isinstance(selection, Iterable):
        raise DoBenchError(
            f"do_bench: {option} must be 'all', None or {expected}, got {selection!r}"
        )
    return selection


def select_clone_indices(selection: object, input_args: Sequence[Any]) -> tuple[int, ...]:
    """Validate ``graph_clone_args``: ``"all"``, ``None`` or an iterable of argument indices."""
    chosen = _clone_selection(selection, "graph_clone_args", "indices into input_args")
    if chosen is None:
        return tuple(range(len(input_args)))
    indices = []
    for index in chosen:
        if isinstance(index, bool) or not isinstance(index, int):
            raise DoBenchError(f"do_bench: graph_clone_args entry {index!r} is not an int index")
        if not -len(input_args) <= index < len(input_args):
            raise DoBenchError(
                f"do_bench: graph_clone_args index {index} is out of range for "
                f"{len(input_args)} input_args"
            )
        indices.append(index % len(input_args))
    return tuple(sorted(set(indices)))


def select_clone_keys(selection: object, input_kwargs: Mapping[str, Any]) -> tuple[str, ...]:
    """Validate ``graph_clone_kwargs``: ``"all"``, ``None`` or an iterable of keys."""
    chosen = _clone_selection(selection, "graph_clone_kwargs", "keys of input_kwargs")
    if chosen is None:
        return tuple(input_kwargs)
    keys = []
    for key in chosen:
        if key not in input_kwargs:
            raise DoBenchError(
                f"do_bench: graph_clone_kwargs key {key!r} is not in input_kwargs "
                f"(keys: {', '.join(map(repr, input_kwargs)) or 'none'})"
            )
        keys.append(key)
    return tuple(dict.fromkeys(keys))


def clone_tensor(tensor: torch.Tensor) -> torch.Tensor:
    """A copy with the same shape and strides, its data pointer in the same 256-byte phase."""
    offset = tensor.storage_offset() % max(1, 256 // tensor.element_size())
    if tensor.numel() == 0 or (offset == 0 and tensor.is_contiguous()):
        return tensor.clone(memory_format=torch.contiguous_format)
    span = 1 + sum(
        (size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride(), strict=True)
    )
    buffer = torch.empty(offset + span, dtype=tensor.dtype, device=tensor.device)
    copy = buffer.as_strided(tensor.shape, tensor.stride(), offset)
    source, target = tensor, copy
    for dim, stride in enumerate(tensor.stride()):
        if stride == 0:  # broadcast dimension: every index aliases index 0
            source, target = source.narrow(dim, 0, 1), target.narrow(dim, 0, 1)
    target.copy_(source)
    return copy


def deep_clone(obj: Any, where: str) -> Any:
    """Clone tensors inside ``obj``; scalars, dtypes, devices and None are shared."""
    if isinstance(obj, torch.Tensor):
        return clone_tensor(obj)
    if isinstance(obj, PASS_THROUGH_TYPES):
        return obj
    if isinstance(obj, Mapping):
        return type(obj)({k: deep_clone(v, f"{where}[{k!r}]") for k, v in obj.items()})
    if isinstance(obj, list | tuple):
        items = [deep_clone(v, f"{where}[{i}]") for i, v in enumerate(obj)]
        if hasattr(obj, "_fields"):  # namedtuple
            return type(obj)(*items)
        return type(obj)(items)
    raise DoBenchError(
        f"do_bench: cannot clone {where} of type {type(obj).__name__} for the CUDA-graph input "
        "rotation; leave it out of graph_clone_args/graph_clone_kwargs"
    )


def _check_count(name: str, value: object, minimum: int, where: str = "do_bench") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise DoBenchError(f"{where}: {name} must be an int >= {minimum}, got {value!r}")
    return value


def _check_inputs(input_args: object, input_kwargs: object, where: str) -> dict[str, Any]:
    """``input_kwargs`` as a dict, once both inputs have the right types (else DoBenchError)."""
    if isinstance(input_args, str | bytes) or not isinstance(input_args, Sequence):
        raise DoBenchError(f"{where}: input_args must be a tuple or list, got {input_args!r}")
    kwargs = {} if input_kwargs is None else input_kwargs
    if not isinstance(kwargs, Mapping):
        raise DoBenchError(f"{where}: input_kwargs must be a dict, got {input_kwargs!r}")
    return dict(kwargs)


def _check_rotation(rotation_factor: object, max_input_sets: object, where: str) -> None:
    _check_count("max_input_sets", max_input_sets, 2, where)
    if not isinstance(rotation_factor, int | float) or rotation_factor <= 0:
        raise DoBenchError(f"{where}: rotation_factor must be > 0, got {rotation_factor!r}")


def check_input_sets(sets: object) -> tuple[InputSet, ...]:
    """Validate ``graph_input_sets``: a non-empty tuple or list of ``(args, kwargs)`` pairs."""
    if isinstance(sets, str | bytes) or not isinstance(sets, Sequence) or not sets:
        raise DoBenchError(
            "do_bench: graph_input_sets must be a non-empty tuple or list of (args, kwargs) "
            f"pairs (make_input_sets makes one), got {sets!r}"
        )
    checked = []
    for index, pair in enumerate(sets):
        if not (isinstance(pair, tuple | list) and len(pair) == 2):
            raise DoBenchError(
                f"do_bench: graph_input_sets[{index}] must be an (args, kwargs) pair, got {pair!r}"
            )
        kwargs = _check_inputs(pair[0], pair[1], f"do_bench: graph_input_sets[{index}]")
        checked.append((list(pair[0]), kwargs))
    return tuple(checked)


def _memory_footprint(
    fn: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    memory_args: object,
    memory_output: object,
    extra_memory_args: object,
    extra_memory_footprint: int,
) -> int:
    if isinstance(memory_args, str):  # "all", checked by do_bench
        inputs = count_bytes(list(args)) + count_bytes(kwargs)
    else:
        inputs = count_bytes(memory_args)
    if isinstance(memory_output, str):  # "out", checked by do_bench
        outputs = count_bytes(fn(*args, **kwargs))
    else:
        outputs = 0 if memory_output is None else count_bytes(memory_output)
    return extra_memory_footprint + count_bytes(extra_memory_args) + inputs + outputs


# -- GPU timing -------------------------------------------------------------------------------


def _find_device(args: Sequence[Any], kwargs: Mapping[str, Any]) -> torch.device:
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor) and value.is_cuda:
            return value.device
    return torch.device("cuda", torch.cuda.current_device())


def l2_cache_bytes(device: torch.device) -> int:
    """The device's L2 size in bytes (50 MB on an H100)."""
    return int(torch.cuda.get_device_properties(device).L2_cache_size)


def _side_stream(device: torch.device) -> torch.cuda.Stream:
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _side_streams:
        _side_streams[index] = torch.cuda.Stream(device=device)
    return _side_streams[index]


def _flush_buffer(device: torch.device, nbytes: int) -> torch.Tensor:
    index = device.index if device.index is not None else torch.cuda.current_device()
    buffer = _flush_buffers.get(index)
    if buffer is None or buffer.nbytes < nbytes:
        buffer = torch.empty(nbytes // 4 + 1, dtype=torch.int32, device=device)
        _flush_buffers[index] = buffer
    return buffer


def _clone_sets(
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    clone_indices: tuple[int, ...],
    clone_keys: tuple[str, ...],
    l2_bytes: int,
    rotation_factor: float,
    max_input_sets: int,
) -> tuple[InputSet, ...]:
    """Set 0 = ``args``/``kwargs``; then clones of the selected ones, ``choose_input_sets`` in all."""
    set_bytes = count_bytes([args[i] for i in clone_indices]) + count_bytes(
        [kwargs[k] for k in clone_keys]
    )
    input_sets = choose_input_sets(set_bytes, l2_bytes, rotation_factor, max_input_sets)
    sets: list[InputSet] = [(list(args), dict(kwargs))]
    for _ in range(input_sets - 1):
        cloned_args = [
            deep_clone(a, f"input_args[{i}]") if i in clone_indices else a
            for i, a in enumerate(args)
        ]
        cloned_kwargs = {
            k: deep_clone(v, f"input_kwargs[{k!r}]") if k in clone_keys else v
            for k, v in kwargs.items()
        }
        sets.append((cloned_args, cloned_kwargs))
    return tuple(sets)


def _time_graph(
    fn: Callable[..., Any],
    sets: Sequence[InputSet],
    stream: torch.cuda.Stream,
    replay_iters: int,
) -> tuple[list[float], int, int]:
    input_sets = len(sets)
    calls = calls_per_replay(input_sets)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph, stream=stream):
            for i in range(calls):
                set_args, set_kwargs = sets[i % input_sets]
                fn(*set_args, **set_kwargs)
    except RuntimeError as error:
        raise RuntimeError(
            f"do_bench: CUDA graph capture of {getattr(fn, '__name__', fn)!s} failed ({error}); "
            "pass use_cuda_graph=False if the function cannot be captured"
        ) from error
    graph.replay()  # warm-up replay
    replays = max(math.ceil(replay_iters / calls), MIN_REPLAYS)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]
    for start, end in zip(starts, ends, strict=True):
        start.record(stream)
        graph.replay()
        end.record(stream)
    stream.synchronize()
    samples = [s.elapsed_time(e) / 1e3 / calls for s, e in zip(starts, ends, strict=True)]
    del graph
    return samples, input_sets, calls


def _time_eager(
    fn: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    stream: torch.cuda.Stream,
    flush: torch.Tensor,
    eager_iters: int,
) -> list[float]:
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(eager_iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(eager_iters)]
    for start, end in zip(starts, ends, strict=True):
        flush.zero_()
        start.record(stream)
        fn(*args, **kwargs)
        end.record(stream)
    stream.synchronize()
    return [s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends, strict=True)]


def make_input_sets(
    input_args: Sequence[Any] = (),
    input_kwargs: Mapping[str, Any] | None = None,
    *,
    graph_clone_args: Iterable[int] | str | None = "all",
    graph_clone_kwargs: Iterable[str] | str | None = "all",
    rotation_factor: float = ROTATION_FACTOR,
    max_input_sets: int = MAX_INPUT_SETS,
) -> tuple[InputSet, ...]:
    """The input sets do_bench's CUDA-graph mode would rotate through, made once.

    Set 0 is the given inputs, the rest are clones of the selected ones (same rules and count
    as do_bench). Pass them as ``graph_input_sets`` to time several functions over the same
    memory; ``del`` them to free the clones.
    """
    kwargs = _check_inputs(input_args, input_kwargs, "make_input_sets")
    _check_rotation(rotation_factor, max_input_sets, "make_input_sets")
    clone_indices = select_clone_indices(graph_clone_args, input_args)
    clone_keys = select_clone_keys(graph_clone_kwargs, kwargs)
    if not torch.cuda.is_available():
        raise RuntimeError(
            "make_input_sets needs a CUDA device, but torch.cuda.is_available() is False"
        )
    l2_bytes = l2_cache_bytes(_find_device(input_args, kwargs))
    return _clone_sets(
        input_args, kwargs, clone_indices, clone_keys, l2_bytes, rotation_factor, max_input_sets
    )


def do_bench(
    fn: Callable[..., Any],
    *,
    input_args: Sequence[Any] = (),
    input_kwargs: Mapping[str, Any] | None = None,
    use_cuda_graph: bool = True,
    warmup_iters: int = 50,
    replay_iters: int = 2000,
    eager_iters: int = 200,
    metrics: Sequence[float | str] = (0.5, "avg"),
    stream: torch.cuda.Stream | None = None,
    graph_clone_args: Iterable[int] | str | None = "all",
    graph_clone_kwargs: Iterable[str] | str | None = "all",
    disable_log_bandwidth: bool | None = None,
    memory_args: Any = "all",
    memory_output: Any = "out",
    extra_memory_args: Any = None,
    extra_memory_footprint: int = 0,
    rotation_factor: float = ROTATION_FACTOR,
    max_input_sets: int = MAX_INPUT_SETS,
    graph_input_sets: Sequence[InputSet] | None = None,
) -> BenchResult:
    """Time ``fn(*input_args, **input_kwargs)``; see the module docstring for the method.

    ``metrics``: quantiles in [0, 1] and/or "avg"; the first is the table's latency.
    ``memory_args`` ("all" = every input, None, or the tensors read) plus ``memory_output``
    ("out" = re-run once and count the return value, None, or the tensors written) plus
    ``extra_memory_args``/``extra_memory_footprint`` give the bytes per call behind GB/s;
    ``disable_log_bandwidth`` (default: ``SGLANG_KERNEL_DISABLE_LOG_BANDWIDTH``, read now)
    skips that accounting and leaves ``memory_footprint`` None.
    ``graph_input_sets`` (from ``make_input_sets``): the graph rotates through these sets
    instead of its own clones; ``input_args``/``input_kwargs`` still serve the warm-up calls and
    the byte count.
    """
    if not callable(fn):
        raise DoBenchError(f"do_bench: fn must be callable, got {fn!r}")
    kwargs = _check_inputs(input_args, input_kwargs, "do_bench")
    try:
        chosen_metrics = normalize_metrics(metrics)
    except ValueError as error:
        raise DoBenchError(f"do_bench: {error}") from error
    _check_count("warmup_iters", warmup_iters, 0)
    _check_count("replay_iters", replay_iters, 1)
    _check_count("eager_iters", eager_iters, 1)
    _check_count("extra_memory_footprint", extra_memory_footprint, 0)
    _check_rotation(rotation_factor, max_input_sets, "do_bench")
    if isinstance(memory_args, str) and memory_args != "all":
        raise DoBenchError(
            f"do_bench: memory_args must be 'all', None or tensors, got {memory_args!r}"
        )
    if isinstance(memory_output, str) and memory_output != "out":
        raise DoBenchError(
            f"do_bench: memory_output must be 'out', None or tensors, got {memory_output!r}"
        )
    clone_indices = select_clone_indices(graph_clone_args, input_args)
    clone_keys = select_clone_keys(graph_clone_kwargs, kwargs)
    given_sets = None
    if graph_input_sets is not None:
        if not use_cuda_graph:
            raise DoBenchError(
                "do_bench: graph_input_sets needs use_cuda_graph=True "
                "(eager mode times input_args alone)"
            )
        if graph_clone_args != "all" or graph_clone_kwargs != "all":
            raise DoBenchError(
                "do_bench: graph_input_sets already holds the rotation; leave graph_clone_args "
                "and graph_clone_kwargs at their default"
            )
        given_sets = check_input_sets(graph_input_sets)
    if disable_log_bandwidth is None:
        disable_log_bandwidth = get_bool_env(DISABLE_LOG_BANDWIDTH)
    if not torch.cuda.is_available():
        raise RuntimeError("do_bench needs a CUDA device, but torch.cuda.is_available() is False")

    device = _find_device(input_args, kwargs)
    with torch.cuda.device(device):
        run_stream = stream if stream is not None else _side_stream(device)
        run_stream.wait_stream(torch.cuda.current_stream(device))
        l2_bytes = l2_cache_bytes(device)
        with torch.cuda.stream(run_stream):
            sets = None
            if use_cuda_graph:
                sets = given_sets or _clone_sets(
                    input_args,
                    kwargs,
                    clone_indices,
                    clone_keys,
                    l2_bytes,
                    rotation_factor,
                    max_input_sets,
                )
            # The warm-up is the last step before capture, whoever made the sets: a graph
            # captured right after the clones were made times differently (bench_jit_kernels.md).
            for _ in range(warmup_iters):
                fn(*input_args, **kwargs)
            if sets is not None:
                samples, input_sets, calls = _time_graph(fn, sets, run_stream, replay_iters)
                del sets
            else:
                flush = _flush_buffer(device, EAGER_FLUSH_FACTOR * l2_bytes)
                samples = _time_eager(fn, input_args, kwargs, run_stream, flush, eager_iters)
                input_sets, calls = 1, 1
            footprint = None
            if not disable_log_bandwidth:
                footprint = _memory_footprint(
                    fn,
                    input_args,
                    kwargs,
                    memory_args,
                    memory_output,
                    extra_memory_args,
                    extra_memory_footprint,
                )
        torch.cuda.current_stream(device).wait_stream(run_stream)
        run_stream.synchronize()
    quartiles = compute_metrics(samples, (0.25, 0.75))
    return BenchResult(
        metrics=chosen_metrics,
        times=compute_metrics(samples, chosen_metrics),
        memory_footprint=footprint,
        min_time=min(samples),
        max_time=max(samples),
        p25_time=quartiles[0],
        p75_time=quartiles[1],
        num_samples=len(samples),
        mode="graph" if use_cuda_graph else "eager",
        input_sets=input_sets,
        calls_per_sample=calls,
    )
