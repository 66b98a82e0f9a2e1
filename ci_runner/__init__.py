"""ci_runner: static discovery, sharding and execution of registered CI test files.

Test files import the markers from here; the runner itself never imports test files.
This package must stay importable without torch.
"""

__version__ = "0.1.0"  # the package's version (pyproject.toml reads it from here)

from ci_runner.markers import (
    register_amd_ci,
    register_cpu_ci,
    register_cuda_ci,
    register_musa_ci,
    register_npu_ci,
    register_xpu_ci,
)

__all__ = [
    "__version__",
    "register_amd_ci",
    "register_cpu_ci",
    "register_cuda_ci",
    "register_musa_ci",
    "register_npu_ci",
    "register_xpu_ci",
]
