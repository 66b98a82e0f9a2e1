"""``python -m testing.all_reduce_selftest``: run the custom all-reduce's checks and report.

Two ways to start the ranks:

* default: this process spawns them (:func:`jit_kernel.distributed.launch.run_on_gpus`), for
  each ``--world-size`` (default: 2, and every visible GPU when there are more than 2);
* ``--from-env``: this process is one rank of a group started by someone else (torchrun-style
  ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``, ``LOCAL_RANK``), e.g. one rank
  under ``compute-sanitizer`` (``verification/memcheck_all_reduce.py``). Rank 0 prints the report.

``--quick`` runs a small plan (256 KiB messages, one-shot up to 64 KiB, bf16/fp32 sizes, 30
repeated calls, 3 graph replays), meant for compute-sanitizer. ``--backend gloo`` keeps NCCL
(and its kernels) out of the processes; the NCCL comparison is then skipped. Exit status: 0 when
every check passed, 1 when one failed, 2 when nothing could run (fewer than 2 GPUs, no P2P).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Sequence

from testing.all_reduce_checks import GROUPS, CheckPlan, CheckResult, run_checks

QUICK_PLAN = CheckPlan(
    dtypes=("bfloat16", "float32"),
    max_bytes=256 * 1024,
    one_shot_max_bytes=64 * 1024,
    repeat_calls=30,
    graph_replays=3,
)


def make_plan(quick: bool, full: bool, backend: str, groups: Sequence[str] | None) -> CheckPlan:
    base = QUICK_PLAN if quick else CheckPlan(full=full)
    return CheckPlan(
        full=full and not quick,
        groups=tuple(groups) if groups else base.groups,
        dtypes=base.dtypes,
        max_bytes=base.max_bytes,
        one_shot_max_bytes=base.one_shot_max_bytes,
        repeat_calls=base.repeat_calls,
        graph_replays=base.graph_replays,
        compare_nccl=backend == "nccl",
    )


def summarize(results: Sequence[CheckResult], title: str) -> tuple[str, bool]:
    """A per-group pass/fail table plus every failure; and whether everything passed."""
    by_group: dict[str, list[CheckResult]] = defaultdict(list)
    for result in results:
        by_group[result.group].append(result)
    lines = [title]
    failures = []
    for group in [g for g in GROUPS if g in by_group] + [g for g in by_group if g not in GROUPS]:
        items = by_group[group]
        bad = [item for item in items if not item.ok]
        failures += bad
        lines.append(
            f"  {'FAIL' if bad else 'ok  '} {group:<22} {len(items) - len(bad)}/{len(items)} checks passed"
        )
    for item in failures:
        lines.append("  " + item.describe())
    return "\n".join(lines), not failures and bool(results)


def _spawned(args: argparse.Namespace) -> int:
    import torch

    from jit_kernel.all_reduce import MAX_WORLD_SIZE, p2p_problems, precompile_custom_all_reduce
    from jit_kernel.distributed.launch import run_on_gpus
    from jit_kernel.distributed.topology import describe_topology

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    print(describe_topology(smi=args.topology), flush=True)
    world_sizes = args.world_size or sorted({2, max(2, min(count, MAX_WORLD_SIZE))})
    problems = (
        p2p_problems(list(range(max(world_sizes))))
        if count >= max(world_sizes)
        else [f"needs {max(world_sizes)} GPUs, {count} visible"]
    )
    if problems:
        print("selftest: cannot run: " + "; ".join(problems), flush=True)
        return 2
    precompile_custom_all_reduce()
    plan = make_plan(args.quick, args.full, args.backend, args.groups)
    all_ok = True
    for world in world_sizes:
        per_rank = run_on_gpus(
            world,
            run_checks,
            plan,
            timeout=args.timeout,
            backend=args.backend,
            devices=list(range(world)),
        )
        text, ok = summarize([r for rank in per_rank for r in rank], f"world_size={world}:")
        print(text, flush=True)
        all_ok &= ok
    return 0 if all_ok else 1


def _from_env(args: argparse.Namespace) -> int:
    import torch.distributed as dist

    from jit_kernel.distributed.launch import init_from_env

    rank, world = init_from_env(args.backend, timeout=args.timeout)
    try:
        results = run_checks(make_plan(args.quick, args.full, args.backend, args.groups))
        gathered: list[list[CheckResult] | None] = [None] * world
        dist.all_gather_object(gathered, results)
        text, ok = summarize([r for part in gathered for r in part or []], f"world_size={world}:")
        if rank == 0:
            print(text, flush=True)
        return 0 if ok else 1
    finally:
        dist.destroy_process_group()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world-size", type=int, action="append", help="repeatable")
    parser.add_argument("--from-env", action="store_true", help="be one rank (torchrun variables)")
    parser.add_argument("--backend", choices=("nccl", "gloo"), default="nccl")
    parser.add_argument("--quick", action="store_true", help="the small plan (compute-sanitizer)")
    parser.add_argument("--full", action="store_true", help="the nightly size grid")
    parser.add_argument("--groups", nargs="+", choices=GROUPS, help="only these check groups")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per world size")
    parser.add_argument(
        "--no-topology", dest="topology", action="store_false", help="skip nvidia-smi topo -m"
    )
    args = parser.parse_args(argv)
    return _from_env(args) if args.from_env else _spawned(args)


if __name__ == "__main__":
    sys.exit(main())
