"""Where built modules live: ``$JIT_KERNEL_CACHE_DIR``, default ``~/.cache/jit_kernel``.

``<root>/<module>_<key16>/<module>.so`` holds a build; ``<root>/by-source/<module>_<source key>``
records the last build of the same sources whatever the compilers, so a machine without a
toolchain can load a module that ``python -m jit_kernel precompile`` built elsewhere.
"""

from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from jit_kernel.compiler.toolchain import JitToolchainError

if TYPE_CHECKING:
    from jit_kernel.compiler.plan import ModulePlan

logger = logging.getLogger("jit_kernel")

CACHE_DIR_ENV = "JIT_KERNEL_CACHE_DIR"


def cache_root() -> Path:
    """The cache root; ``$XDG_CACHE_HOME/jit_kernel`` when only ``XDG_CACHE_HOME`` is set."""
    value = os.environ.get(CACHE_DIR_ENV)
    if value:
        return Path(value).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "jit_kernel"


def index_path(root: Path, plan: ModulePlan) -> Path:
    """Where the last published build of these sources is recorded.

    The index is keyed by everything except the compilers' identities (nvcc and ``$CXX``
    versions), so a machine without a toolchain (a driver-only image) can still load a module
    that ``python -m jit_kernel precompile`` built elsewhere into a shared cache.
    """
    return root / "by-source" / f"{plan.name}_{plan.source_key}"


def record_in_index(root: Path, plan: ModulePlan, target: Path) -> None:
    index = index_path(root, plan)
    index.parent.mkdir(parents=True, exist_ok=True)
    staged = index.with_name(f"{index.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    staged.write_text(target.parent.name)
    os.replace(staged, index)


def prebuilt_without_toolchain(root: Path, plan: ModulePlan) -> Path:
    """The indexed build of these sources, or the toolchain error (with what was looked for)."""
    error = plan.toolchain_error
    assert error is not None
    index = index_path(root, plan)
    try:
        target = root / index.read_text().strip() / f"{plan.name}.so"
    except OSError:
        target = None
    if target is not None and target.is_file():
        logger.info("no toolchain; loading %s, built elsewhere from the same sources", target)
        return target
    raise JitToolchainError(
        f"{error}\nNo prebuilt {plan.name!r} for these sources, flags and arch was found in "
        f"{root} either (looked for {index})."
    ) from None
