"""``run_suite.py partitions --workflow W``: the shard counts of a workflow's stage suites, printed
exactly as the repository's partition script prints them (SGLang's ``compute_partitions.py``),
computed from the catalog's ``[tool.ci-runner.partitions]`` rule and the registrations' est_time
(or a model file's measurements).

Exit 0 printed, 2 a usage, catalog, registration or sizing error (one line naming it).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ci_runner.catalog import CatalogError, find_root, load_catalog
from ci_runner.cli_errors import StoreOnce, usage_error
from ci_runner.collect import collect
from ci_runner.exit_codes import EXIT_OK, EXIT_USAGE
from ci_runner.plan.live_estimates import LiveEstimateError
from ci_runner.plan.partition_sizes import (
    PartitionSizeError,
    load_model,
    partition_sizes,
    partitions_json,
)
from ci_runner.safe_text import one_line
from ci_runner.workflows.stage_jobs import StageJobsError, stage_budgets

PROG = "run_suite.py partitions"
DESCRIPTION = (
    "Print the shard count, shard array and parallelism of each stage suite of a workflow, as "
    "the catalog's [tool.ci-runner.partitions] rule sizes them (SGLang's compute_partitions.py)."
)


def add_partitions_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", action=StoreOnce, metavar="DIR", help="repository root")
    parser.add_argument(
        "--workflow",
        action=StoreOnce,
        required=True,
        metavar="PATH",
        help="the workflow whose stage jobs to size, relative to the root "
        "(e.g. .github/workflows/pr-test.yml)",
    )
    parser.add_argument(
        "--partition-model-file",
        action=StoreOnce,
        type=Path,
        metavar="PATH",
        help="measured seconds and per-suite fit ({est, fit}, SGLang's model.json); missing: "
        "est_time, with a notice",
    )
    parser.add_argument(
        "--full-parallel",
        choices=("true", "false"),
        default="false",
        help="max_parallel = size for every suite (a scheduled or high-priority run)",
    )
    parser.add_argument(
        "--output-format",
        choices=("json", "gha"),
        default="json",
        help="json: the object; gha: partitions=<object>, for $GITHUB_OUTPUT",
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION)
    add_partitions_arguments(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return _partitions(args)
    except (CatalogError, StageJobsError, PartitionSizeError, LiveEstimateError) as exc:
        return usage_error(exc, prog=PROG)


def _partitions(args: argparse.Namespace) -> int:
    root = Path(args.root).resolve() if args.root else find_root(Path.cwd())
    catalog = load_catalog(root)
    rule = catalog.partitions
    if rule is None:
        raise CatalogError(
            f"{catalog.where()}: no partitions table; run_suite.py init drafts it from the "
            "repository's partition script (docs/ci-wiring.md)"
        )
    workflow = root / args.workflow
    budgets = stage_budgets(
        workflow, args.workflow, rule.stage_workflows, rule.suite_input, rule.budget_input
    )
    collection = collect(catalog)
    blocking = [p for p in collection.problems if not p.lint]
    if blocking:
        for problem in blocking:
            print(one_line(str(problem)), file=sys.stderr)
        return usage_error(f"{len(blocking)} registration problem(s); nothing was sized", prog=PROG)
    model = load_model(args.partition_model_file, [*budgets, *rule.pinned])
    if model.notice:
        print(model.notice, file=sys.stderr)
    result = partition_sizes(
        rule, collection.registrations, budgets, model, args.full_parallel == "true"
    )
    text = partitions_json(result)
    print(f"partitions={text}" if args.output_format == "gha" else text)
    return EXIT_OK
