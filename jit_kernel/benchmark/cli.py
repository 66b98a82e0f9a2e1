"""``python -m jit_kernel.benchmark compare|plot``: the regression gate and the stored-result plot.

Exit status: 0 no regression (or the plot was written), 1 a slowdown beyond the limit that was
confirmed (or, without ``--confirm``, suspected), 2 bad usage or a file that is not a benchmark
result.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from jit_kernel.benchmark.compare import (
    DEFAULT_THRESHOLD,
    NOT_CONFIRMED,
    SUSPECTED,
    Comparison,
    compare_runs,
    confirm,
    regressions,
)
from jit_kernel.benchmark.comparison_table import (
    describe_environment,
    render_markdown,
    render_text,
)
from jit_kernel.benchmark.document import BenchDocument, DocumentError, load_document, load_run
from jit_kernel.benchmark.plot import PlotInputError, PlotUnavailableError, write_plot
from jit_kernel.benchmark.remeasure import RemeasureError, remeasure

MAX_CONFIRM_RUNS = 20  # each re-run is a whole benchmark file; more is a typo, not a plan


def _bounded(what: str, low: float, high: float) -> Callable[[str], float]:
    """An argparse ``type``: a finite number in (low, high); else a usage error saying ``what``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and low < value < high):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    return parse


def _count(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= MAX_CONFIRM_RUNS:
        raise argparse.ArgumentTypeError(
            f"expected a number of runs 0..{MAX_CONFIRM_RUNS}, got {text!r}"
        )
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    """The ``compare`` and ``plot`` subcommands."""
    parser = argparse.ArgumentParser(
        prog="python -m jit_kernel.benchmark",
        description="Compare or plot stored benchmark results (--json files; docs/benchmarks.md).",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{compare,plot}")
    compare = commands.add_parser(
        "compare",
        help="ratio NEW/BASE per cell with its noise; exit 1 on a confirmed slowdown",
        description="Match the cells of BASE and NEW (benchmark, case, provider, metric), print "
        "each ratio with its noise, and exit 1 on a slowdown beyond the limit the noise "
        "supports. BASE and NEW are result files or directories of them.",
    )
    compare.add_argument("base", type=Path, metavar="BASE", help="the baseline run")
    compare.add_argument(
        "new", type=Path, nargs="+", metavar="NEW", help="the run(s) to judge; several: median"
    )
    compare.add_argument(
        "--threshold",
        type=_bounded("a fraction in (0, 10) such as 0.05", 0, 10),
        default=DEFAULT_THRESHOLD,
        help=f"smallest slowdown that counts, as a fraction (default {DEFAULT_THRESHOLD}); a "
        "noisier cell gets a wider limit",
    )
    compare.add_argument(
        "--confirm",
        type=_count,
        default=0,
        metavar="N",
        help="re-run each benchmark with a suspected cell N times (its source file, from "
        "--root); only a slowdown the re-runs repeat fails",
    )
    compare.add_argument(
        "--root",
        type=Path,
        default=Path.cwd(),
        help="repository root the re-runs start in (default: the working directory)",
    )
    compare.add_argument(
        "--markdown", type=Path, metavar="PATH", help="append a Markdown table to PATH"
    )
    plot = commands.add_parser(
        "plot",
        help="redraw a stored result as a PNG",
        description="Latency with min/max bars, GB/s with the copy-bandwidth line and the "
        "speed-up over a baseline provider; the device and commit in the title.",
    )
    plot.add_argument("json", type=Path, metavar="JSON", help="a result file written by --json")
    plot.add_argument("-o", "--output", type=Path, help="the PNG (default: JSON with .png)")
    plot.add_argument(
        "--baseline", help="provider the speed-up is relative to (default: torch, else the last)"
    )
    plot.add_argument(
        "--peak-gbps",
        type=_bounded("a bandwidth in GB/s > 0", 0, math.inf),
        help="draw this bandwidth line instead of the copy bandwidth recorded in the JSON",
    )
    return parser


def _summary(result: Comparison, failing: int, confirmed_only: bool) -> str:
    judged = len(result.rows)
    if failing:
        how = "confirmed by re-measuring" if confirmed_only else "not re-measured (--confirm N)"
        return f"FAIL: {failing} of {judged} cells slower beyond their limit, {how}"
    if not judged:
        return "OK (nothing judged): no cell was measured on both sides"
    noise = len(result.with_verdict(NOT_CONFIRMED))
    tail = f"; {noise} suspected cell(s) were noise on re-measuring" if noise else ""
    return f"OK: no slowdown beyond the limit in {judged} cells{tail}"


def run_compare(args: argparse.Namespace) -> int:
    """Load, compare, confirm, print; the exit status."""
    base = load_run(args.base)
    news = [load_run(path) for path in args.new]
    result = compare_runs(base, news, args.threshold)
    if args.confirm and result.with_verdict(SUSPECTED):
        latest = news[-1]
        with tempfile.TemporaryDirectory(prefix="bench-confirm-") as workdir:

            def again(name: str, cells: list[tuple[str, str]]) -> list[BenchDocument]:
                return remeasure(latest[name], cells, args.confirm, args.root, Path(workdir))

            confirm(result, again)
    failing = regressions(result, confirmed_only=bool(args.confirm))
    summary = _summary(result, len(failing), bool(args.confirm))
    environments = [
        describe_environment("BASE", list(base.values())),
        *(
            describe_environment(f"NEW {i}" if len(news) > 1 else "NEW", list(run.values()))
            for i, run in enumerate(news, start=1)
        ),
    ]
    print(render_text(result, environments, summary))
    if args.markdown:
        try:
            with args.markdown.open("a", encoding="utf-8") as out:
                out.write(render_markdown(result, environments, summary))
        except OSError as error:
            print(f"error: --markdown {args.markdown}: {error.strerror}", file=sys.stderr)
            return 2
    return 1 if failing else 0


def run_plot(args: argparse.Namespace) -> int:
    """Redraw one stored result; the exit status."""
    document = load_document(args.json)
    target = args.output or args.json.with_suffix(".png")
    try:
        written = write_plot(document, target, baseline=args.baseline, peak_gbps=args.peak_gbps)
    except OSError as error:
        print(f"error: cannot write the plot {target}: {error.strerror}", file=sys.stderr)
        return 2
    print(f"plot written to {written}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; see the module docstring for the exit status."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "compare":
            return run_compare(args)
        return run_plot(args)
    except (DocumentError, PlotInputError, PlotUnavailableError, RemeasureError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


__all__ = ["build_parser", "main"]
