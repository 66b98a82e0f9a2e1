"""Stage 2, discovery: every registration of the tree, and every problem, without importing it.

* :mod:`.discovery`: walks the registered directory and collects each file (:func:`collect`);
* :mod:`.walk`: which paths are read (regular files only) and which are reported (links out,
  hidden directories, FIFOs and other non-regular files, unlistable directories);
* :mod:`.calls`: the one reader of marker calls, however the marker is bound (also used by the
  est_time updater, ``init`` and the lints);
* :mod:`.scan`: one file's registrations and problems from its syntax tree;
* :mod:`.file_scan`: one file's catalog-independent result from one parse, and
  :mod:`.parse_cache`, the content-keyed cache of those results;
* :mod:`.arguments`: one marker call's arguments, checked, into a Registration;
* :mod:`.entry_point`: the ``if __name__ == "__main__":`` block the runner needs;
* :mod:`.suite_checks`: registrations against the catalog's suites;
* :mod:`.scope`: ``--scoped-validation``, which problems concern the selected suites.
"""

from ci_runner.collect.discovery import (
    Collection,
    collect,
    discover_files,
    is_registered_file,
    walk_registered,
)
from ci_runner.collect.scan import scan_markers
from ci_runner.collect.walk import Walk, walk_files

__all__ = [
    "Collection",
    "Walk",
    "collect",
    "discover_files",
    "is_registered_file",
    "scan_markers",
    "walk_files",
    "walk_registered",
]
