"""A coarse file clock for the caches' racy-timestamp tests (not a test file).

``CoarseClock.install(monkeypatch, module)`` replaces ``module._stat`` with a stat whose times
read one second ago and whose inode never changes, as a coarse clock shows a rewrite of the same
size; ``settle()`` moves those times 100 seconds back, after which a stat may be trusted.
"""

from __future__ import annotations

import os
import time
from types import SimpleNamespace


class CoarseClock:
    def __init__(self) -> None:
        self.ns = time.time_ns() - 10**9  # what a coarse clock shows: one second ago

    def stat(self, path) -> SimpleNamespace:
        size = os.lstat(path).st_size
        return SimpleNamespace(
            st_size=size, st_mtime_ns=self.ns, st_ctime_ns=self.ns, st_ino=1, st_dev=1
        )

    def settle(self) -> None:
        self.ns = time.time_ns() - 100 * 10**9

    @classmethod
    def install(cls, monkeypatch, module) -> CoarseClock:
        clock = cls()
        monkeypatch.setattr(module, "_stat", clock.stat)
        return clock
