"""The printed comparison: a text table for the log, a Markdown table for a CI step summary."""

from __future__ import annotations

from collections.abc import Sequence

from jit_kernel.benchmark.compare import Comparison, Measured, Row
from jit_kernel.benchmark.document import BenchDocument
from jit_kernel.benchmark.table import format_latency

HEADERS = (
    "benchmark",
    "case",
    "provider",
    "metric",
    "base",
    "new",
    "ratio",
    "noise",
    "limit",
    "verdict",
)
COMMIT_CHARS = 12
ENVIRONMENT_KEYS = (
    "gpu",
    "driver",
    "cuda_runtime",
    "torch",
    "apache_tvm_ffi",
    "jit_kernel_commit",
    "timestamp",
)


def _noise(base: Measured, new: Measured) -> str:
    if base.noise is None and new.noise is None:
        return "?"
    return f"±{(base.noise or 0.0) + (new.noise or 0.0):.1%}"


def _value(measured: Measured, row: Row) -> str:
    text = format_latency(measured.latency_s * row.unit_scale)
    return f"{text} {row.unit}" + (f" ({measured.runs} runs)" if measured.runs > 1 else "")


def row_cells(row: Row) -> list[str]:
    """The table cells of one row, in HEADERS order."""
    verdict = row.verdict + (f": {row.note}" if row.note else "")
    return [
        row.benchmark,
        row.case,
        row.provider,
        row.metric,
        _value(row.base, row),
        _value(row.new, row),
        f"{row.ratio:.3f}x",
        _noise(row.base, row.new),
        f"{row.limit:.1%}",
        verdict,
    ]


def describe_environment(label: str, documents: Sequence[BenchDocument]) -> str:
    """``BASE: gpu=..., torch=..., commit=...`` from the first document that recorded one."""
    for document in documents:
        if document.environment:
            env = dict(document.environment)
            if env.get("jit_kernel_commit"):
                dirty = " (+local changes)" if env.get("jit_kernel_dirty") else ""
                env["jit_kernel_commit"] = env["jit_kernel_commit"][:COMMIT_CHARS] + dirty
            parts = [f"{k}={env[k]}" for k in ENVIRONMENT_KEYS if env.get(k) is not None]
            return f"{label}: " + ", ".join(parts)
    return f"{label}: no environment recorded (schema_version 1)"


def render_text(result: Comparison, environments: Sequence[str], summary: str) -> str:
    """Aligned columns, then the missing cells, the notes and the one-line summary."""
    table = [list(HEADERS), *(row_cells(row) for row in result.rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADERS) - 1)]
    lines = [*environments, ""]
    for index, line in enumerate(table):
        lines.append(
            "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=False)) + "  " + line[-1]
        )
        if index == 0:
            lines.append("-" * (sum(widths) + 2 * len(widths) + len(HEADERS[-1])))
    lines += _lists(result, "  ")
    lines += ["", summary]
    return "\n".join(lines)


def render_markdown(result: Comparison, environments: Sequence[str], summary: str) -> str:
    """A GitHub-flavoured Markdown table with the same content."""
    lines = ["### Benchmark comparison", "", summary, ""]
    lines += [f"- {text}" for text in environments]
    lines += ["", "| " + " | ".join(HEADERS) + " |", "|" + " --- |" * len(HEADERS)]
    for row in result.rows:
        cells = [c.replace("|", "\\|") for c in row_cells(row)]
        lines.append("| " + " | ".join(cells) + " |")
    extra = _lists(result, "- ")
    if extra:
        lines += ["", *extra]
    return "\n".join(lines) + "\n"


def _lists(result: Comparison, bullet: str) -> list[str]:
    lines: list[str] = []
    if result.missing:
        lines += ["", f"Cells on one side only or not measured ({len(result.missing)}):"]
        lines += [f"{bullet}{text}" for text in result.missing]
    if result.notes:
        lines += ["", "Not judged:"]
        lines += [f"{bullet}{text}" for text in result.notes]
    return lines
