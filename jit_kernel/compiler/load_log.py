"""The dependency-load log: which JIT modules a process loaded, and the files each was built from.

When ``JIT_KERNEL_LOAD_LOG`` names a directory, every process that loads a JIT module (built now
or served from the cache) appends one JSON line per module to ``<dir>/<pid>.jsonl``::

    {"module": "jit_scale_true", "library": "/abs/.../jit_scale_true.so",
     "sources": ["/abs/.../csrc/elementwise/scale.cuh"],
     "dependencies": {"/abs/.../include/sgl_kernel/utils.h": "<sha256>", ...}}

``dependencies`` is the set the compilers reported when the module was built (toolchain files
included), each file's real path now and its sha256 then (``null``: it changed while it was
being compiled, so the next load rebuilds the module). A module is logged once per process and
build. A log that cannot be written is said once (a warning), never fatal: loading goes on.
The runner's recording mode reads these files (the contract is in docs/jit-toolchain.md).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jit_kernel.compiler.cache import read_toolchain_record
from jit_kernel.compiler.deps import dependency_digests

if TYPE_CHECKING:
    from jit_kernel.compiler.plan import ModulePlan

logger = logging.getLogger("jit_kernel")

LOAD_LOG_ENV = "JIT_KERNEL_LOAD_LOG"

_logged: set[tuple[int, str, str]] = set()  # (pid, library, its sha256)
_failed: set[int] = set()  # pids that already said the log cannot be written
_lock = threading.Lock()


def log_load(plan: ModulePlan, library: Path, record: dict[str, Any]) -> None:
    """Append ``library``'s line to this process's load log, if ``JIT_KERNEL_LOAD_LOG`` is set."""
    directory = os.environ.get(LOAD_LOG_ENV)
    if not directory:
        return
    pid = os.getpid()
    path = os.path.abspath(library)
    key = (pid, path, str(record.get("sha256")))
    with _lock:
        if key in _logged:
            return
        _logged.add(key)
    toolchain = read_toolchain_record(library)
    entry = {
        "module": plan.name,
        "library": path,
        "sources": [str(source) for source in plan.sources],
        "dependencies": dependency_digests(record.get("dependencies", []), toolchain, plan.roots),
    }
    line = (json.dumps(entry, sort_keys=True) + "\n").encode()
    try:
        os.makedirs(directory, exist_ok=True)
        descriptor = os.open(
            os.path.join(directory, f"{pid}.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644
        )
        try:
            os.write(descriptor, line)  # one write: lines of threads never interleave
        finally:
            os.close(descriptor)
    except OSError as error:
        with _lock:
            first = pid not in _failed
            _failed.add(pid)
        if first:
            logger.warning(
                "%s=%s: cannot write the JIT load log (%s)", LOAD_LOG_ENV, directory, error
            )
