"""Where built modules live: ``$JIT_KERNEL_CACHE_DIR``, default ``~/.cache/jit_kernel``."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_DIR_ENV = "JIT_KERNEL_CACHE_DIR"


def cache_root() -> Path:
    """The cache root; ``$XDG_CACHE_HOME/jit_kernel`` when only ``XDG_CACHE_HOME`` is set."""
    value = os.environ.get(CACHE_DIR_ENV)
    if value:
        return Path(value).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "jit_kernel"
