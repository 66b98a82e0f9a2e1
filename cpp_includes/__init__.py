"""The ``#include`` closure of C/C++/CUDA sources, read the way the preprocessor reads directives.

Standard library only, so both the JIT compiler (its cache key) and the runner (which tests a
change can affect) compute the closure with this one implementation; neither imports the other.

* :mod:`.directives`: the ``#include`` directives of one file's bytes;
* :mod:`.closure`: resolving them against include directories and following them transitively.
"""

from cpp_includes.closure import include_chain, include_closure, resolve_include, scan_file
from cpp_includes.directives import directives_text, includes_of

__all__ = [
    "directives_text",
    "include_chain",
    "include_closure",
    "includes_of",
    "resolve_include",
    "scan_file",
]
