"""A PNG of one stored result: latency with min/max error bars, GB/s under the copy-bandwidth
line, and the speed-up of every provider over a baseline provider.

The x axis is the last swept parameter; every combination of the other axes is its own line
(one color per provider, one line style per combination). matplotlib is the optional ``bench``
extra; without it :class:`PlotUnavailableError` says how to install it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from jit_kernel.benchmark.document import BenchDocument, Cell
from jit_kernel.benchmark.report import format_value

LINE_STYLES = ("-", "--", ":", "-.")
COMMIT_CHARS = 10


class PlotUnavailableError(RuntimeError):
    """A plot was asked for but matplotlib cannot be imported."""


class PlotInputError(ValueError):
    """The plot options do not fit the document (e.g. an unknown baseline provider)."""


def title(document: BenchDocument) -> str:
    """``bench.py::benchmark`` and, below it, the device, commit and time it was measured."""
    env = document.environment
    commit = env.get("jit_kernel_commit")
    commit_text = "commit unknown" if not commit else f"commit {commit[:COMMIT_CHARS]}"
    if env.get("jit_kernel_dirty"):
        commit_text += " (+local changes)"
    parts = [env.get("gpu") or "GPU unknown", commit_text]
    if env.get("timestamp"):
        parts.append(str(env["timestamp"]))
    return f"{document.benchmark}\n{', '.join(parts)}"


def groups(document: BenchDocument) -> tuple[str, list[str], dict[str, dict[str, dict]]]:
    """``(x axis name, x labels in order, group -> provider -> x label -> cell)``."""
    x_name = document.axes[-1] if document.axes else document.line_arg
    x_labels: list[str] = []
    grouped: dict[str, dict[str, dict[str, Cell]]] = {}
    for cell in document.cells:
        params = dict(cell.params)
        x = format_value(params.pop(x_name, ""))
        if x not in x_labels:
            x_labels.append(x)
        group = ", ".join(f"{k}={format_value(v)}" for k, v in params.items())
        grouped.setdefault(group, {}).setdefault(cell.provider, {})[x] = cell
    return x_name, x_labels, grouped


def _latency(cell: Cell | None, scale: float) -> tuple[float, float, float]:
    """``(median, median - min, max - median)`` in the document's unit; NaN if not measured."""
    if cell is None or cell.latency_s is None:
        return math.nan, 0.0, 0.0
    low = cell.min_s if cell.min_s is not None else cell.latency_s
    high = cell.max_s if cell.max_s is not None else cell.latency_s
    return cell.latency_s * scale, (cell.latency_s - low) * scale, (high - cell.latency_s) * scale


def _import_pyplot(path: Path) -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise PlotUnavailableError(
            f"cannot write the plot {path}: matplotlib is not installed "
            "(pip install matplotlib, or the project's [bench] extra)"
        ) from error
    return plt


def choose_baseline(document: BenchDocument, baseline: str | None) -> str | None:
    """The speed-up panel's reference provider: ``baseline``, else "torch" if present, else the
    last provider; None when there is only one provider (no panel)."""
    if baseline is not None:
        if baseline not in document.line_vals:
            raise PlotInputError(
                f"--baseline {baseline!r} is not a provider of {document.path} "
                f"({document.line_arg}: {', '.join(document.line_vals)})"
            )
        return baseline
    if len(document.line_vals) < 2:
        return None
    return "torch" if "torch" in document.line_vals else document.line_vals[-1]


def write_plot(
    document: BenchDocument,
    path: Path,
    baseline: str | None = None,
    peak_gbps: float | None = None,
) -> Path:
    """Draw ``document`` into a PNG at ``path`` (parents created); return the path.

    ``peak_gbps`` overrides the copy bandwidth recorded in the document's environment.
    """
    reference = choose_baseline(document, baseline)
    plt = _import_pyplot(path)
    x_name, x_labels, grouped = groups(document)
    with_bandwidth = any(cell.bandwidth_gbps for cell in document.cells)
    panels = [
        "latency",
        *(["bandwidth"] if with_bandwidth else []),
        *(["speedup"] if reference else []),
    ]
    figure, axes = plt.subplots(
        len(panels),
        1,
        figsize=(max(7.0, 0.6 * len(x_labels) + 4), 3.6 * len(panels) + 0.8),
        squeeze=False,
    )
    ax = {name: axes[i][0] for i, name in enumerate(panels)}
    colors = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    xs = list(range(len(x_labels)))
    for c, provider in enumerate(document.line_vals):
        for g, (group, providers) in enumerate(grouped.items()):
            cells = [providers.get(provider, {}).get(x) for x in x_labels]
            label = provider + (f" [{group}]" if group else "")
            style = {"color": colors[c % len(colors)], "linestyle": LINE_STYLES[g % 4]}
            points = [_latency(cell, document.unit_scale) for cell in cells]
            ax["latency"].errorbar(
                xs,
                [p[0] for p in points],
                yerr=[[p[1] for p in points], [p[2] for p in points]],
                marker="o",
                capsize=3,
                label=label,
                **style,
            )
            if with_bandwidth:
                bandwidth = [(cell.bandwidth_gbps if cell else None) or math.nan for cell in cells]
                ax["bandwidth"].plot(xs, bandwidth, marker="o", label=label, **style)
            if reference:
                base = [providers.get(reference, {}).get(x) for x in x_labels]
                speedup = [
                    b.latency_s / cell.latency_s
                    if cell and b and cell.latency_s and b.latency_s
                    else math.nan
                    for cell, b in zip(cells, base, strict=True)
                ]
                ax["speedup"].plot(xs, speedup, marker="o", label=label, **style)
    ax["latency"].set_ylabel(f"latency ({document.unit}), bars: min..max")
    ax["latency"].set_yscale("log")
    if with_bandwidth:
        ax["bandwidth"].set_ylabel("GB/s (1e9 bytes/s)")
        peak = peak_gbps if peak_gbps is not None else document.environment.get("copy_gbps")
        if peak:
            source = "given" if peak_gbps is not None else "measured"
            ax["bandwidth"].axhline(
                peak, color="black", linestyle="--", label=f"copy bandwidth ({source}) {peak:.0f}"
            )
    if reference:
        ax["speedup"].set_ylabel(f"speed-up over {reference} (x)")
        ax["speedup"].axhline(1.0, color="black", linewidth=0.8)
    axes[0][0].set_title(title(document), fontsize=10)
    for (axis,) in axes:
        axis.set_xticks(xs)
        axis.set_xticklabels(x_labels, rotation=30, ha="right", fontsize=8)
        axis.set_xlabel(x_name)
        axis.grid(True, alpha=0.3)
        axis.legend(title=document.line_arg, fontsize=7)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
