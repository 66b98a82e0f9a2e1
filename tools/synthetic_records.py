"""A synthetic ``--record-deps`` directory for timing ``--deps-from`` on a tree whose tests
cannot run here (SGLang's): every Python file under ``--under`` counts as recorded.

Each test file of the suite gets a valid record at the tree's ``HEAD`` (a clean git checkout)
that ran: its own blocks, the module-level block and one function of each ``--every`` file (the
files every test imports, such as a package's shared utilities), and the whole of an equal
share of the other Python files under ``--under`` (their module level and every function), so
the records together ran every such file. The records only exercise the selection's cost; they
say nothing about what SGLang's tests really run.

    python -m tools.synthetic_records --root TREE --hw cpu --suite base-a-test-cpu \
        --under python --every python/sglang/srt/utils/common.py --out DIR
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from ci_runner.catalog import load_catalog
from ci_runner.collect import collect
from ci_runner.impact.blocks import MODULE, block_hashes
from ci_runner.impact.record_format import FileRecord, file_digest, write_meta, write_test_record


def suite_tests(root: Path, hw: str, suite: str) -> list[str]:
    """The enabled test files of ``suite`` on ``hw``."""
    collection = collect(load_catalog(root))
    return sorted(
        {
            r.path
            for r in collection.registrations
            if r.suite == suite and r.backend == hw and r.disabled is None
        }
    )


def clean_head(root: Path) -> str:
    """The commit of a clean checkout (records must name the commit the tree is at)."""
    status = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    if status.stdout.strip():
        raise SystemExit(f"error: {root} has uncommitted changes; records need a clean HEAD")
    head = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    )
    return head.stdout.strip()


def blocks_of(root: Path, path: str) -> dict[str, str] | None:
    try:
        return block_hashes((root / path).read_bytes())
    except OSError:
        return None


def write(root: Path, tests: list[str], under: str, every: list[str], out: Path) -> int:
    """Write the records; the number of Python files they ran."""
    commit = clean_head(root)
    shared = sorted(p.relative_to(root).as_posix() for p in (root / under).rglob("*.py"))
    shared = [p for p in shared if p not in every and p not in tests]
    base: dict[str, dict[str, str]] = {}
    for path in every:
        blocks = blocks_of(root, path)
        if blocks is None:
            raise SystemExit(f"error: --every {path}: not a readable Python file of the tree")
        first = next((k for k in sorted(blocks) if k != MODULE), None)
        base[path] = {k: blocks[k] for k in (MODULE, first) if k is not None}
    write_meta(out, commit)
    ran = set(base)
    for index, test in enumerate(tests):
        code = dict(base)
        for path in [test, *shared[index :: len(tests)]]:
            blocks = blocks_of(root, path)
            if blocks is not None:
                code[path] = blocks
        ran |= set(code)
        sources = {path: file_digest(root / path) or "" for path in code}
        write_test_record(out, FileRecord(test, commit, "passed", code=code, sources=sources))
    return len(ran)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, required=True, help="a clean git checkout")
    parser.add_argument("--hw", required=True)
    parser.add_argument("--suite", required=True)
    parser.add_argument("--under", default="python", help="the Python files recorded")
    parser.add_argument("--every", action="append", default=[], help="a file every test ran")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    tests = suite_tests(args.root, args.hw, args.suite)
    if not tests:
        print(f"error: --suite {args.suite}: no enabled file on --hw {args.hw}", file=sys.stderr)
        return 2
    files = write(args.root, tests, args.under, args.every, args.out)
    print(f"{args.out}: {len(tests)} test record(s) ran {files} Python file(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
