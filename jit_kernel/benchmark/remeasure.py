"""Re-measure cells of a stored benchmark: run the file its NEW document names again.

The benchmark file is the document's ``source`` (relative to the repository root), run from
``root`` with the same sweep (CI or full) as the stored run and ``--cells`` naming the cells to
measure, into fresh JSON. This is how compare confirms a suspected slowdown.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from jit_kernel.benchmark.document import BenchDocument, DocumentError, load_document
from jit_kernel.benchmark.export import JSON_ENV, PLOT_ENV
from jit_kernel.benchmark.selection import load_selection, write_selection
from jit_kernel.env import IS_IN_CI, RUN_FULL_TESTS

OUTPUT_TAIL = 2000  # characters of a failed re-run's output shown in the error


class RemeasureError(RuntimeError):
    """A benchmark could not be run again; the message says which file and why."""


def _environment(document: BenchDocument, root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop(JSON_ENV, None)  # the re-run writes only where --json says
    env.pop(PLOT_ENV, None)
    if document.ci_sweep:
        env[IS_IN_CI] = "1"
        env.pop(RUN_FULL_TESTS, None)
    else:
        env.pop(IS_IN_CI, None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    return env


def remeasure(
    document: BenchDocument,
    cells: Iterable[tuple[str, str]],
    runs: int,
    root: Path,
    workdir: Path,
) -> list[BenchDocument]:
    """Run ``document``'s benchmark file ``runs`` times, measuring only ``cells`` (case,
    provider); the fresh documents, in order."""
    if document.source is None:
        raise RemeasureError(
            f"{document.path}: records no source file (schema_version "
            f"{document.schema_version}); cannot re-measure {document.benchmark}"
        )
    root = root.resolve()  # the re-run starts in root: a relative script path would not hold
    script = root / document.source
    if not script.is_file():
        raise RemeasureError(
            f"{document.path}: its source {document.source} is not a file under {root} "
            "(pass --root with the repository the result came from)"
        )
    selection = write_selection(workdir / f"{script.stem}.cells.json", cells)
    count = len(load_selection(selection))
    fresh = []
    for index in range(1, runs + 1):
        target = workdir / f"{script.stem}.remeasure-{index}.json"
        print(
            f"re-measuring {count} cell(s) of {document.source} ({index}/{runs})",
            file=sys.stderr,
            flush=True,
        )
        done = subprocess.run(
            [sys.executable, str(script), "--json", str(target), "--cells", str(selection)],
            cwd=root,
            env=_environment(document, root),
            capture_output=True,
            text=True,
            check=False,
        )
        if not target.is_file():
            output = (done.stdout + done.stderr)[-OUTPUT_TAIL:]
            raise RemeasureError(
                f"re-running {document.source} exited {done.returncode} and wrote no result:\n"
                f"{output}"
            )
        try:
            fresh.append(load_document(target))
        except DocumentError as error:
            raise RemeasureError(f"re-running {document.source}: {error}") from None
    return fresh
