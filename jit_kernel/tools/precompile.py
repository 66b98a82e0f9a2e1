"""``python -m jit_kernel precompile``: build every declared kernel specialization ahead of time.

It imports every wrapper module of the package (the top-level modules of ``jit_kernel``: the
infrastructure lives in subpackages and ``_``-prefixed modules), then builds each
``(fn, args)`` registered with :func:`jit_kernel.wrapper.register_precompile` by calling
``fn.__wrapped__(*args)`` inside ``build_only()`` and ``override_arch(arch)``: nothing is loaded,
nothing enters the in-process cache and no GPU is needed. Builds run in a thread pool (each one
is a compiler subprocess). ``--only NAME`` imports and builds one wrapper module's
specializations (``--only add3``: ``jit_kernel/add3.py``). The last line printed is
``built N, cached M, failed K``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from jit_kernel.compiler.arch import (
    ArchInfo,
    current_arch_or_none,
    get_jit_cuda_arch,
    override_arch,
    parse_arch,
)
from jit_kernel.compiler.load import BuildResult, build_only
from jit_kernel.wrapper.registry import PrecompileSpec, registered_specs


@dataclass
class PrecompileSummary:
    """Counts of one precompile run; ``failures`` holds (what, error text)."""

    built: int = 0
    cached: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)

    @property
    def line(self) -> str:
        """``built N, cached M, failed K``."""
        return f"built {self.built}, cached {self.cached}, failed {len(self.failures)}"


def wrapper_module_names(package: str = "jit_kernel") -> list[str]:
    """The wrapper modules of ``package``: its top-level modules not starting with ``_``."""
    try:
        root = importlib.import_module(package)
    except ImportError as error:
        raise ImportError(f"--package {package}: cannot import it ({error})") from None
    if not hasattr(root, "__path__"):
        raise ImportError(f"--package {package}: is a module, not a package")
    return sorted(
        info.name
        for info in pkgutil.iter_modules(root.__path__)
        if not info.ispkg and not info.name.startswith("_")
    )


def import_wrapper_modules(
    package: str = "jit_kernel", only: list[str] | None = None
) -> list[tuple[str, str]]:
    """Import the wrapper modules of ``package`` (all, or the ``only`` ones); returns (module,
    error) for those that fail. An ``only`` name that is no wrapper module raises ValueError."""
    names = wrapper_module_names(package)
    if only is not None:
        unknown = [name for name in only if name not in names]
        if unknown:
            raise ValueError(
                f"--only {', '.join(unknown)}: no such wrapper module in {package}; "
                f"choose from {', '.join(names)}"
            )
        names = only
    errors: list[tuple[str, str]] = []
    for module in names:
        name = f"{package}.{module}"
        try:
            importlib.import_module(name)
        except Exception:
            errors.append((name, traceback.format_exc()))
    return errors


def _build_one(spec: PrecompileSpec, arch: ArchInfo) -> tuple[BuildResult | None, str, float]:
    start = time.perf_counter()
    try:
        with override_arch(arch), build_only():
            result = spec.fn.__wrapped__(*spec.args)
    except Exception as error:
        return None, f"{type(error).__name__}: {error}", time.perf_counter() - start
    if not isinstance(result, BuildResult):
        message = f"returned {type(result).__name__}, not the result of load_jit"
        return None, message, time.perf_counter() - start
    return result, "", time.perf_counter() - start


def precompile(specs: list[PrecompileSpec], arches: list[ArchInfo], jobs: int) -> PrecompileSummary:
    """Build ``specs`` for each arch with ``jobs`` parallel builds, printing one line per build."""
    summary = PrecompileSummary()
    work = [(spec, arch) for arch in arches for spec in specs]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(_build_one, spec, arch) for spec, arch in work]
        for (spec, arch), future in zip(work, futures, strict=True):
            result, error, seconds = future.result()
            if result is None:
                summary.failures.append((f"{spec.label} [{arch.sm}]", error))
                print(f"FAILED  {arch.sm:8} {seconds:6.1f}s  {spec.label}", flush=True)
                continue
            status = "built " if result.built else "cached"
            if result.built:
                summary.built += 1
            else:
                summary.cached += 1
            print(f"{status}  {arch.sm:8} {seconds:6.1f}s  {result.name}  {spec.label}", flush=True)
            for reason in result.unproven:
                print(f"        unproven #include: {reason}", flush=True)
    return summary


def add_precompile_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the ``precompile`` subcommand."""
    parser.add_argument(
        "--arch",
        action="append",
        metavar="X.Y",
        help="target architecture, e.g. 9.0 (repeat or comma-separate for several; default: "
        "TVM_FFI_CUDA_ARCH_LIST's first entry, else the current GPU)",
    )
    parser.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=os.cpu_count() or 1,
        help="parallel builds (default: number of CPUs)",
    )
    parser.add_argument(
        "--list", action="store_true", help="print the registered specializations; build nothing"
    )
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="build only these wrapper modules' specializations, e.g. add3 for jit_kernel/add3.py "
        "(repeat or comma-separate; default: every wrapper module)",
    )
    parser.add_argument(
        "--package",
        default="jit_kernel",
        help="package whose wrapper modules are imported (default: jit_kernel)",
    )


def run_from_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """Run the subcommand: 0 when everything built, 1 when anything failed."""
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    if args.arch:
        arches = [
            parse_arch(item, "--arch")
            for value in args.arch
            for item in value.split(",")
            if item.strip()
        ]
    elif args.list:
        arches = [arch] if (arch := current_arch_or_none()) is not None else []
    else:
        arches = [get_jit_cuda_arch()]
    only = [n.strip() for v in args.only for n in v.split(",") if n.strip()] if args.only else None
    try:
        import_errors = import_wrapper_modules(args.package, only)
    except ValueError as error:
        parser.error(str(error))
    modules = None if only is None else {f"{args.package}.{name}" for name in only}
    specs = [
        spec for spec in registered_specs() if modules is None or spec.fn.__module__ in modules
    ]
    if only is not None and not specs and not import_errors:
        parser.error(f"--only {', '.join(only)}: declares no specializations (register_precompile)")
    if args.list:
        for spec in specs:
            print(spec.label)
        for module, error in import_errors:
            print(f"import failed: {module}\n{error}", file=sys.stderr)
        targets = ", ".join(arch.sm for arch in arches) or "no arch given"
        print(f"{len(specs)} specializations ({targets})")
        return 1 if import_errors else 0
    summary = precompile(specs, arches, args.jobs)
    summary.failures[:0] = [(f"import {module}", error) for module, error in import_errors]
    for what, error in summary.failures:
        print(f"\n--- failed: {what}\n{error}", file=sys.stderr)
    print(summary.line, flush=True)
    return 1 if summary.failures else 0
