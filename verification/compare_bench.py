"""Compare the kernel benchmark of old and new code run in one session (compare_old_new.sh).

``python -m verification.compare_bench OLD.json NEW.json [NEW2.json ...] --max-slowdown 0.02``

Reads the ``--json`` files of ``bench_jit_kernels`` and prints one line per bandwidth row
(kernel and shape) with the old and new microseconds; with several new runs (new, old, new) the
new time is their mean, so a drift of the GPU's speed during the session cancels. Exit code 1
when a row is slower than old by more than ``--max-slowdown`` (or a row of the old run is
missing from a new one), 2 for unreadable files.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path


def rows_of(path: Path) -> dict[tuple[str, str], float]:
    """(kernel, shape) -> our microseconds, from one bench_jit_kernels --json file."""
    data = json.loads(path.read_text())
    return {(row["kernel"], row["shape"]): float(row["ours_us"]) for row in data["rows"]}


def compare(
    old: dict[tuple[str, str], float],
    news: list[dict[tuple[str, str], float]],
    max_slowdown: float,
) -> tuple[list[str], list[str]]:
    """(printed lines, failures): new / old per row of the old run."""
    lines = [f"{'kernel':<20}{'shape':<28}{'old us':>9}{'new us':>9}{'new/old':>9}"]
    failures = []
    for key, old_us in old.items():
        found = [run[key] for run in news if key in run]
        if len(found) != len(news):
            failures.append(f"{key[0]} {key[1]}: missing from a new run")
            continue
        new_us = statistics.fmean(found)
        ratio = new_us / old_us
        mark = "  SLOWER" if ratio > 1 + max_slowdown else ""
        lines.append(f"{key[0]:<20}{key[1]:<28}{old_us:>9.2f}{new_us:>9.2f}{ratio:>8.3f}x{mark}")
        if mark:
            failures.append(f"{key[0]} {key[1]}: {ratio:.3f}x the old time")
    return lines, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path, help="bench_jit_kernels --json of the old code")
    parser.add_argument("new", type=Path, nargs="+", help="the same of the new code (1 or more)")
    parser.add_argument(
        "--max-slowdown",
        type=float,
        default=0.02,
        help="largest allowed new/old - 1 per row (default 0.02)",
    )
    args = parser.parse_args(argv)
    try:
        old = rows_of(args.old)
        news = [rows_of(path) for path in args.new]
    except (OSError, ValueError, KeyError) as error:
        print(f"compare_bench: cannot read the benchmark JSON: {error}", file=sys.stderr)
        return 2
    lines, failures = compare(old, news, args.max_slowdown)
    print("\n".join(lines))
    limit = f"{args.max_slowdown:.0%}"
    if failures:
        print(f"\n{len(failures)} row(s) slower than old by more than {limit}:")
        print("\n".join(f"  {failure}" for failure in failures))
        return 1
    print(f"\nno row slower than old by more than {limit} ({len(old)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
