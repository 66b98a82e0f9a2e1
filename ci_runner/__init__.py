"""ci_runner: static discovery, sharding and execution of registered CI test files.

Test files import the markers from here; the runner itself never imports test files.
This package must stay importable without torch.
"""

from ci_runner.markers import (
    register_amd_ci,
    register_cpu_ci,
    register_cuda_ci,
    register_musa_ci,
    register_npu_ci,
    register_xpu_ci,
)

__all__ = [
    "register_amd_ci",
    "register_cpu_ci",
    "register_cuda_ci",
    "register_musa_ci",
    "register_npu_ci",
    "register_xpu_ci",
]
