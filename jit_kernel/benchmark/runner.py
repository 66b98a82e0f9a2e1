"""``@benchmark`` and ``Benchmark.run()``: measure every cell, print the table, export.

The run stage of the data flow sweep (:mod:`.sweep`) -> run -> report (:mod:`.report`) ->
table (:mod:`.table`) / export (:mod:`.export`): it imports the stages around it, and none of
them imports this module.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from jit_kernel.benchmark.document import document_from_dict
from jit_kernel.benchmark.environment import (
    collect_environment,
    measure_copy_gbps,
    relative_location,
)
from jit_kernel.benchmark.export import (
    JSON_ENV,
    PLOT_ENV,
    report_to_dict,
    resolve_output_path,
    write_json,
)
from jit_kernel.benchmark.plot import PlotUnavailableError, write_plot
from jit_kernel.benchmark.report import CellOutcome, SweepReport, case_label, format_value
from jit_kernel.benchmark.results import BenchResult, BenchSkip
from jit_kernel.benchmark.selection import (
    NOT_SELECTED,
    Selection,
    SelectionError,
    load_selection,
)
from jit_kernel.benchmark.sweep import BenchmarkDefinitionError, Sweep
from jit_kernel.benchmark.table import render_table
from jit_kernel.env import DISABLE_LOG_BANDWIDTH, get_bool_env


class Benchmark(Sweep):
    """A declared sweep that can measure itself: what ``@benchmark`` returns."""

    def run(self, argv: Sequence[str] | None = None) -> SweepReport:
        """Measure every cell, print the table, write JSON/PNG if asked; exit 1 on failed cells.

        ``argv`` defaults to ``sys.argv[1:]`` (``--json PATH``, ``--plot PATH``).
        """
        return run_benchmark(self, argv)


def benchmark(
    line_arg: str, line_vals: Sequence[Any], *, unit: str = "us"
) -> Callable[[Callable[..., Any]], Benchmark]:
    """Innermost decorator: ``line_arg`` takes each of ``line_vals`` (one table column each)."""

    def decorate(fn: Callable[..., Any]) -> Benchmark:
        if isinstance(fn, Sweep) or not callable(fn):
            raise BenchmarkDefinitionError(
                f"@benchmark({line_arg!r}, ...) must decorate a plain function, got {fn!r}"
            )
        return Benchmark(fn, line_arg, line_vals, unit)

    return decorate


def measure_cell(bench: Sweep, kwargs: dict[str, object]) -> CellOutcome:
    """Call the benchmark function once; a BenchSkip is N/A, any other exception an error."""
    try:
        result = bench.fn(**kwargs)
    except BenchSkip as skipped:
        return CellOutcome(skip_reason=str(skipped) or "skipped")
    except Exception as error:
        traceback.print_exc(file=sys.stderr)
        return CellOutcome(error=f"{type(error).__name__}: {error}")
    if not isinstance(result, BenchResult):
        return CellOutcome(
            error=f"the benchmark function returned {type(result).__name__}, expected the "
            "BenchResult of marker.do_bench(...)"
        )
    return CellOutcome(result=result)


def measure(bench: Sweep, selection: Selection | None = None) -> SweepReport:
    """Run every (row, line value) cell, rows outer, line values inner.

    With a ``selection`` (``--cells``), a cell not in it is N/A without running.
    """
    rows = bench.rows()
    qualname = getattr(bench.fn, "__qualname__", "benchmark")
    code = getattr(bench.fn, "__code__", None)
    source = None if code is None else relative_location(code.co_filename)
    report = SweepReport(
        name=f"{_file_stem(bench)}.py::{qualname}",
        where=bench.where if code is None else f"{source}:{code.co_firstlineno}: {qualname}",
        source=source,
        line_arg=bench.line_arg,
        line_vals=bench.line_vals,
        axis_names=bench.axis_names,
        unit=bench.unit,
        ci_sweep=bench.uses_ci_values(),
        rows=rows,
        show_bandwidth=not get_bool_env(DISABLE_LOG_BANDWIDTH),
    )
    progress = sys.stderr.isatty()
    for index, row in enumerate(rows, start=1):
        if progress:
            print(
                f"\r[{index}/{len(rows)}] {report.row_label(index - 1)}\033[K",
                end="",
                file=sys.stderr,
                flush=True,
            )
        case = case_label(row)
        report.cells.append(
            [
                measure_cell(bench, {**row, bench.line_arg: value})
                if selection is None or (case, format_value(value)) in selection
                else CellOutcome(skip_reason=NOT_SELECTED)
                for value in bench.line_vals
            ]
        )
    if progress:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    return report


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The options a benchmark file accepts when run as a script."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Run this kernel benchmark and print its table.",
        epilog=f"Environment: {JSON_ENV}=PATH and {PLOT_ENV}=PATH are the defaults of "
        f"--json/--plot; SGLANG_IS_IN_CI=1 selects the small CI sweep; "
        f"{DISABLE_LOG_BANDWIDTH}=1 drops the GB/s columns.",
    )
    parser.add_argument(
        "--json",
        metavar="PATH",
        default=os.environ.get(JSON_ENV) or None,
        help="write the results as JSON (a directory: DIR/<file stem>.json)",
    )
    parser.add_argument(
        "--plot",
        metavar="PATH",
        default=os.environ.get(PLOT_ENV) or None,
        help="write a PNG of latency and GB/s per implementation (needs matplotlib; "
        "a directory: DIR/<file stem>.png)",
    )
    parser.add_argument(
        "--cells",
        metavar="PATH",
        type=Path,
        help='measure only the cells listed in PATH, a JSON list of {"case": ..., "provider": '
        "...} as compare names them; the others are N/A (compare --confirm writes it)",
    )
    return parser


def _file_stem(bench: Sweep) -> str:
    code = getattr(bench.fn, "__code__", None)
    return Path(code.co_filename).stem if code is not None else "benchmark"


def _copy_gbps() -> float | None:
    """The copy-bandwidth line of the plot, measured after the cells; None if it fails."""
    try:
        return measure_copy_gbps()
    except Exception as error:  # a failed probe must not lose the measured cells
        print(
            f"note: the copy-bandwidth probe failed: {type(error).__name__}: {error}",
            file=sys.stderr,
        )
        return None


def run_benchmark(bench: Sweep, argv: Sequence[str] | None = None) -> SweepReport:
    """Parse ``argv``, measure, print, export.

    Exit status: ``SystemExit(1)`` if any cell failed, ``SystemExit(2)`` for an incomplete
    declaration (a parameter neither swept nor defaulted), bad command-line options or an
    unreadable ``--cells`` file.
    """
    parser = build_parser(prog=Path(sys.argv[0]).name if argv is None else None)
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    try:
        selection = None if args.cells is None else load_selection(args.cells)
        report = measure(bench, selection)
    except (BenchmarkDefinitionError, SelectionError) as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    print(render_table(report), flush=True)
    stem = _file_stem(bench)
    if args.json or args.plot:
        document = report_to_dict(report, collect_environment(copy_gbps=_copy_gbps()))
    if args.json:
        written = write_json(document, resolve_output_path(args.json, stem, ".json"))
        print(f"results written to {written}")
    if args.plot:
        try:
            target = resolve_output_path(args.plot, stem, ".png")
            written = write_plot(document_from_dict(target, document), target)
            print(f"plot written to {written}")
        except PlotUnavailableError as error:
            print(f"note: {error}", file=sys.stderr)
    if report.failed:
        print(f"{report.failed} benchmark cell(s) failed (see ERROR above)", file=sys.stderr)
        raise SystemExit(1)
    return report
