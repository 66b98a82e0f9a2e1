"""Every file of the repository, and where an ``import`` or a file name can resolve.

One walk of the tree (hidden directories, ``__pycache__`` and links to directories are not
entered) answers every question the dependency graph asks: does a file or directory exist,
which Python files lie under a directory, which files end in a given name, and where a dotted
module name could be found if its directory were on ``sys.path``. A directory it cannot list is
recorded (:attr:`RepoIndex.unlisted`): what it holds is unseen, so the analysis fails open.
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
        self.linked_dirs: set[str] = set()  # links to directories: listed, never entered
        self.links: dict[str, str] = {}  # a link to a file in the tree -> that file
        self._real_root = os.path.realpath(root)
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
                    elif entry.is_symlink() and entry.is_dir():
                        self.linked_dirs.add(path)
                    elif entry.is_file():
                        self.files.add(path)
                        if entry.is_symlink():
                            self._link(path)
                        self.by_name[entry.name].append(path)
                        if entry.name.endswith(".py"):
                            self.children[relative].add(entry.name[:-3])
                except OSError:
                    continue
        self._sorted: list[str] | None = None
        self._in_package: dict[str, bool] = {"": "__init__.py" in self.files}
        self._packages_by_name: dict[str, list[str]] | None = None

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

    def _link(self, path: str) -> None:
        target = os.path.relpath(os.path.realpath(self.root / path), self._real_root)
        if not target.startswith(".."):
            self.links[path] = Path(target).as_posix()

    def in_package(self, directory: str) -> bool:
        """Whether ``directory`` or one of its parents is a regular package (has
        ``__init__.py``): a module there is imported through that package, not at top level."""
        known = self._in_package.get(directory)
        if known is None:
            parent = directory.rsplit("/", 1)[0] if "/" in directory else ""
            known = f"{directory}/__init__.py" in self.files or self.in_package(parent)
            self._in_package[directory] = known
        return known

    def module_places(self, dotted: str) -> list[str]:
        """Files that ``import dotted`` would load if the directory holding its top-level
        package were on ``sys.path``: ``x/a/b/c.py`` or ``x/a/b/c/__init__.py`` for ``a.b.c``,
        where ``x`` lies in no regular package (else ``a`` is imported through that package)."""
        parts = dotted.split(".")
        tail = "/".join(parts)
        if self._packages_by_name is None:
            self._packages_by_name = defaultdict(list)
            for init in self.by_name.get("__init__.py", ()):
                package = init[: -len("/__init__.py")]
                if package:
                    self._packages_by_name[package.rsplit("/", 1)[-1]].append(init)
        candidates = [*self.by_name.get(f"{parts[-1]}.py", ())]
        candidates += self._packages_by_name.get(parts[-1], ())
        found = []
        for path in candidates:
            stem = path[: -len("/__init__.py")] if path.endswith("/__init__.py") else path[:-3]
            if stem != tail and not stem.endswith("/" + tail):
                continue
            holder = stem[: -len(tail)].rstrip("/")
            if not self.in_package(holder):
                found.append(path)
        return found

    def linked(self, name: str) -> list[str]:
        """Links to directories named ``name`` that lie in no regular package."""
        return sorted(
            link
            for link in self.linked_dirs
            if link.rsplit("/", 1)[-1] == name
            and not self.in_package(link.rsplit("/", 1)[0] if "/" in link else "")
        )
