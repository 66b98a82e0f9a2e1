"""Every file of the repository, and where an ``import`` or a file name can resolve.

One walk of the tree (hidden directories, ``__pycache__`` and links to directories are not
entered) answers every question the dependency graph asks: does a file or directory exist,
which Python files lie under a directory, which files end in a given name. A directory it cannot
list is recorded (:attr:`RepoIndex.unlisted`): what it holds is unseen, so the analysis fails
open.
"""

from __future__ import annotations

import bisect
import os
from collections import defaultdict
from pathlib import Path


class RepoIndex:
    """The files (root-relative POSIX paths) and directories of the tree at ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: set[str] = set()
        self.dirs: set[str] = {""}
        self.by_name: dict[str, list[str]] = defaultdict(list)
        # directory -> the names importable from it: modules (``x.py`` as ``x``) and directories
        self.children: dict[str, set[str]] = defaultdict(set)
        self.unlisted: list[str] = []  # directories that cannot be listed: their files are unseen
        stack = [""]
        while stack:
            relative = stack.pop()
            try:
                with os.scandir(self.root / relative if relative else self.root) as entries:
                    listing = list(entries)
            except OSError as exc:
                self.unlisted.append(f"{relative or './'} cannot be listed ({exc.strerror or exc})")
                continue
            for entry in listing:
                path = f"{relative}{entry.name}"
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if not entry.name.startswith(".") and entry.name != "__pycache__":
                            self.dirs.add(path)
                            self.children[relative].add(entry.name)
                            stack.append(path + "/")
                    elif entry.is_file():
                        self.files.add(path)
                        self.by_name[entry.name].append(path)
                        if entry.name.endswith(".py"):
                            self.children[relative].add(entry.name[:-3])
                except OSError:
                    continue
        self._sorted: list[str] | None = None

    def under(self, prefix: str, suffix: str = "") -> list[str]:
        """Files whose path starts with ``prefix`` (and ends with ``suffix``), sorted."""
        if self._sorted is None:
            self._sorted = sorted(self.files)
        start = bisect.bisect_left(self._sorted, prefix)
        found = []
        for path in self._sorted[start:]:
            if not path.startswith(prefix):
                break
            if path.endswith(suffix):
                found.append(path)
        return found

    def ending_with(self, name: str) -> list[str]:
        """Files whose path is ``name`` or ends with ``/name``."""
        base = name.rsplit("/", 1)[-1]
        return [p for p in self.by_name.get(base, ()) if p == name or p.endswith("/" + name)]
