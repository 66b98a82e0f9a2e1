"""Where upstream SGLang's kernel sources are: a folder the user unpacked from the wheel.

``--sglang-src DIR`` (or ``$BENCH_SGLANG_SRC``) names either the folder the wheel was unzipped
into (holding ``sglang/kernels/jit``) or that ``jit`` folder itself; it must hold
``include/sgl_kernel/`` and ``csrc/elementwise/``. Get it with::

    pip download --no-deps sglang==0.5.23 -d /tmp/sglang-wheel
    unzip -q /tmp/sglang-wheel/sglang-0.5.23-*.whl 'sglang/kernels/jit/include/*' \\
        'sglang/kernels/jit/csrc/elementwise/*' 'sglang-0.5.23.dist-info/METADATA' -d .peers
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

SRC_ENV = "BENCH_SGLANG_SRC"
JIT_SUBDIR = Path("sglang", "kernels", "jit")
GET_IT = (
    "get it with `pip download --no-deps sglang==0.5.23 -d /tmp/sglang-wheel` and "
    "`unzip -q /tmp/sglang-wheel/sglang-0.5.23-*.whl 'sglang/kernels/jit/include/*' "
    "'sglang/kernels/jit/csrc/elementwise/*' 'sglang-0.5.23.dist-info/METADATA' -d .peers`, "
    "then pass --sglang-src .peers (benchmarks/bench_jit_kernels.md)"
)


class UpstreamSourceError(ValueError):
    """The folder named by ``--sglang-src`` / ``$BENCH_SGLANG_SRC`` is not upstream's sources."""


@dataclass(frozen=True)
class UpstreamSource:
    """The ``sglang/kernels/jit`` folder: its headers, its kernels, and the wheel's version."""

    jit_dir: Path
    version: str  # from the wheel's METADATA when it was unpacked too, else "unknown"

    @property
    def include_dir(self) -> Path:
        return self.jit_dir / "include"

    @property
    def csrc_dir(self) -> Path:
        return self.jit_dir / "csrc"

    def digest(self, header: str) -> str:
        """sha256 over every file of ``include/`` and over ``csrc/<header>``: a build's sources."""
        return _tree_digest(self.include_dir, self.csrc_dir / header)


def _is_jit_dir(path: Path) -> bool:
    return (path / "include" / "sgl_kernel").is_dir() and (path / "csrc" / "elementwise").is_dir()


def _wheel_version(jit_dir: Path) -> str:
    """``Version:`` of the ``sglang-*.dist-info/METADATA`` beside ``sglang/``, if unpacked."""
    for metadata in sorted(jit_dir.parents[2].glob("sglang-*.dist-info/METADATA")):
        for line in metadata.read_text(errors="replace").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def locate(path: str | os.PathLike[str], origin: str) -> UpstreamSource:
    """The upstream sources under ``path``; ``origin`` (the flag or variable) names it in errors."""
    given = Path(path).expanduser()
    for candidate in (given, given / JIT_SUBDIR):
        if _is_jit_dir(candidate):
            jit_dir = candidate.resolve()
            version = _wheel_version(jit_dir) if len(jit_dir.parents) > 2 else "unknown"
            return UpstreamSource(jit_dir, version)
    raise UpstreamSourceError(
        f"{origin}: {str(path)!r} holds neither {JIT_SUBDIR}/ nor include/sgl_kernel/ and "
        f"csrc/elementwise/ (upstream SGLang's JIT kernel sources); {GET_IT}"
    )


_configured: list[UpstreamSource] = []


def configure(flag_value: str | None) -> UpstreamSource | None:
    """Use ``--sglang-src`` if given, else ``$BENCH_SGLANG_SRC``, else none (the peer is N/A).

    Raises :class:`UpstreamSourceError` naming the flag or the variable for a wrong folder.
    """
    _configured.clear()
    if flag_value:
        _configured.append(locate(flag_value, "--sglang-src"))
    elif os.environ.get(SRC_ENV):
        _configured.append(locate(os.environ[SRC_ENV], f"${SRC_ENV}"))
    return current()


def current() -> UpstreamSource | None:
    """The sources :func:`configure` chose, or None."""
    return _configured[0] if _configured else None


NOT_GIVEN = (
    f"upstream SGLang sources not given (--sglang-src DIR or ${SRC_ENV}; "
    "benchmarks/bench_jit_kernels.md says how to get them)"
)


@functools.cache
def _tree_digest(include_dir: Path, header: Path) -> str:
    digest = hashlib.sha256()
    for path in [*sorted(p for p in include_dir.rglob("*") if p.is_file()), header]:
        digest.update(str(path.relative_to(include_dir.parent)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()
