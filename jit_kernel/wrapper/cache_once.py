"""``cache_once``: a process-wide memo for JIT module getters.

Unlike ``functools.lru_cache`` it works under ``torch.compile`` (dynamo traces a plain dict
lookup). It is thread-safe and single-flight: concurrent first calls with the same arguments run
the function once, the others wait for its result. Keyword order does not matter. The key also
holds the current CUDA target architecture, so a process that drives GPUs of different
generations never reuses one GPU's module on another.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from jit_kernel.compiler.arch import current_arch_or_none

P = ParamSpec("P")
R = TypeVar("R")


def _make_key(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    return (current_arch_or_none(), args, tuple(sorted(kwargs.items())))


def cache_once(fn: Callable[P, R]) -> Callable[P, R]:
    """Memoize ``fn`` per (arguments, target arch); the undecorated function is ``__wrapped__``."""
    results: dict[tuple[Any, ...], Any] = {}
    key_locks: dict[tuple[Any, ...], threading.Lock] = {}
    guard = threading.Lock()

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        key = _make_key(args, kwargs)
        if key in results:
            return results[key]
        with guard:
            lock = key_locks.setdefault(key, threading.Lock())
        with lock:
            if key not in results:
                results[key] = fn(*args, **kwargs)
            return results[key]

    def cache_clear() -> None:
        with guard:
            results.clear()
            key_locks.clear()

    wrapper.cache_clear = cache_clear  # type: ignore[attr-defined]
    return wrapper
