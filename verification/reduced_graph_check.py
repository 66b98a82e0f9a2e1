"""Does building the static graph from the undecided tests alone change what it keeps of them?

With ``--deps-from``, a test its record decides is kept or dropped by the record alone, and
:func:`ci_runner.impact.select_changed` builds the static graph from the other tests only. The
graph's module-resolution bases come from the tests in it (their directories, their packages'
bases, the ``sys.path`` edits they reach), so fewer roots can only remove bases that were never
on an undecided test's own ``sys.path`` (each test file runs in its own process). This check
runs the selection twice on a real tree for many changed files and random decided subsets:
once as shipped, once with the graph built from every test (as before), and compares what each
keeps of the undecided tests. A test the reduced graph drops that the full one keeps is listed
with both reasons; exit 1 if there is any.

    python -m verification.reduced_graph_check --root /tmp/sgl --hw cpu --suite base-a-test-cpu  # no-check: needs the SGLang tree
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

from ci_runner.catalog.suites import load_catalog
from ci_runner.collect.discovery import collect
from ci_runner.impact import Change, ChangeSet
from ci_runner.select.files import select
from testing.graph_roots import kept_undecided


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--hw", required=True)
    parser.add_argument("--suite", required=True)
    parser.add_argument("--changes", type=int, default=60, help="changed files sampled")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    catalog = load_catalog(args.root)
    selection = select(collect(catalog).registrations, catalog, args.hw, [args.suite], False)
    tests = sorted(f.path for f in selection.files)
    rng = random.Random(args.seed)
    sources = sorted(
        str(p.relative_to(args.root))
        for p in args.root.rglob("*.py")
        if ".git" not in p.parts and "__pycache__" not in p.parts
    )
    changed = rng.sample(sources, min(args.changes, len(sources)))
    drops = more = compared = 0
    for path in changed:
        decided = set(rng.sample(tests, len(tests) // 2))
        change_set = ChangeSet("check", (Change(path),))
        full = kept_undecided(selection, catalog, change_set, decided, full=True)
        reduced = kept_undecided(selection, catalog, change_set, decided, full=False)
        compared += len(tests) - len(decided)
        for test in sorted(set(full) - set(reduced)):
            drops += 1
            print(f"DROPPED {test} for {path}: the full graph keeps it ({full[test]})")
        more += len(set(reduced) - set(full))
    print(
        f"{len(changed)} changed file(s), {compared} undecided test verdicts compared: "
        f"{drops} kept by the full graph only, {more} kept by the reduced graph only"
    )
    return 1 if drops else 0


if __name__ == "__main__":
    sys.exit(main())
