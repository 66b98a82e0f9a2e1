"""The files C/C++/CUDA sources read, found the way the preprocessor finds them.

Standard library only, so both the JIT compiler (its cache key) and the runner (which tests a
change can affect) compute the closure with this one implementation; neither imports the other.

* :mod:`.directives`: the ``#include`` (and kin) of one file's bytes, and what is unproven;
* :mod:`.closure`: resolving them against include directories and following them transitively.
"""

from cpp_includes.closure import (
    Closure,
    Resolved,
    include_candidates,
    include_chain,
    include_closure,
    remember_scans,
    resolve_file,
    resolve_include,
    scan_file,
    scan_memo,
)
from cpp_includes.directives import Include, SourceScan, Unproven, scan_source

__all__ = [
    "Closure",
    "Include",
    "Resolved",
    "SourceScan",
    "Unproven",
    "include_candidates",
    "include_chain",
    "include_closure",
    "remember_scans",
    "resolve_file",
    "resolve_include",
    "scan_file",
    "scan_memo",
    "scan_source",
]
