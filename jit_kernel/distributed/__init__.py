"""Multi-GPU helpers: launch ranks (:mod:`.launch`) and probe peer access and topology
(:mod:`.topology`). The kernel itself is :mod:`jit_kernel.all_reduce`; its checks and benchmark
live outside the package (``testing/all_reduce_checks.py``, ``testing/all_reduce_harness.py``).

Nothing here imports CUDA state at import time; ``python -m jit_kernel precompile`` imports
this package on machines without a GPU.
"""

from jit_kernel.distributed.launch import (
    NVLS_OFF_ENV,
    WorkerError,
    disable_nvlink_multicast,
    free_port,
    init_from_env,
    run_on_gpus,
)

__all__ = [
    "NVLS_OFF_ENV",
    "WorkerError",
    "disable_nvlink_multicast",
    "free_port",
    "init_from_env",
    "run_on_gpus",
]
