#!/usr/bin/env python3
"""Benchmark static discovery + validation against ``pytest --collect-only`` on a generated tree.

Usage::

    python -m benchmarks.runner.bench_discovery [--files 5000] [--repeat 3] [--workers N] [--skip-pytest]
    python -m benchmarks.runner.bench_discovery --shape sglang [--files 1500]

Generates ``--files`` registered test files in a temporary repository, then times:

* ``collect()``: discovery, parsing and validation of every registration (in process, best of
  ``--repeat``), which must stay under 2 s for 5,000 files of the simple shape, and under 1 s
  for 1,500 files of the SGLang shape;
* ``run_suite.py --dry-run`` end to end in a fresh process (start-up, catalog, discovery,
  selection, planning, printing);
* ``python -m pytest --collect-only -q`` on the same tree (one run; it imports every file;
  simple shape only, since SGLang-shaped files import ``sglang``).

Shapes: ``simple`` (50 folders, realistic size: imports, one or two registrations, a few tests,
the ``__main__`` block) and ``sglang`` (``testing/sglang_tree.py``: a tree shaped
like SGLang's ``test/registered/``, every registration style, adopted with ``run_suite.py init``
before timing).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

from ci_runner.catalog import load_catalog  # noqa: E402
from ci_runner.cli import main as run_suite_main  # noqa: E402
from ci_runner.collect import collect  # noqa: E402
from testing import sglang_tree  # noqa: E402
from testing.tree_builder import catalog_toml, suite_toml, write_tree  # noqa: E402

DEFAULT_FILES = {"simple": 5000, "sglang": 1500}
TARGET_SECONDS = {"simple": 2.0, "sglang": 1.0}
# The suite the dry run selects, per shape.
DRY_RUN_SUITE = {"simple": ("cpu", "unit-cpu"), "sglang": ("cuda", "base-b-test-1-gpu-large")}

CATALOG = catalog_toml(
    suite_toml("unit-cpu", "cpu", gpus_per_file=0),
    suite_toml("extra-cpu", "cpu", gpus_per_file=0),
    registered_dir="registered",
)

FILE_TEMPLATE = '''\
"""Generated test file {index}."""

import sys

import pytest

from ci_runner import register_cpu_ci

{registrations}

CASES = [(i, i * {index}) for i in range(8)]


def helper(value: int) -> int:
    """A helper the tests share."""
    return value * 2 + {index}


@pytest.mark.parametrize("a,b", CASES)
def test_product(a, b):
    assert b == a * {index}


def test_helper():
    assert helper(1) == 2 + {index}


class TestGroup:
    def test_one(self):
        assert sum(range(4)) == 6

    def test_two(self):
        assert "x" * 3 == "xxx"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
'''


def generate(root: Path, count: int, seed: int = 0) -> None:
    """Write the catalog and ``count`` registered files under ``root``."""
    rng = random.Random(seed)
    files = {}
    for index in range(count):
        est = round(rng.lognormvariate(3.0, 1.0), 1) + 1
        lines = [f'register_cpu_ci(est_time={est}, suite="unit-cpu")']
        if index % 7 == 0:
            lines.append(f'register_cpu_ci(est_time={est}, suite="extra-cpu", disabled="slow")')
        prefix = "bench" if index % 10 == 0 else "test"
        rel = f"area_{index % 50:02d}/{prefix}_{index:05d}.py"
        files[rel] = FILE_TEMPLATE.format(index=index, registrations="\n".join(lines))
    write_tree(root, CATALOG, files, under="registered")


def generate_sglang(root: Path, count: int, seed: int = 0) -> str:
    """Write a SGLang-shaped tree and adopt it with ``run_suite.py init``; a one-line summary."""
    files = sglang_tree.generate(count, seed)
    sglang_tree.write(root, files)
    with contextlib.redirect_stdout(io.StringIO()):
        if run_suite_main(["init", "--root", str(root)]) != 0:
            raise SystemExit("run_suite.py init failed on the generated tree")
    regs = [r for f in files for r in f.regs]
    composed = sum(1 for r in regs if r.stage is not None)
    return f"SGLang shape: {composed / len(regs):.0%} of registrations use stage=/runner_config="


def time_collect(root: Path, repeat: int, workers: int | None) -> tuple[float, float, int, int]:
    """(best, mean) seconds of catalog + collect(); and the file and registration counts."""
    times = []
    collection = None
    for _ in range(repeat):
        start = time.perf_counter()
        collection = collect(load_catalog(root), workers=workers)
        times.append(time.perf_counter() - start)
    assert collection is not None and not collection.problems, collection and collection.problems
    return min(times), sum(times) / len(times), len(collection.files), len(collection.registrations)


def time_command(command: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--shape",
        choices=sorted(DEFAULT_FILES),
        default="simple",
        help="tree to generate: simple (default) or sglang (SGLang's test/registered shape)",
    )
    parser.add_argument(
        "--files", type=int, help="files to generate (default 5000; 1500 with --shape sglang)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="in-process collect() runs (3)")
    parser.add_argument(
        "--workers", type=int, help="collect() worker processes (default: one per CPU, max 8)"
    )
    parser.add_argument("--skip-pytest", action="store_true", help="skip pytest --collect-only")
    args = parser.parse_args(argv)
    if args.files is None:
        args.files = DEFAULT_FILES[args.shape]
    if args.files < 1 or args.repeat < 1:
        parser.error("--files and --repeat must be positive")

    with tempfile.TemporaryDirectory(prefix="bench-discovery-") as tmp:
        root = Path(tmp)
        if args.shape == "sglang":
            print(generate_sglang(root, args.files))
        else:
            generate(root, args.files)
        best, mean, files, registrations = time_collect(root, args.repeat, args.workers)
        print(
            f"tree: {files} files, {registrations} registrations, python {sys.version.split()[0]}"
        )
        print(f"collect() in process: best {best:.3f} s, mean {mean:.3f} s over {args.repeat} runs")
        target = TARGET_SECONDS[args.shape]
        verdict = "within" if best < target else "OVER"
        print(f"target for this shape: under {target:g} s ({verdict})")
        hw, suite = DRY_RUN_SUITE[args.shape]
        dry, done = time_command(
            [
                sys.executable,
                str(REPO_ROOT / "run_suite.py"),
                "--root",
                str(root),
                "--hw",
                hw,
                "--suite",
                suite,
                "--dry-run",
                "--auto-partition-id",
                "0",
                "--auto-partition-size",
                "8",
            ],
            root,
        )
        dry_ok = done.returncode == 0
        if dry_ok:
            print(f"run_suite.py --dry-run (fresh process, 8 shards): {dry:.3f} s")
        else:
            print(f"run_suite.py --dry-run failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        if args.skip_pytest or args.shape == "sglang":
            return 0
        collect_only, done = time_command(
            [
                sys.executable,
                "-m",
                "pytest",
                "--collect-only",
                "-q",
                "-p",
                "no:cacheprovider",
                "registered",
            ],
            root,
        )
        if done.returncode != 0:
            print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
            return 1
        print(f"pytest --collect-only -q (fresh process): {collect_only:.3f} s")
        print(f"ratio pytest --collect-only / collect(): {collect_only / best:.1f}x")
        if dry_ok:
            print(
                f"ratio pytest --collect-only / run_suite.py --dry-run: {collect_only / dry:.1f}x"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
