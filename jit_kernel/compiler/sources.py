"""Which of our source files a JIT module reads, identified by content rather than location.

A module's cache key must change when any header it includes changes, and must not change when
the checkout moves. :func:`source_closure` follows ``#include "..."`` (next to the including file,
then the include directories) and ``#include <...>`` (the include directories) through every
file it can resolve inside our trees (``jit_kernel/include``, ``jit_kernel/csrc``, the
``extra_include_paths`` and the directories of absolute source paths). Each file is recorded as a
*label* (a root name plus the path relative to it) and the sha256 of its bytes. Includes that
resolve nowhere in our trees (the C++ library, CUDA, tvm-ffi, dlpack) are external: their
versions enter the key through the compiler and tvm-ffi versions instead.

The directives are read and followed by :mod:`cpp_includes` (the preprocessor's spellings, every
``#if`` branch), and what it cannot prove (a macro include) is returned with the files: the
runner's change selection uses the same code, so the files a module's key covers are the files a
change to them selects tests for. The compiler's own dependency record (:mod:`.deps`) covers what
this static closure cannot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cpp_includes import Closure, include_closure, scan_file

__all__ = ["Root", "closure_entries", "file_digest", "label_for", "source_closure"]


@dataclass(frozen=True)
class Root:
    """A directory whose files are identified as ``<name>/<relative path>``."""

    name: str
    path: Path

    def label_of(self, file: Path) -> str | None:
        """``file``'s label if it lies under this root, else ``None``."""
        try:
            return f"{self.name}/{file.relative_to(self.path).as_posix()}"
        except ValueError:
            return None


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes, memoized per stat within the process."""
    return scan_file(path)[0]


def label_for(file: Path, roots: Sequence[Root]) -> str:
    """The location-independent name of ``file``: relative to the first root holding it."""
    for root in roots:
        label = root.label_of(file)
        if label is not None:
            return label
    return f"other/{file.name}"


def source_closure(
    sources: Sequence[Path], include_dirs: Sequence[Path], roots: Sequence[Root]
) -> tuple[list[tuple[str, str]], list[str]]:
    """Sorted ``(label, sha256)`` of ``sources`` and every file they include from our trees,
    and what the closure cannot prove (``label:line: why``, sorted; empty when proven)."""
    return closure_entries(include_closure(sources, include_dirs), roots)


def closure_entries(
    closure: Closure, roots: Sequence[Root]
) -> tuple[list[tuple[str, str]], list[str]]:
    """:func:`source_closure`'s result for an already computed closure."""
    files = sorted((label_for(path, roots), file_digest(path)) for path in closure.files)
    unproven = sorted(
        f"{label_for(path, roots)}:{item.line}: {item.text}"
        for path, items in closure.unproven.items()
        for item in items
    )
    return files, unproven
