"""Multi-GPU helpers: launch ranks (:mod:`.launch`), probe peer access and topology
(:mod:`.topology`), and the custom all-reduce's self-checks (:mod:`.all_reduce_checks`) and
benchmark (:mod:`.all_reduce_bench`). The kernel itself is :mod:`jit_kernel.all_reduce`.

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
