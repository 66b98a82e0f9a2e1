"""Reading a stored benchmark result (the ``--json`` document) back, checking every field used.

A file that is not such a document (not JSON, truncated, another schema, wrong types) raises
:class:`DocumentError` naming the file, the key and what was expected; compare and plot turn it
into exit status 2. Version 1 files (no environment, no quartiles, absolute ``where``) are read
too: what they lack is ``None``, and compare falls back to their min/max for the noise.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jit_kernel.benchmark.export import JSON_SCHEMA_VERSION
from jit_kernel.benchmark.report import case_label, format_value
from jit_kernel.benchmark.results import UNIT_SCALES

READABLE_VERSIONS = (1, JSON_SCHEMA_VERSION)
STATUSES = ("ok", "skipped", "error")
EXPECTED = (
    f"a benchmark result written by --json / JIT_KERNEL_BENCH_JSON "
    f"(schema_version {' or '.join(map(str, READABLE_VERSIONS))})"
)


class DocumentError(ValueError):
    """A file that is not a readable benchmark result; the message names file and key."""


@dataclass(frozen=True)
class Cell:
    """One measured or unmeasured cell: a row of parameters and one line value (provider)."""

    case: str  # "dtype=bfloat16, size=4096"
    provider: str
    status: str
    metric: str | None = None  # label of the latency metric, e.g. "p50"
    latency_s: float | None = None
    p25_s: float | None = None
    p75_s: float | None = None
    min_s: float | None = None
    max_s: float | None = None
    bandwidth_gbps: float | None = None
    params: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class BenchDocument:
    """One stored result file."""

    path: Path
    schema_version: int
    benchmark: str
    source: str | None
    unit: str
    line_arg: str
    line_vals: tuple[str, ...]
    axes: tuple[str, ...]
    ci_sweep: bool
    environment: dict[str, Any]
    cells: tuple[Cell, ...]

    @property
    def unit_scale(self) -> float:
        """Seconds to :attr:`unit`."""
        return UNIT_SCALES[self.unit]

    def cell_map(self) -> dict[tuple[str, str], Cell]:
        """``(case, provider) -> cell``."""
        return {(cell.case, cell.provider): cell for cell in self.cells}


def _fail(path: Path, key: str, expected: str, got: object) -> DocumentError:
    shown = repr(got)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return DocumentError(f"{path}: {key}: expected {expected}, got {shown}")


def _number(path: Path, key: str, value: object, optional: bool = True) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _fail(path, key, "a finite number" + (" or null" if optional else ""), value)
    if value < 0:
        raise _fail(path, key, "a number >= 0", value)
    return float(value)


def _typed(path: Path, data: dict[str, Any], key: str, kind: type, label: str) -> Any:
    if key not in data:
        raise DocumentError(f"{path}: key {key!r} is missing; expected {EXPECTED}")
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, kind):
        raise _fail(path, key, label, value)
    return value


def _cell(path: Path, index: int, raw: object, line_arg: str, version: int) -> Cell:
    key = f"cells[{index}]"
    if not isinstance(raw, dict):
        raise _fail(path, key, "a JSON object", raw)
    params = raw.get("params")
    if not isinstance(params, dict):
        raise _fail(path, f"{key}.params", "a JSON object of swept parameters", params)
    if line_arg not in raw:
        raise DocumentError(f"{path}: {key}: the line value {line_arg!r} (line_arg) is missing")
    status = raw.get("status")
    if status not in STATUSES:
        raise _fail(path, f"{key}.status", " or ".join(map(repr, STATUSES)), status)
    case = case_label(params)
    provider = format_value(raw[line_arg])
    if status != "ok":
        return Cell(case=case, provider=provider, status=status, params=tuple(params.items()))
    metrics = raw.get("metrics_s")
    if not isinstance(metrics, dict) or not metrics:
        raise _fail(path, f"{key}.metrics_s", "a non-empty object of metric -> seconds", metrics)
    latency = _number(path, f"{key}.latency_s", raw.get("latency_s"), optional=False)
    if not latency:
        raise _fail(path, f"{key}.latency_s", "a time > 0 seconds", raw.get("latency_s"))
    return Cell(
        case=case,
        provider=provider,
        status=status,
        metric=str(next(iter(metrics))),
        latency_s=latency,
        p25_s=_number(path, f"{key}.p25_s", raw.get("p25_s")) if version > 1 else None,
        p75_s=_number(path, f"{key}.p75_s", raw.get("p75_s")) if version > 1 else None,
        min_s=_number(path, f"{key}.min_s", raw.get("min_s")),
        max_s=_number(path, f"{key}.max_s", raw.get("max_s")),
        bandwidth_gbps=_number(path, f"{key}.bandwidth_gbps", raw.get("bandwidth_gbps")),
        params=tuple(params.items()),
    )


def _identify_foreign(path: Path, data: dict[str, Any]) -> None:
    """Name the schema of a JSON object that is not a benchmark result, when we know it."""
    if "schema_version" in data:
        version = data["schema_version"]
        if version not in READABLE_VERSIONS or isinstance(version, bool):
            raise DocumentError(
                f"{path}: schema_version {version!r} is not one this reader knows "
                f"({', '.join(map(str, READABLE_VERSIONS))}); expected {EXPECTED}"
            )
        return
    if "rows" in data:
        raise DocumentError(
            f"{path}: a table of rows (key 'rows', no schema_version: the --json of "
            f"bench_jit_kernels or bench_custom_all_reduce), not {EXPECTED}"
        )
    raise DocumentError(
        f"{path}: no schema_version (keys: {', '.join(sorted(map(str, data))[:8]) or 'none'}); "
        f"expected {EXPECTED}"
    )


def parse_document(path: Path, text: str) -> BenchDocument:
    """Check ``text`` (the contents of ``path``) and return its document."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise DocumentError(
            f"{path}: not valid JSON (line {error.lineno} column {error.colno}: {error.msg}; "
            f"truncated or damaged?); expected {EXPECTED}"
        ) from None
    return document_from_dict(path, data)


def document_from_dict(path: Path, data: object) -> BenchDocument:
    """Check a decoded document (``path`` names it in errors) and return it."""
    if not isinstance(data, dict):
        raise _fail(path, "top level", f"a JSON object, {EXPECTED}", data)
    _identify_foreign(path, data)
    version = int(data["schema_version"])
    line_arg = _typed(path, data, "line_arg", str, "a JSON string")
    unit = _typed(path, data, "unit", str, "a JSON string")
    if unit not in UNIT_SCALES:
        raise _fail(path, "unit", " or ".join(map(repr, UNIT_SCALES)), unit)
    cells = _typed(path, data, "cells", list, "a JSON array")
    environment: dict[str, Any] = {}
    source = None
    if version > 1:
        environment = _environment(path, _typed(path, data, "environment", dict, "a JSON object"))
        source = data.get("source")
        if source is not None and not isinstance(source, str):
            raise _fail(path, "source", "a path string or null", source)
    ci_sweep = data.get("ci_sweep", False)
    if not isinstance(ci_sweep, bool):
        raise _fail(path, "ci_sweep", "true or false", ci_sweep)
    return BenchDocument(
        path=path,
        schema_version=version,
        benchmark=_typed(path, data, "benchmark", str, "a JSON string"),
        source=source,
        unit=unit,
        line_arg=line_arg,
        line_vals=tuple(
            format_value(v) for v in _typed(path, data, "line_vals", list, "a JSON array")
        ),
        axes=tuple(str(a) for a in _typed(path, data, "axes", list, "a JSON array")),
        ci_sweep=ci_sweep,
        environment=environment,
        cells=_unique(
            path, [_cell(path, i, raw, line_arg, version) for i, raw in enumerate(cells)]
        ),
    )


def _unique(path: Path, cells: list[Cell]) -> tuple[Cell, ...]:
    """The cells, once each: two records of one case and provider cannot both be compared."""
    seen: dict[tuple[str, str], int] = {}
    for index, cell in enumerate(cells):
        earlier = seen.setdefault((cell.case, cell.provider), index)
        if earlier != index:
            raise DocumentError(
                f"{path}: cells[{index}] repeats cells[{earlier}] ([{cell.case}] {cell.provider})"
            )
    return tuple(cells)


def _environment(path: Path, environment: dict[str, Any]) -> dict[str, Any]:
    """The environment block, its keys that compare and plot read checked for type."""
    for key in ("gpu", "driver", "jit_kernel_commit", "timestamp", "torch"):
        value = environment.get(key)
        if value is not None and not isinstance(value, str):
            raise _fail(path, f"environment.{key}", "a string or null", value)
    dirty = environment.get("jit_kernel_dirty")
    if dirty is not None and not isinstance(dirty, bool):
        raise _fail(path, "environment.jit_kernel_dirty", "true, false or null", dirty)
    _number(path, "environment.copy_gbps", environment.get("copy_gbps"))
    return environment


def load_document(path: Path) -> BenchDocument:
    """Read and check one result file (:class:`DocumentError` if it is not one)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise DocumentError(f"{path}: cannot read it ({error}); expected {EXPECTED}") from None
    return parse_document(path, text)


def load_run(path: Path) -> dict[str, BenchDocument]:
    """One run: a result file, or every ``*.json`` under a directory; benchmark -> document."""
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.json") if p.is_file())
        if not files:
            raise DocumentError(f"{path}: a directory with no *.json file; expected {EXPECTED}")
    elif path.exists():
        files = [path]
    else:
        raise DocumentError(f"{path}: no such file or directory")
    run: dict[str, BenchDocument] = {}
    for file in files:
        document = load_document(file)
        if document.benchmark in run:
            raise DocumentError(
                f"{file}: benchmark {document.benchmark!r} is also in {run[document.benchmark].path}"
                " (one run holds each benchmark once)"
            )
        run[document.benchmark] = document
    return run
