"""Parse many files in forked workers, one per available CPU (parsing is nearly all of a cold
run); below ``PARSES_PER_WORKER`` files per worker, one process is faster."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

MAX_WORKERS = 8
PARSES_PER_WORKER = 24


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class ForkedPool:
    """A pool of forked workers started at the first :meth:`map` that needs one, kept until
    :meth:`close`."""

    def __init__(self) -> None:
        self._pool: Any = None

    def map(
        self, function: Callable[..., list], items: Sequence[Any], *arguments: Any
    ) -> list | None:
        """``function(*arguments, chunk)`` over chunks of ``items``, joined in order; None when
        too few items to be worth workers, or no process can be started here (the caller runs
        ``function`` itself)."""
        workers = min(available_cpus(), MAX_WORKERS, len(items) // PARSES_PER_WORKER)
        if workers <= 1:
            return None
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        if "fork" not in multiprocessing.get_all_start_methods():
            return None
        chunk = -(-len(items) // (workers * 4))
        chunks = [items[i : i + chunk] for i in range(0, len(items), chunk)]
        try:
            if self._pool is None:
                context = multiprocessing.get_context("fork")
                self._pool = ProcessPoolExecutor(workers, context)
            jobs = [self._pool.submit(function, *arguments, part) for part in chunks]
            return [result for job in jobs for result in job.result()]
        except (OSError, BrokenProcessPool):
            self.close()
            return None

    def close(self) -> None:
        """Stop the workers, if any were started."""
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None


def forked_map(function: Callable[..., list], items: Sequence[Any], *arguments: Any) -> list | None:
    """:meth:`ForkedPool.map` with a pool of its own."""
    pool = ForkedPool()
    try:
        return pool.map(function, items, *arguments)
    finally:
        pool.close()
