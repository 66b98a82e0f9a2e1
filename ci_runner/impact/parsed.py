"""One parse per source in a process: the binding rule's statement facts and the block hashes
both read each changed file, a 4,000-line one on SGLang's tree.

:func:`parse` is :func:`ast.parse` for the last few sources, with the cyclic garbage collector
paused while parsing (a syntax tree holds no cycles, and the collector, triggered by the nodes
a parse allocates, would walk them again and again). Callers only read the trees.
"""

from __future__ import annotations

import ast
import gc

_KEEP = 4  # trees held: the changed files of one selection, both sides
_recent: dict[str | bytes, ast.Module] = {}


def parse(source: str | bytes) -> ast.Module:
    """``ast.parse(source)``, the same tree for the same source; raises as ``ast.parse``."""
    tree = _recent.get(source)
    if tree is None:
        paused = gc.isenabled()
        gc.disable()
        try:
            tree = ast.parse(source)
        finally:
            if paused:
                gc.enable()
        if len(_recent) >= _KEEP:
            del _recent[next(iter(_recent))]
        _recent[source] = tree
    return tree
