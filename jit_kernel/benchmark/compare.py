"""Compare stored benchmark runs cell by cell: ratio, noise, and a verdict per cell.

A cell is (benchmark, case = the row's parameters, provider = the line value, metric). Its noise
is the relative half-spread of its samples: (p75 - p25) / 2 / median, or (max - min) / 2 /
median where no quartiles were recorded (version-1 files); over several runs, also half the
range of the runs' medians. A cell is *suspected* when NEW / BASE - 1 exceeds the larger of the
threshold and ``NOISE_FACTOR`` times the two noises added: the threshold is only as fine as the
noise supports. A suspected cell is *confirmed* by re-measuring it (``confirm``), never by a
wider threshold.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from jit_kernel.benchmark.document import BenchDocument, Cell

DEFAULT_THRESHOLD = 0.05
NOISE_FACTOR = 2.0  # ~ two standard deviations of the ratio when the samples are near-normal

OK, FASTER, SUSPECTED, CONFIRMED, NOT_CONFIRMED, UNJUDGED = (
    "ok",
    "faster",
    "slower?",
    "SLOWER",
    "noise",
    "not judged",
)


@dataclass(frozen=True)
class Measured:
    """A cell's latency over one or more runs: the median, its relative noise, the run count."""

    latency_s: float
    noise: float | None
    runs: int


def cell_noise(cell: Cell) -> float | None:
    """Relative half-spread of one cell's samples (quartiles, else min/max), or None."""
    if cell.latency_s is None:
        return None
    if cell.p25_s is not None and cell.p75_s is not None:
        return (cell.p75_s - cell.p25_s) / 2 / cell.latency_s
    if cell.min_s is not None and cell.max_s is not None:
        return (cell.max_s - cell.min_s) / 2 / cell.latency_s
    return None


def combine(cells: Sequence[Cell]) -> Measured:
    """The median over runs, and the larger of the within-run and across-run noise."""
    values = [cell.latency_s for cell in cells if cell.latency_s is not None]
    median = statistics.median(values)
    within = [n for n in map(cell_noise, cells) if n is not None]
    noise = statistics.median(within) if within else None
    if len(values) > 1:
        noise = max(noise or 0.0, (max(values) - min(values)) / 2 / median)
    return Measured(median, noise, len(values))


@dataclass(frozen=True)
class Row:
    """One compared cell and what the comparison concluded."""

    benchmark: str
    case: str
    provider: str
    metric: str
    unit: str
    unit_scale: float
    base: Measured
    new: Measured
    ratio: float
    limit: float
    verdict: str
    note: str = ""


@dataclass
class Comparison:
    """Every compared row, the cells one side lacks, and notes on what was not judged."""

    rows: list[Row] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    threshold: float = DEFAULT_THRESHOLD

    def with_verdict(self, *verdicts: str) -> list[Row]:
        """The rows whose verdict is one of ``verdicts``."""
        return [row for row in self.rows if row.verdict in verdicts]


def judge(base: Measured, new: Measured, threshold: float) -> tuple[float, float, str]:
    """``(ratio NEW/BASE, limit, verdict)``: OK, FASTER or SUSPECTED."""
    ratio = new.latency_s / base.latency_s
    limit = max(threshold, NOISE_FACTOR * ((base.noise or 0.0) + (new.noise or 0.0)))
    if ratio > 1 + limit:
        return ratio, limit, SUSPECTED
    if ratio < 1 / (1 + limit):
        return ratio, limit, FASTER
    return ratio, limit, OK


def _environment_gap(base: BenchDocument, new: BenchDocument) -> str | None:
    """Why two documents' timings are not comparable (different GPUs), or None."""
    base_gpu, new_gpu = base.environment.get("gpu"), new.environment.get("gpu")
    if base_gpu and new_gpu and base_gpu != new_gpu:
        return f"GPU differs (BASE {base_gpu}, NEW {new_gpu}): timings of two GPUs not judged"
    return None


def _status_text(cell: Cell | None) -> str:
    return "absent" if cell is None else cell.status


def compare_benchmark(
    base: BenchDocument, news: Sequence[BenchDocument], threshold: float, result: Comparison
) -> None:
    """Add ``base`` against the NEW run(s) of the same benchmark to ``result``."""
    gap = _environment_gap(base, news[0])
    if gap:
        result.notes.append(f"{base.benchmark}: {gap}")
    new_maps = [doc.cell_map() for doc in news]
    base_map = base.cell_map()
    for key, base_cell in base_map.items():
        found = [m.get(key) for m in new_maps]
        measured = [c for c in found if c is not None and c.status == "ok"]
        label = f"{base.benchmark} [{key[0]}] {key[1]}"
        if base_cell.status != "ok" or not measured:
            statuses = {base_cell.status, *(_status_text(c) for c in found)}
            if statuses != {"skipped"}:  # N/A on both sides is by design, not missing
                result.missing.append(
                    f"{label}: BASE {base_cell.status}, NEW "
                    f"{'/'.join(sorted({_status_text(c) for c in found}))}"
                )
            continue
        if len(measured) < len(found):
            result.missing.append(f"{label}: measured in {len(measured)} of {len(found)} NEW runs")
        metrics = {c.metric for c in measured}
        base_measured, new_measured = combine([base_cell]), combine(measured)
        ratio, limit, verdict = judge(base_measured, new_measured, threshold)
        note = ""
        if metrics != {base_cell.metric}:
            verdict, note = UNJUDGED, f"metric differs: BASE {base_cell.metric}, NEW {metrics}"
        elif gap:
            verdict, note = UNJUDGED, "GPU differs"
        result.rows.append(
            Row(
                benchmark=base.benchmark,
                case=key[0],
                provider=key[1],
                metric=base_cell.metric or "?",
                unit=base.unit,
                unit_scale=base.unit_scale,
                base=base_measured,
                new=new_measured,
                ratio=ratio,
                limit=limit,
                verdict=verdict,
                note=note,
            )
        )
    for key in sorted({k for m in new_maps for k in m} - set(base_map)):
        result.missing.append(f"{base.benchmark} [{key[0]}] {key[1]}: not in BASE (no baseline)")


def compare_runs(
    base: dict[str, BenchDocument],
    news: Sequence[dict[str, BenchDocument]],
    threshold: float = DEFAULT_THRESHOLD,
) -> Comparison:
    """Compare every benchmark of BASE with the same benchmark of the NEW run(s)."""
    result = Comparison(threshold=threshold)
    for name in sorted(set(base) | {n for run in news for n in run}):
        in_new = [run[name] for run in news if name in run]
        if name not in base:
            cells = len(in_new[0].cells)
            result.missing.append(f"{name}: not in BASE ({cells} cells, no baseline)")
        elif not in_new:
            result.missing.append(f"{name}: not in NEW ({len(base[name].cells)} cells not run)")
        else:
            if len(in_new) < len(news):
                result.missing.append(f"{name}: in {len(in_new)} of {len(news)} NEW runs")
            compare_benchmark(base[name], in_new, threshold, result)
    return result


def confirm(
    result: Comparison,
    remeasure: Callable[[str, list[tuple[str, str]]], Sequence[BenchDocument]],
) -> None:
    """Re-measure the suspected cells; each verdict becomes CONFIRMED or noise.

    ``remeasure(benchmark, [(case, provider), ...])`` returns fresh documents of that benchmark
    holding at least those cells. A suspected cell is confirmed when the median of the fresh
    runs is again beyond the limit (recomputed with the fresh runs' noise); otherwise it was
    noise.
    """
    suspected = sorted({row.benchmark for row in result.with_verdict(SUSPECTED)})
    for name in suspected:
        cells = [
            (r.case, r.provider) for r in result.with_verdict(SUSPECTED) if r.benchmark == name
        ]
        fresh = remeasure(name, cells)
        maps = [doc.cell_map() for doc in fresh]
        for index, row in enumerate(result.rows):
            if row.benchmark != name or row.verdict != SUSPECTED:
                continue
            cells = [c for m in maps if (c := m.get((row.case, row.provider))) and c.latency_s]
            if not cells:
                note = "the re-run did not measure it: kept as a regression"
                result.rows[index] = replace(row, verdict=CONFIRMED, note=note)
                continue
            again = combine(cells)
            ratio, limit, verdict = judge(row.base, again, result.threshold)
            confirmed = verdict == SUSPECTED
            result.rows[index] = replace(
                row,
                verdict=CONFIRMED if confirmed else NOT_CONFIRMED,
                note=f"re-measured {again.runs}x: {ratio:.3f}x (limit {limit:.1%})",
            )


def regressions(result: Comparison, confirmed_only: bool) -> list[Row]:
    """The rows that fail the gate: confirmed ones, plus suspected ones if none was re-measured."""
    verdicts = (CONFIRMED,) if confirmed_only else (CONFIRMED, SUSPECTED)
    return result.with_verdict(*verdicts)
