"""The CUDA target architecture a JIT module is built for.

Resolution order of :func:`get_jit_cuda_arch`:

1. an :func:`override_arch` context (``python -m jit_kernel precompile --arch`` uses it);
2. ``TVM_FFI_CUDA_ARCH_LIST``: its first entry, e.g. ``"9.0"`` or ``"9.0a 10.0a"``;
3. ``torch.cuda.get_device_capability()`` of the current device (never ``nvidia-smi``).

The target gets the arch-specific suffix ``a`` for major >= 9 (``sm_90a``, ``sm_100a``), so
Hopper/Blackwell-only instructions (wgmma, setmaxnreg, PDL's griddepcontrol) are available. A
module is built for exactly one architecture, so nothing is lost: ``"9.0"`` and ``"9.0a"`` name
the same target.
"""

from __future__ import annotations

import contextvars
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

ARCH_LIST_ENV = "TVM_FFI_CUDA_ARCH_LIST"
_ARCH_RE = re.compile(r"^(\d+)\.(\d)([af]?)$")

_override: contextvars.ContextVar[ArchInfo | None] = contextvars.ContextVar(
    "jit_kernel_arch_override", default=None
)


class ArchError(RuntimeError):
    """No CUDA target architecture could be determined, or one was spelled wrong."""


@dataclass(frozen=True, order=True)
class ArchInfo:
    """A CUDA compute capability and the nvcc target it maps to."""

    major: int
    minor: int

    @property
    def suffix(self) -> str:
        """``"a"`` (arch-specific features) for Hopper and newer, else ``""``."""
        return "a" if self.major >= 9 else ""

    @property
    def target_name(self) -> str:
        """E.g. ``"9.0a"`` or ``"8.6"``."""
        return f"{self.major}.{self.minor}{self.suffix}"

    @property
    def sm(self) -> str:
        """E.g. ``"sm_90a"``."""
        return f"sm_{self.major}{self.minor}{self.suffix}"

    @property
    def gencode_flag(self) -> str:
        """The nvcc flag that builds SASS for exactly this target."""
        code = f"{self.major}{self.minor}{self.suffix}"
        return f"-gencode=arch=compute_{code},code=sm_{code}"

    @property
    def define_flag(self) -> str:
        """``-DSGL_CUDA_ARCH=<major*100+minor*10>``, e.g. ``900`` for Hopper."""
        return f"-DSGL_CUDA_ARCH={self.major * 100 + self.minor * 10}"


def parse_arch(text: str, source: str = "arch") -> ArchInfo:
    """Parse ``"9.0"``, ``"9.0a"``, ``"10.0"`` or ``"8.6"``; ``source`` names where it came from."""
    match = _ARCH_RE.match(text.strip())
    if match is None:
        raise ArchError(
            f"{source}: {text!r} is not a CUDA architecture; expected MAJOR.MINOR such as "
            "9.0, 9.0a, 10.0 or 8.6"
        )
    return ArchInfo(int(match.group(1)), int(match.group(2)))


@contextmanager
def override_arch(arch: ArchInfo | str) -> Iterator[ArchInfo]:
    """Build for ``arch`` inside this block (this thread/context only), whatever the GPU is."""
    info = parse_arch(arch, "override_arch") if isinstance(arch, str) else arch
    token = _override.set(info)
    try:
        yield info
    finally:
        _override.reset(token)


def _arch_from_env() -> ArchInfo | None:
    value = os.environ.get(ARCH_LIST_ENV, "").split()
    if not value:
        return None
    return parse_arch(value[0], ARCH_LIST_ENV)


_device_arch: dict[int, ArchInfo] = {}
_single_device: list[ArchInfo] = []  # filled when exactly one GPU is visible


def _arch_from_torch() -> ArchInfo | None:
    """The current device's capability, remembered per device (this is on the hot path)."""
    if _single_device:
        return _single_device[0]
    import torch

    if not _device_arch and (not torch.cuda.is_available() or torch.version.cuda is None):
        return None
    if torch.cuda.device_count() == 1:
        _single_device.append(ArchInfo(*torch.cuda.get_device_capability(0)))
        return _single_device[0]
    index = torch.cuda.current_device()
    info = _device_arch.get(index)
    if info is None:
        info = ArchInfo(*torch.cuda.get_device_capability(index))
        _device_arch[index] = info
    return info


def current_arch_or_none() -> ArchInfo | None:
    """The target architecture if one can be determined, else ``None`` (no GPU, no override)."""
    info = _override.get()
    if info is not None:
        return info
    info = _arch_from_env()
    if info is not None:
        return info
    return _arch_from_torch()


def get_jit_cuda_arch() -> ArchInfo:
    """The architecture CUDA modules are built for now; raises :class:`ArchError` if unknown."""
    info = current_arch_or_none()
    if info is None:
        raise ArchError(
            "cannot determine the CUDA target architecture: no CUDA device is visible to torch. "
            f"Set {ARCH_LIST_ENV} (e.g. {ARCH_LIST_ENV}=9.0) or pass --arch to "
            "`python -m jit_kernel precompile`."
        )
    return info


def is_arch_support_pdl() -> bool:
    """True when the target supports programmatic dependent launch (Hopper, major >= 9)."""
    return get_jit_cuda_arch().major >= 9
