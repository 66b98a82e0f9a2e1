"""Registration markers: module-level no-op calls that the runner finds by parsing the AST.

A test file declares the suites it belongs to with, for example::

    from ci_runner import register_cuda_ci

    register_cuda_ci(est_time=30, suite="base-b-kernel-unit-1-gpu-large")

The calls do nothing at runtime. ``run_suite.py`` never imports test files: it reads these calls
from the syntax tree, so every argument must be a literal. At runtime the markers accept any
keyword (``min_gpus=``, a catalog's ``suite-template`` fields such as ``stage=`` and
``runner_config=``); the runner validates them when it reads the file.
"""

from __future__ import annotations

# ``from ci_runner.markers import *`` gives the markers only (a repository's marker module can be
# this one line); markers of extra backends are imported by name (see ``__getattr__``).
__all__ = [
    "register_amd_ci",
    "register_cpu_ci",
    "register_cuda_ci",
    "register_musa_ci",
    "register_npu_ci",
    "register_xpu_ci",
]

# Marker function name -> backend (the value of ``--hw`` and of a suite's ``hw`` key).
MARKER_BACKENDS: dict[str, str] = {
    "register_cuda_ci": "cuda",
    "register_cpu_ci": "cpu",
    "register_amd_ci": "amd",
    "register_npu_ci": "npu",
    "register_xpu_ci": "xpu",
    "register_musa_ci": "musa",
}

# The marker signature, in positional order.
MARKER_PARAMETERS: tuple[str, ...] = ("est_time", "suite", "nightly", "disabled")


def register_cuda_ci(
    est_time: float,
    suite: str | None = None,
    nightly: bool = False,
    disabled: str | None = None,
    **keywords: object,
) -> None:
    """Register this file for a CUDA suite (runtime no-op; parsed from the AST)."""


def register_cpu_ci(
    est_time: float,
    suite: str | None = None,
    nightly: bool = False,
    disabled: str | None = None,
    **keywords: object,
) -> None:
    """Register this file for a CPU suite (runtime no-op; parsed from the AST)."""


def register_amd_ci(
    est_time: float,
    suite: str | None = None,
    nightly: bool = False,
    disabled: str | None = None,
    **keywords: object,
) -> None:
    """Register this file for an AMD (ROCm) suite (runtime no-op; parsed from the AST)."""


def register_npu_ci(
    est_time: float,
    suite: str | None = None,
    nightly: bool = False,
    disabled: str | None = None,
    **keywords: object,
) -> None:
    """Register this file for an NPU suite (runtime no-op; parsed from the AST)."""


def register_xpu_ci(
    est_time: float,
    suite: str | None = None,
    nightly: bool = False,
    disabled: str | None = None,
    **keywords: object,
) -> None:
    """Register this file for an Intel XPU suite (runtime no-op; parsed from the AST)."""


def register_musa_ci(
    est_time: float,
    suite: str | None = None,
    nightly: bool = False,
    disabled: str | None = None,
    **keywords: object,
) -> None:
    """Register this file for a Moore Threads MUSA suite (runtime no-op; parsed from the AST)."""


def _extra_marker(
    est_time: float,
    suite: str | None = None,
    nightly: bool = False,
    disabled: str | None = None,
    **keywords: object,
) -> None:
    """Register this file for a backend the catalog declares (runtime no-op)."""


def __getattr__(name: str) -> object:
    """``register_<backend>_ci`` for any backend a catalog adds with ``extra-markers``.

    So a repository's own marker module can re-export every marker it uses from here, e.g.
    ``from ci_runner.markers import register_mlx_ci``.
    """
    if name.startswith("register_") and name.endswith("_ci") and len(name) > len("register__ci"):
        return _extra_marker
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
