"""Test-only JIT CUDA kernels that fault on purpose: the real kernel fault behind the runner's
crash-resume verification (``verification/verify_crash_resume.py``). Never call them from real
code: each loses the process's CUDA context for good.

* :func:`write_out_of_bounds`: one thread writes an int32 far out of the tensor's bounds, into
  the unmapped first page of the address space: an illegal memory access
  (``cudaErrorIllegalAddress``), the commonest crash of a kernel test;
* :func:`device_assert`: a device-side ``assert`` that fails (``cudaErrorAssert``).

Both synchronize the device, so the fault surfaces in the call (as torch's ``AcceleratorError``
/ ``RuntimeError``), not in whatever CUDA call comes next.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from jit_kernel.compiler import load_jit
from jit_kernel.wrapper import cache_once

SOURCE = Path(__file__).resolve().with_name("faulty_kernel.cuh")
NULL_PAGE_BYTE = 16  # where the write lands: never mapped, so the write always faults


@cache_once
def faulty_module() -> Any:
    """Build (or load from the cache) the module exporting both faulting kernels."""
    return load_jit(
        "testing_faulty_kernel",
        cuda_files=[SOURCE],
        cuda_wrappers=[
            ("write_out_of_bounds", "write_out_of_bounds"),
            ("device_assert", "device_assert"),
        ],
    )


def write_out_of_bounds(device: str = "cuda") -> None:
    """Write one int32 at the element of a one-element tensor whose address is
    ``NULL_PAGE_BYTE`` (a negative index, far out of bounds), then synchronize."""
    data = torch.zeros(1, dtype=torch.int32, device=device)
    offset = (NULL_PAGE_BYTE - data.data_ptr()) // data.element_size()
    faulty_module().write_out_of_bounds(data, offset)
    torch.cuda.synchronize(data.device)


def device_assert(device: str = "cuda") -> None:
    """Fail a device-side ``assert(data[0] == 1)`` on a zero, then synchronize."""
    data = torch.zeros(1, dtype=torch.int32, device=device)
    faulty_module().device_assert(data)
    torch.cuda.synchronize(data.device)
