"""``--cells PATH``: the cells a benchmark run measures, as compare names them.

The file is a JSON list of ``{"case": "size=4096", "provider": "jit"}`` objects (case: the
row's parameters as :func:`~jit_kernel.benchmark.report.case_label` writes them; provider: the
line value). compare --confirm writes one to re-measure only the suspected cells.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

Selection = frozenset[tuple[str, str]]
NOT_SELECTED = "not selected by --cells"


class SelectionError(ValueError):
    """A ``--cells`` file that cannot be read; the message names the file and the entry."""


def load_selection(path: Path) -> Selection:
    """The ``(case, provider)`` pairs listed in ``path``."""
    expected = 'a JSON list of {"case": "...", "provider": "..."} objects'
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SelectionError(
            f"--cells {path}: cannot read it ({error}); expected {expected}"
        ) from None
    if not isinstance(data, list):
        raise SelectionError(f"--cells {path}: expected {expected}, got {type(data).__name__}")
    cells = []
    for index, entry in enumerate(data):
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("case"), str)
            and isinstance(entry.get("provider"), str)
        ):
            raise SelectionError(f"--cells {path}: entry {index} is {entry!r}; expected {expected}")
        cells.append((entry["case"], entry["provider"]))
    return frozenset(cells)


def write_selection(path: Path, cells: Iterable[tuple[str, str]]) -> Path:
    """Write ``(case, provider)`` pairs as a ``--cells`` file; return the path."""
    entries = [{"case": case, "provider": provider} for case, provider in sorted(set(cells))]
    path.write_text(json.dumps(entries, indent=1) + "\n", encoding="utf-8")
    return path
