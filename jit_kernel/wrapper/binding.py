"""The kernel bindings of the thin wrappers: a wrapper's hot path is the tvm-ffi call itself.

A kernel's module holds every dtype (dispatched in C++), so the wrapper reads no dtype and looks
nothing up: it calls a module global that :class:`FirstCallBinding` rebinds to the module's
export on the first call (:func:`bind_export` creates one). Kernels specialised on a Python
value (``add_constant``'s constant) use :class:`KernelTable` (one ``dict.get`` per call). Every
shape, dtype and device check runs in C++ (``TensorMatcher``, ``dispatch_dtype``), whose
RuntimeError names the tensor and what was expected; Python-level mistakes become a TypeError
naming the argument (:func:`jit_kernel.wrapper.raise_argument_error`), on the error path only.

The pattern::

    _jit_scale_module = jit_module("scale", "elementwise/scale.cuh", ["scale"])
    _scale = bind_export(globals(), _jit_scale_module, "scale", tensor_arg=(1, "src"))

    def scale(src: torch.Tensor, factor: float, out: torch.Tensor | None = None) -> torch.Tensor:
        try:
            result = torch.empty_like(src) if out is None else out
            _scale(result, src, factor)
        except (AttributeError, TypeError) as error:
            raise_argument_error(scale, error, locals())
        return result
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, MutableMapping
from typing import TYPE_CHECKING, Any, TypeVar

import torch

if TYPE_CHECKING:
    from tvm_ffi import Function
    from tvm_ffi.module import Module

K = TypeVar("K", bound=Hashable)


def _all_devices_share_one_arch() -> bool:
    """True when every visible CUDA device has the same compute capability (the usual case)."""
    count = torch.cuda.device_count()
    return len({torch.cuda.get_device_capability(index) for index in range(count)}) <= 1


class _DeviceExports:
    """One export of a JIT module per (key, device): the slow path both bindings share.

    :meth:`find` validates before anything is compiled (the tensor must be on a CUDA device;
    ``build`` raises for an unsupported key), builds the module with the tensor's device
    current (``cache_once`` keys it by that device's arch) and keeps the export per device.
    ``one_arch`` says whether one export serves every device (checked once, on the first find).
    """

    def __init__(
        self, build: Callable[..., Module], export: str, op: str, tensor_name: str
    ) -> None:
        self._build = build
        self._export = export
        self._op = op
        self._tensor_name = tensor_name
        self._per_device: dict[tuple[tuple[Hashable, ...], int], Function] = {}
        self.one_arch: bool | None = None

    def find(self, key: tuple[Hashable, ...], tensor: torch.Tensor) -> Function:
        """The export of ``build(*key)`` for ``tensor``'s device (built on first use)."""
        if not tensor.is_cuda:
            raise RuntimeError(
                f"{self._op}: {self._tensor_name} must be a CUDA tensor, got device {tensor.device}"
            )
        if self.one_arch is None:
            self.one_arch = _all_devices_share_one_arch()
        slot = (key, tensor.get_device())
        function = self._per_device.get(slot)
        if function is None:
            with torch.cuda.device(tensor.device):
                module = self._build(*key)
            function = self._per_device[slot] = getattr(module, self._export)
        return function


def rebind_global(namespace: MutableMapping[str, Any], name: str) -> Callable[[Any], None]:
    """A ``rebind`` for :class:`FirstCallBinding` that sets ``namespace[name]`` (a global)."""
    return functools.partial(namespace.__setitem__, name)


class FirstCallBinding:
    """A wrapper's kernel until its first call, then the module's export itself.

    The wrapper module keeps it in a global and calls that global with the export's
    arguments. The first call checks that ``args[tensor_arg[0]]`` (named ``tensor_arg[1]`` in
    errors) is a CUDA tensor, builds the module (``build()``, no arguments: one module holds
    every dtype) with that tensor's device current and calls ``rebind(export)``, so the global
    names the tvm-ffi function itself: later calls cost a global load and the call, nothing
    else. On a machine whose GPUs differ in architecture it never rebinds and keeps one export
    per device (a Python-level call per kernel call). A non-tensor argument raises
    AttributeError, which the wrapper turns into a TypeError naming the argument.
    """

    def __init__(
        self,
        build: Callable[[], Module],
        export: str,
        *,
        op: str,
        tensor_arg: tuple[int, str],
        rebind: Callable[[Function], None],
    ) -> None:
        self._position = tensor_arg[0]
        self._exports = _DeviceExports(build, export, op, tensor_arg[1])
        self._rebind = rebind

    def __call__(self, *args: Any) -> Any:
        function = self._exports.find((), args[self._position])
        if self._exports.one_arch:
            self._rebind(function)
        return function(*args)


def bind_export(
    namespace: MutableMapping[str, Any],
    build: Callable[[], Module],
    export: str,
    *,
    tensor_arg: tuple[int, str],
    op: str | None = None,
) -> FirstCallBinding:
    """A :class:`FirstCallBinding` of ``build()``'s ``export`` for a global of ``namespace``.

    Store it in that global (``_add3 = bind_export(globals(), ...)``): the first call rebinds
    every global of ``namespace`` that holds the binding to the export itself. ``op`` names the
    operation in errors (default: ``export``).
    """

    def rebind(function: Function) -> None:
        for name in [name for name, value in namespace.items() if value is binding]:
            namespace[name] = function

    binding = FirstCallBinding(build, export, op=op or export, tensor_arg=tensor_arg, rebind=rebind)
    return binding


class KernelTable(dict[Hashable, "Function"]):
    """A per-call kernel lookup for modules specialised on a Python value: ``table.get(key) or
    table.miss(key, tensor)``.

    It holds the module's ``export`` function itself, so a hit is one ``dict.get`` followed by
    a direct call: no Python-level call, no device query, no ``Module`` attribute lookup. The
    table keeps an
    entry under its bare ``key`` only on a machine whose GPUs all share one architecture,
    where one module serves every device; on a mixed machine it stays empty and every call
    goes through :meth:`miss` (one function per (key, device)). Kernels that take their
    specialisation from a tensor's dtype use :class:`FirstCallBinding` instead (no lookup).
    """

    def __init__(
        self, build: Callable[[K], Module], export: str, op: str, tensor_name: str
    ) -> None:
        super().__init__()
        self._exports = _DeviceExports(build, export, op, tensor_name)

    def miss(self, key: K, tensor: torch.Tensor) -> Function:
        """Build (or find) the module for ``key`` on ``tensor``'s device; return its export."""
        function = self._exports.find((key,), tensor)
        if self._exports.one_arch:
            self[key] = function
        return function
