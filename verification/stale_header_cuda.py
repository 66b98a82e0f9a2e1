"""On a GPU machine: a CUDA module is rebuilt when a header it includes changes, however included.

Builds one CUDA module (nvcc) whose kernels read a header each, included through a macro
(``#include VAL_H``: only the compiler's dependency record sees it), after a UTF-8 BOM, with the
digraph ``%:include`` and through an ``-I`` in ``extra_cuda_cflags``; runs each kernel (1001),
edits every header to 5001 in turn and runs the kernel again without
``JIT_KERNEL_FORCE_REBUILD``. Prints one line per spelling; exit code 0 when each gave 5001::

    python -m verification.stale_header_cuda
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

SPELLINGS = {
    "macro": '#define VAL_MACRO_H "val_macro.h"\n#include VAL_MACRO_H\n',
    "bom": '\ufeff#include "val_bom.h"\n',
    "digraph": '%:include "val_digraph.h"\n',
    "flag": '#include "val_flag.h"\n',  # only in the -I directory given in extra_cuda_cflags
}
RUN = """
#include <cstdint>
#include <cuda_runtime.h>
__global__ void fill(int64_t* out, int64_t which) {{
  switch (which) {{
{cases}  }}
}}
int64_t run(int64_t which) {{
  int64_t* device = nullptr;
  int64_t host = -1;
  cudaMalloc(&device, sizeof(int64_t));
  fill<<<1, 1>>>(device, which);
  cudaMemcpy(&host, device, sizeof(int64_t), cudaMemcpyDeviceToHost);
  cudaFree(device);
  return host;
}}
"""


def write_header(directory: Path, name: str, value: int) -> None:
    where = directory / "flagdir" if name == "flag" else directory
    where.mkdir(parents=True, exist_ok=True)
    text = f"#pragma once\n__device__ inline long long val_{name}() {{ return {value}; }}\n"
    (where / f"val_{name}.h").write_text(text)


def main() -> int:
    from jit_kernel.compiler import load_jit

    failures = 0
    with tempfile.TemporaryDirectory() as temporary:
        directory = Path(temporary)
        files = []
        for name, line in SPELLINGS.items():
            write_header(directory, name, 1001)
            (directory / f"s_{name}.cuh").write_bytes(line.encode())
            files.append(str(directory / f"s_{name}.cuh"))
        cases = "".join(
            f"    case {i}: *out = val_{n}(); break;\n" for i, n in enumerate(SPELLINGS)
        )
        (directory / "run.cuh").write_text(RUN.format(cases=cases))
        call = {
            "cuda_files": [*files, str(directory / "run.cuh")],
            "cuda_wrappers": [("run", "run")],
            "extra_cuda_cflags": [f"-I{directory / 'flagdir'}"],
        }
        for index, name in enumerate(SPELLINGS):
            before = load_jit("stale_headers", **call).run(index)
            write_header(directory, name, 5001)
            after = load_jit("stale_headers", **call).run(index)
            ok = after == 5001
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name:8s} before {before} after {after}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
