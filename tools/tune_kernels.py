"""Sweep the launch configurations of the activation, norm, qknorm, rope and store_cache kernels.

Run on a GPU from the repo root (the manual is tools/tune_kernels.md)::

    python -m tools.tune_kernels --json tune.json            # the whole sweep, ~4 minutes
    python -m tools.tune_kernels --build-only --arch 9.0     # compile every variant, no GPU

Each variant is a Config type of its kernel's header (``ActConfig<256, 2>``; the table is
``tools/tune/variants.toml``, the first variant of each family the shipped configuration),
built as its own JIT module through ``load_jit``'s ``cuda_wrappers``. All builds run first, in
parallel child processes (killed at the build deadline); meanwhile the peers are compiled
(torch.compile, FlashInfer) and the 1 GiB copy bandwidth is measured. A child process then
checks every variant on the unit tests' shapes against the fp32 references of
``testing/references.py`` (a crash there cannot take this process down); a wrong variant is
marked WRONG and never recommended. Finally, per kernel and shape, every variant and peer is
timed with ``jit_kernel.benchmark.marker.do_bench`` (CUDA-graph replay, read inputs rotated
against the L2) and the output of the timed shape is checked too. The last lines are, per
family, the variant with the best worst-case ratio to the faster peer over all its shapes::

    BEST activation: ActConfig<128, 4>  # A0: ...

The whole run stays within ``--time-budget`` seconds: builds that do not finish in time are
killed and their variants skipped, and measurements that do not fit are skipped (all said in
the output).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from benchmarks.bench_jit_kernels import copy_bandwidth, short_error, time_graph
from tools.tune.build import (
    Builder,
    BuildOutcome,
    build_order,
    find_cuobjdump,
    resource_usage,
)
from tools.tune.checks import check_child, run_checks
from tools.tune.peers import Peers
from tools.tune.report import (
    BW_TARGET,
    PEER_NOISE,
    Row,
    choose_best,
    estimate_seconds,
    plan_measurements,
    print_row,
)
from tools.tune.shapes import (
    check_timed_shape,
    family_shapes,
    make_inputs,
    ours_callable,
    rotate_args,
)
from tools.tune.variants import (
    EXPORT_NAMES,
    FAMILIES,
    SHORT_DTYPE,
    VARIANTS,
    ModuleSpec,
    Variant,
    load_module,
    variant_module,
)

DEFAULT_BUDGET_S = 240.0
RESERVE_S = 6.0  # kept free at the end for the report


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--kernels",
        nargs="+",
        choices=FAMILIES,
        default=list(FAMILIES),
        metavar="FAMILY",
        help="kernel families to sweep: " + " ".join(FAMILIES) + " (default: all)",
    )
    parser.add_argument(
        "--variants",
        nargs="+",
        metavar="NAME",
        help="only these variants (e.g. A3 N1 Q4 R2 C1; each family's baseline "
        "A0/N0/Q0/R0/C0 is always kept)",
    )
    parser.add_argument(
        "--json", type=Path, metavar="PATH", help="write every figure to this JSON file"
    )
    parser.add_argument(
        "--time-budget",
        type=float,
        metavar="SECONDS",
        help=f"wall-clock limit of the whole run (default {DEFAULT_BUDGET_S:.0f}; "
        "with --build-only: none)",
    )
    parser.add_argument(
        "--build-only",
        action="store_true",
        help="only compile every variant (no GPU needed; use --arch) and print registers/spills",
    )
    parser.add_argument(
        "--arch",
        metavar="X.Y",
        help="target architecture, e.g. 9.0 (default: TVM_FFI_CUDA_ARCH_LIST, else the GPU)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="parallel module builds (default: the number of CPUs)",
    )
    parser.add_argument("--list", action="store_true", help="print the variants and exit")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile peer")
    parser.add_argument("--no-flashinfer", action="store_true", help="skip the FlashInfer peer")
    parser.add_argument(
        "--replay-iters",
        type=int,
        default=1000,
        metavar="N",
        help="do_bench replay_iters per measurement (default 1000: 10 replays of 100 calls)",
    )
    parser.add_argument("--check-child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    if args.replay_iters < 1:
        parser.error(f"--replay-iters must be at least 1, got {args.replay_iters}")
    if args.time_budget is not None and args.time_budget <= 0:
        parser.error(
            f"--time-budget must be a positive number of seconds, got {args.time_budget:g}"
        )
    if args.arch:
        from jit_kernel.compiler.arch import ArchError, parse_arch

        try:
            parse_arch(args.arch, "--arch")
        except ArchError as error:
            parser.error(str(error))
    return args


def selected_variants(args: argparse.Namespace) -> dict[str, list[Variant]]:
    chosen: dict[str, list[Variant]] = {}
    wanted = set(args.variants or [])
    known = {v.name for grid in VARIANTS.values() for v in grid}
    unknown = wanted - known
    if unknown:
        print(
            f"tune_kernels: unknown variant(s) {', '.join(sorted(unknown))}; see --list",
            file=sys.stderr,
        )
        raise SystemExit(2)
    for family in args.kernels:
        grid = VARIANTS[family]
        chosen[family] = [v for i, v in enumerate(grid) if i == 0 or not wanted or v.name in wanted]
    return chosen


def resolve_arch(args: argparse.Namespace) -> str:
    from jit_kernel.compiler.arch import get_jit_cuda_arch, parse_arch

    info = parse_arch(args.arch, "--arch") if args.arch else get_jit_cuda_arch()
    return f"{info.major}.{info.minor}"


def print_variants(chosen: dict[str, list[Variant]]) -> None:
    for family, grid in chosen.items():
        print(f"{family}:")
        for variant in grid:
            print(f"  {variant.name:<4} {variant.label():<34} {variant.why}")
            print(f"       {variant.config_type()}")


def build_all(
    chosen: dict[str, list[Variant]], arch: str, jobs: int, deadline: float | None, log_dir: Path
) -> tuple[Builder, list[ModuleSpec]]:
    pdl = int(arch.split(".")[0]) >= 9
    specs = build_order([v for grid in chosen.values() for v in grid], pdl)
    builder = Builder(specs, arch, jobs, log_dir)
    builder.start()
    return builder, specs


def run_build_only(
    args: argparse.Namespace, chosen: dict[str, list[Variant]], log_dir: Path
) -> int:
    arch = resolve_arch(args)
    start = time.perf_counter()
    deadline = None if args.time_budget is None else start + args.time_budget
    builder, specs = build_all(chosen, arch, args.jobs, deadline, log_dir)
    print(f"building {len(specs)} modules for {arch} with {args.jobs} jobs ...", flush=True)
    if not builder.wait(deadline):
        builder.stop("time budget exhausted")
    builder.thread.join(timeout=5)
    cuobjdump = find_cuobjdump()
    failed = spills = 0
    for spec in specs:
        outcome = builder.results.get(spec.name, BuildOutcome("skipped", error="not started"))
        print(f"{outcome.status:<8}{outcome.seconds:7.1f}s  {spec.name}")
        if outcome.status in ("failed", "skipped"):
            failed += 1
            if outcome.error:
                print("    " + outcome.error.replace("\n", "\n    "))
            continue
        if cuobjdump:
            for kernel, regs, stack, local in resource_usage(cuobjdump, outcome.path):
                spill = stack > 0 or local > 0
                spills += spill
                flag = "  SPILL" if spill else ""
                print(f"    REG {regs:>3}  STACK {stack:>4}  LOCAL {local:>4}  {kernel}{flag}")
    if not cuobjdump:
        print("(cuobjdump not found: registers/spills not listed)")
    print(
        f"\n{len(specs)} modules: {len(specs) - failed} built or cached, {failed} failed or "
        f"skipped; {spills} kernels with stack/local memory; {time.perf_counter() - start:.0f} s"
    )
    return 1 if failed or spills else 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.check_child is not None:
        return check_child(args.check_child)
    chosen = selected_variants(args)
    if args.list:
        print_variants(chosen)
        return 0
    log_dir = Path(tempfile.mkdtemp(prefix="tune_kernels_"))
    if args.build_only:
        from jit_kernel.compiler.arch import ArchError

        try:
            return run_build_only(args, chosen, log_dir)
        except ArchError as error:  # no --arch, no TVM_FFI_CUDA_ARCH_LIST and no GPU
            print(f"tune_kernels: {error}", file=sys.stderr)
            return 2
    if not torch.cuda.is_available():
        print("tune_kernels: needs a CUDA GPU (or --build-only)", file=sys.stderr)
        return 2

    budget = args.time_budget if args.time_budget is not None else DEFAULT_BUDGET_S
    start = time.perf_counter()
    deadline = start + budget

    def elapsed() -> str:
        return f"[{time.perf_counter() - start:6.1f}s]"

    arch = resolve_arch(args)
    builder, specs = build_all(chosen, arch, args.jobs, deadline, log_dir)
    device = torch.cuda.get_device_name()
    print(
        f"{elapsed()} device {device}; arch {arch}; budget {budget:.0f} s; "
        f"{len(specs)} modules building with {args.jobs} jobs",
        flush=True,
    )

    shapes = [s for family in chosen for s in family_shapes(family)]
    all_variants = {v.name: v for grid in chosen.values() for v in grid}
    core_estimate = sum(estimate_seconds(s) * (len(chosen[s.family]) + 2) for s in shapes if s.core)
    # Builds (and compiling the peers, meanwhile) may use what the checks (<= 30 s) and the
    # measurements of the core shapes will not need, and at least 30% of the budget.
    build_deadline = start + max(0.3 * budget, budget - core_estimate - 30.0 - RESERVE_S)
    build_deadline = min(build_deadline, deadline - 30.0)
    copies = copy_bandwidth(args.replay_iters)
    copy_gbps = max(copies.values())
    print(
        f"{elapsed()} copy 1 GiB (read + write): graph {copies['graph']:.0f} GB/s, "
        f"eager loop {copies['loop']:.0f} GB/s; reference {copy_gbps:.0f} GB/s",
        flush=True,
    )

    # Compile the peers while the modules build (each first call compiles for its shape).
    peers = Peers(not args.no_compile, not args.no_flashinfer)
    peer_fns: dict[str, dict[str, Callable[..., Any] | str]] = {}
    for shape in sorted(shapes, key=lambda s: not s.core):  # core shapes first
        fns = peers.for_shape(shape)
        if time.perf_counter() > build_deadline:
            late = "not compiled within the time budget"
            fns = {p: (f if isinstance(f, str) else late) for p, f in fns.items()}
        else:
            inputs = make_inputs(shape)
            for peer, fn in list(fns.items()):
                if isinstance(fn, str):
                    continue
                try:
                    fn(*inputs)
                    torch.cuda.synchronize()
                except Exception as error:
                    fns[peer] = short_error(error, 160)
                    torch.cuda.synchronize()
            del inputs
            torch.cuda.empty_cache()
        peer_fns[shape.key] = fns
    print(f"{elapsed()} peers ready; builds: {builder.progress()}", flush=True)

    if not builder.wait(build_deadline):
        print(f"{elapsed()} build deadline: stopping ({builder.progress()})", flush=True)
        builder.stop("build did not finish within the time budget")
    builder.thread.join(timeout=10)
    build_results = dict(builder.results)
    skipped_builds = [n for n, o in build_results.items() if o.status in ("failed", "skipped")]
    print(
        f"{elapsed()} builds done: {len(build_results) - len(skipped_builds)} of {len(specs)} "
        "modules available",
        flush=True,
    )
    for name in skipped_builds:
        outcome = build_results[name]
        print(
            f"  {outcome.status.upper()} {name}: {outcome.error.splitlines()[-1] if outcome.error else ''}"
        )

    # Variants whose modules all built are checked (child processes), the rest are out.
    status: dict[str, str] = {}
    entries = []
    pdl = int(arch.split(".")[0]) >= 9
    for name, variant in all_variants.items():
        module = variant_module(variant, pdl)
        outcome = build_results.get(module.name, BuildOutcome("skipped"))
        if outcome.status not in ("built", "cached"):
            status[name] = f"not built ({outcome.status})"
            continue
        entries.append(
            {
                "name": name,
                "family": variant.family.name,
                "module": module.as_json(),
            }
        )
    check_deadline = min(time.perf_counter() + max(30.0, 0.15 * budget), deadline - RESERVE_S)
    checks = run_checks(entries, arch, check_deadline, log_dir)
    for name, result in checks.items():
        status[name] = (
            "ok"
            if result["status"] == "ok"
            else f"WRONG ({result['status']}): {result['error'].splitlines()[0] if result['error'] else ''}"
        )
    print(
        f"{elapsed()} checks: "
        + ", ".join(f"{n} {'ok' if s == 'ok' else 'WRONG/skipped'}" for n, s in status.items()),
        flush=True,
    )
    for name, text in status.items():
        if text != "ok":
            print(f"  {name}: {text}")

    candidates = {
        family: [v for v in grid if status.get(v.name) == "ok"] for family, grid in chosen.items()
    }
    available = deadline - time.perf_counter() - RESERVE_S
    timed_shapes, planned, notes = plan_measurements(shapes, candidates, available)
    for note in notes:
        print(f"  {note}")

    modules: dict[str, Any] = {}
    rows: list[Row] = []
    context_lost = False

    def usable() -> bool:
        """False once a CUDA error has poisoned this process's context."""
        try:
            torch.cuda.synchronize()
            return True
        except Exception:
            return False

    for shape in timed_shapes:
        if context_lost:
            break
        row = Row(shape.family, shape.kernel, shape.label, shape.bytes_moved)
        rows.append(row)
        variants = planned.get(shape.family, [])
        inputs = make_inputs(shape)
        rotate = rotate_args(shape)
        kernel_s: float | None = None
        for peer, fn in peer_fns[shape.key].items():
            if isinstance(fn, str):
                row.peers_na[peer] = fn
                continue
            if time.perf_counter() + estimate_seconds(shape, kernel_s) > deadline - RESERVE_S:
                row.peers_na[peer] = "skipped: time budget"
                continue
            try:
                seconds = time_graph(
                    fn, inputs, rotate, replay_iters=args.replay_iters, warmup_iters=10
                )
                row.peers_us[peer] = seconds * 1e6
                kernel_s = max(kernel_s or 0.0, seconds)
            except Exception as error:
                row.peers_na[peer] = short_error(error, 160)
                if not usable():
                    context_lost = True
                    break
        for variant in variants:
            if context_lost:
                break
            if time.perf_counter() + estimate_seconds(shape, kernel_s) > deadline - RESERVE_S:
                row.ours_na[variant.name] = "skipped: time budget"
                continue
            spec = variant_module(variant, pdl)
            try:
                if spec.name not in modules:
                    modules[spec.name] = load_module(spec, arch)
                export_name = EXPORT_NAMES.get(shape.kernel, shape.kernel)
                export = getattr(modules[spec.name], f"{export_name}_{SHORT_DTYPE[shape.dtype]}")
                fn = ours_callable(shape, export)
                seconds = time_graph(
                    fn, inputs, rotate, replay_iters=args.replay_iters, warmup_iters=10
                )
                check_timed_shape(shape, fn, inputs)
                row.ours_us[variant.name] = seconds * 1e6
                kernel_s = kernel_s or seconds
            except AssertionError as error:
                row.ours_na[variant.name] = f"WRONG: {str(error).splitlines()[0][:150]}"
                status[variant.name] = f"WRONG on {shape.key}"
            except Exception as error:
                row.ours_na[variant.name] = f"ERROR: {short_error(error, 160)}"
                status[variant.name] = f"ERROR on {shape.key}"
                context_lost = not usable()
        if context_lost:
            print(
                f"{elapsed()} CUDA context lost on {shape.key}; stopping the measurements "
                "(the report covers what was timed before)",
                flush=True,
            )
            break
        del inputs
        torch.cuda.empty_cache()
        print(f"{elapsed()} timed {shape.key}", flush=True)

    # A variant found wrong on any shape is out everywhere.
    for row in rows:
        for name in list(row.ours_us):
            if status.get(name) != "ok":
                row.ours_na[name] = status[name]
                del row.ours_us[name]

    print(
        f"\ndevice: {device}; copy reference {copy_gbps:.0f} GB/s; x = peer time / ours "
        f"(targets: >= {BW_TARGET:.0%} of copy, >= {PEER_NOISE:.2f}x every peer)"
    )
    for row in rows:
        family_variants = {n: v for n, v in all_variants.items() if v.family.name == row.family}
        print_row(row, family_variants, copy_gbps)

    best: dict[str, Any] = {}
    per_kernel: dict[str, Any] = {}
    print()
    for family, grid in chosen.items():
        for kernel in sorted({r.kernel for r in rows if r.family == family}):
            choice = choose_best(family, rows, grid, copy_gbps, kernel)
            if choice and family in ("activation", "norm"):  # families of several kernels
                per_kernel[kernel] = choice
                print(
                    f"best for {kernel} alone: {choice['variant']} ({choice['label']}): "
                    f"min {choice['min_ratio_vs_best_peer']:.3f}x vs the faster peer, "
                    f"min {choice['min_copy_fraction']:.1%} of copy"
                )
    for family, grid in chosen.items():
        choice = choose_best(family, rows, grid, copy_gbps)
        if choice is None:
            print(f"BEST {family}: none (no variant was timed on every shape)")
            continue
        best[family] = choice
        verdict = "meets the targets" if choice["meets_targets"] else "MISSES the targets"
        print(
            f"BEST {family}: {choice['config']}  # {choice['variant']}: "
            f"min {choice['min_ratio_vs_best_peer']:.3f}x vs the faster peer, min "
            f"{choice['min_copy_fraction']:.1%} of copy over {len(choice['shapes'])} shapes; {verdict}"
        )
    print(f"\n{elapsed()} done")

    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "device": device,
                    "arch": arch,
                    "budget_s": budget,
                    "elapsed_s": time.perf_counter() - start,
                    "copy_gbps": copy_gbps,
                    "copy_gbps_by_timer": copies,
                    "variants": [
                        {
                            **asdict(v),
                            "family": v.family.name,
                            "config": v.config_type(),
                            "label": v.label(),
                            "status": status.get(v.name, ""),
                        }
                        for v in all_variants.values()
                    ],
                    "builds": {name: asdict(o) for name, o in build_results.items()},
                    "checks": checks,
                    "notes": notes,
                    "rows": [asdict(r) for r in rows],
                    "best": best,
                    "best_per_kernel": per_kernel,
                },
                indent=2,
                default=str,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
