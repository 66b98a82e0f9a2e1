"""The precompile declaration contract: each wrapper module lists its specializations.

A wrapper module calls, at import time::

    register_precompile(_jit_scale_module, [(torch.float16,), (torch.bfloat16,)])

``python -m jit_kernel precompile`` imports every wrapper module and builds each registered
``(fn, args)`` through ``fn.__wrapped__(*args)``, so nothing lands in the in-process cache.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PrecompileSpec:
    """One specialization worth building ahead of time."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]

    @property
    def label(self) -> str:
        """``module.function(args)``, for listings and reports."""
        args = ", ".join(str(arg) for arg in self.args)
        return f"{self.fn.__module__}.{self.fn.__qualname__}({args})"


_specs: list[PrecompileSpec] = []
_lock = threading.Lock()


def register_precompile(fn: Callable[..., Any], arg_tuples: Iterable[tuple[Any, ...]]) -> None:
    """Declare that ``fn(*args)`` for each tuple in ``arg_tuples`` is worth precompiling.

    ``fn`` must be decorated with :func:`cache_once` (it needs ``__wrapped__``).
    """
    wrapped = getattr(fn, "__wrapped__", None)
    if wrapped is None or not callable(wrapped):
        raise TypeError(
            f"register_precompile: {getattr(fn, '__qualname__', fn)!r} has no __wrapped__; "
            "decorate the module getter with @cache_once"
        )
    specs = []
    for position, args in enumerate(arg_tuples):
        if not isinstance(args, tuple):
            raise TypeError(
                f"register_precompile({fn.__qualname__}): entry {position} is {args!r}; "
                "each entry must be a tuple of arguments, e.g. (torch.float16,)"
            )
        specs.append(PrecompileSpec(fn, args))
    with _lock:
        for spec in specs:
            if spec not in _specs:
                _specs.append(spec)


def registered_specs() -> list[PrecompileSpec]:
    """Every specialization registered so far, in registration order."""
    with _lock:
        return list(_specs)
