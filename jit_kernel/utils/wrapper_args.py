"""Shared pieces of the thin kernel wrappers: the per-call module lookup and argument errors.

A wrapper's hot path costs about what a bare tvm-ffi call costs: it looks its module up with
:class:`KernelTable` (one ``dict.get`` once the module exists), allocates the output and
calls the export. Every shape, dtype and device check runs in C++ (``TensorMatcher``), whose
RuntimeError names the tensor and what was expected. Python-level mistakes (a list where a
tensor belongs) surface as an AttributeError/TypeError inside that path; the wrapper catches
them and calls :func:`raise_argument_type_error`, which names the argument. Nothing is checked
twice and the happy path pays nothing for the diagnosis.

The pattern::

    def scale(src, factor, out=None):
        try:
            if not src.is_contiguous():
                src = src.contiguous()
            if out is None:
                out = torch.empty_like(src)
            (_scale.get(src.dtype) or _scale.miss(src.dtype, src))(out, src, factor)
        except (AttributeError, TypeError) as error:
            raise_argument_type_error(
                "scale", error, tensors={"src": src}, optional={"out": out}, numbers={"factor": factor}
            )
        return out
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING, NoReturn, TypeVar

import torch

if TYPE_CHECKING:
    from tvm_ffi import Function
    from tvm_ffi.module import Module

K = TypeVar("K", bound=Hashable)


def _all_devices_share_one_arch() -> bool:
    """True when every visible CUDA device has the same compute capability (the usual case)."""
    count = torch.cuda.device_count()
    return len({torch.cuda.get_device_capability(index) for index in range(count)}) <= 1


class KernelTable(dict[Hashable, "Function"]):
    """A wrapper's per-call kernel lookup: ``table.get(key) or table.miss(key, tensor)``.

    It holds the module's ``export`` function itself, so a hit is one ``dict.get`` followed by
    a direct call: no Python-level call, no device query, no ``Module`` attribute lookup (the
    latter alone costs a bare ``module.export(...)`` call about 0.1 us). The table keeps an
    entry under its bare ``key`` only on a machine whose GPUs all share one architecture
    (checked once, on the first miss), where one module serves every device. On a mixed
    machine it stays empty and :meth:`miss` keeps functions per (key, device index), each
    built with that device current (``cache_once`` then keys the module by that device's arch).

    :meth:`miss` validates before anything is compiled: the key tensor must be on a CUDA
    device, and ``build`` raises for an unsupported key (e.g. dtype), which never enters the
    table. Calls that hit trust the kernel's C++ checks for everything else.
    """

    def __init__(
        self, build: Callable[[K], Module], export: str, op: str, tensor_name: str
    ) -> None:
        super().__init__()
        self._build = build
        self._export = export
        self._op = op
        self._tensor_name = tensor_name
        self._per_device: dict[tuple[Hashable, int], Function] = {}
        self._one_arch: bool | None = None

    def miss(self, key: K, tensor: torch.Tensor) -> Function:
        """Build (or find) the module for ``key`` on ``tensor``'s device; return its export."""
        if not tensor.is_cuda:
            raise RuntimeError(
                f"{self._op}: {self._tensor_name} must be a CUDA tensor, got device {tensor.device}"
            )
        if self._one_arch is None:
            self._one_arch = _all_devices_share_one_arch()
        slot = (key, tensor.get_device())
        function = self._per_device.get(slot)
        if function is None:
            with torch.cuda.device(tensor.device):
                module = self._build(key)
            function = self._per_device[slot] = getattr(module, self._export)
        if self._one_arch:
            self[key] = function
        return function


def _type_name(value: object) -> str:
    return type(value).__name__


def raise_argument_type_error(
    op: str,
    error: BaseException,
    *,
    tensors: Mapping[str, object] = {},
    optional: Mapping[str, object] = {},
    numbers: Mapping[str, object] = {},
) -> NoReturn:
    """Raise a TypeError naming the first argument of ``op`` with the wrong Python type.

    ``tensors`` must be torch.Tensor, ``optional`` torch.Tensor or None, ``numbers`` int or
    float (not bool). If every argument has the right type, ``error`` was not caused by the
    caller's types and is re-raised unchanged.
    """
    for name, value in tensors.items():
        if not isinstance(value, torch.Tensor):
            raise TypeError(
                f"{op}: {name} must be a torch.Tensor, got {_type_name(value)}"
            ) from None
    for name, value in optional.items():
        if value is not None and not isinstance(value, torch.Tensor):
            raise TypeError(
                f"{op}: {name} must be a torch.Tensor or None, got {_type_name(value)}"
            ) from None
    for name, value in numbers.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"{op}: {name} must be a number, got {_type_name(value)}") from None
    raise error
