"""``load_jit``: build a header-only kernel into a tvm-ffi module, cached by content.

Cold path: generate a translation unit (``#include`` lines plus one
``TVM_FFI_DLL_EXPORT_TYPED_FUNC`` per wrapper, :mod:`jit_kernel.compiler.plan`), compile it with
nvcc / ``$CXX`` in a private staging directory (ninja runs the compile and link steps), then
install the ``.so`` with its record (size, digest, the dependencies the compilers reported:
:mod:`jit_kernel.compiler.deps`) atomically into ``<cache>/<module>_<key16>/``, all under the
module's build lock, so concurrent builders of one module wait for one build. Warm path: that
file exists, matches its recorded digest and every checked dependency still hashes the same, so
it is loaded directly (no ninja, no compiler); a truncated or foreign file is rebuilt, never
loaded, and a stale one is rebuilt.
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import shlex
import shutil
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tvm_ffi
import tvm_ffi.libinfo

from jit_kernel.compiler.build import (
    BuildStep,
    BuildStepError,
    compiler_inputs,
    nvcc_command,
    run_ninja,
)
from jit_kernel.compiler.cache import (
    build_lock,
    cache_root,
    install,
    library_problem,
    prebuilt_without_toolchain,
    private_root,
    read_record,
    record_in_index,
    record_path,
    staging_dir,
    toolchain_record_path,
    unwritable,
    write_record,
)
from jit_kernel.compiler.closure_cache import CLOSURE_DIR
from jit_kernel.compiler.deps import (
    dependency_problem,
    filesystem_now,
    record_dependencies,
    toolchain_dirs,
)
from jit_kernel.compiler.load_log import log_load
from jit_kernel.compiler.plan import (
    ModulePlan,
    check_wrappers,
    plan_module,
    resolve_sources,
)
from jit_kernel.compiler.toolchain import JitToolchainError, find_cuda_toolkit, host_compiler
from jit_kernel.env import get_bool_env

if TYPE_CHECKING:
    from tvm_ffi import Module

logger = logging.getLogger("jit_kernel")

FORCE_REBUILD_ENV = "JIT_KERNEL_FORCE_REBUILD"
VERBOSE_ENV = "JIT_KERNEL_VERBOSE"

_build_only: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "jit_kernel_build_only", default=False
)
_plans: contextvars.ContextVar[list[ModulePlan] | None] = contextvars.ContextVar(
    "jit_kernel_plan_only", default=None
)


class JitCompileError(RuntimeError):
    """The compiler rejected a JIT module; the message has the command, output and source."""

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code

    @property
    def is_deterministic(self) -> bool:
        """The compiler refused the code (exit code 1..127), rather than being killed by a
        signal: the same key (same sources, flags, toolchain) fails the same way again."""
        return self.exit_code is not None and 0 < self.exit_code < 128


# Compiler refusals of this process by library path (the path holds the key): a call that hits one
# raises at once instead of compiling again, so a broken header fails a test suite in seconds.
_refused: dict[Path, JitCompileError] = {}


@dataclass(frozen=True)
class BuildResult:
    """What ``load_jit`` returns inside :func:`build_only`: the library, built or found cached."""

    name: str
    path: Path
    built: bool
    unproven: tuple[str, ...] = ()  # what the #include scanner cannot prove (label:line: why)


@contextmanager
def build_only() -> Iterator[None]:
    """Inside this block ``load_jit`` builds (or finds) the library but never loads it."""
    token = _build_only.set(True)
    try:
        yield
    finally:
        _build_only.reset(token)


@contextmanager
def plan_only() -> Iterator[list[ModulePlan]]:
    """Inside this block ``load_jit`` only plans: it appends each module's plan (sources, flags,
    key) to the yielded list and returns None, building and loading nothing."""
    plans: list[ModulePlan] = []
    token = _plans.set(plans)
    try:
        yield plans
    finally:
        _plans.reset(token)


def _build(plan: ModulePlan, staging: Path) -> Path:
    """Compile and link in ``staging`` (new, empty, a shell-safe path) with ninja; returns the
    library there, its size and digest recorded next to it."""
    cxx = host_compiler()
    steps: list[BuildStep] = []
    ldflags: list[str] = []
    toolkit = None
    if plan.cpp_source is not None:
        source = staging / "main.cpp"
        source.write_text(plan.cpp_source)
        command = (cxx, *plan.cpp_flags, "-c", "main.cpp", "-o", "main.o", *_depfile("main.o"))
        steps.append(BuildStep("main.o", ("main.cpp",), command, source, "main.o.d"))
    if plan.cuda_source is not None:
        toolkit = find_cuda_toolkit()
        source = staging / "cuda.cu"
        source.write_text(plan.cuda_source)
        command = nvcc_command(
            toolkit.nvcc, plan.cuda_flags, staging, "-c", "cuda.cu", "-o", "cuda.o",
            *_depfile("cuda.o"),
        )  # fmt: skip
        steps.append(BuildStep("cuda.o", ("cuda.cu",), command, source, "cuda.o.d"))
        cudart = str(toolkit.cudart_dir)
        ldflags = [f"-L{cudart}", "-lcudart", f"-Wl,-rpath,{cudart}"]
    (staging / "key.json").write_text(json.dumps(plan.key_material, indent=1, sort_keys=True))
    objects = tuple(step.output for step in steps)
    library = f"{plan.name}.so"
    tvm_lib = Path(tvm_ffi.libinfo.find_libtvm_ffi())
    link = (
        cxx,
        "-shared",
        *objects,
        f"-L{tvm_lib.parent}",
        "-ltvm_ffi",
        *ldflags,
        *plan.ldflags,
        "-o",
        library,
    )
    steps.append(BuildStep(library, objects, link, steps[-1].source))
    if plan.unproven:
        logger.info(
            "%s: its #include closure is not proven (%s); the files its compilers report decide "
            "when it is rebuilt",
            plan.name,
            "; ".join(plan.unproven),
        )
    started_ns = filesystem_now(staging)
    try:
        run_ninja(staging, steps, verbose=get_bool_env(VERBOSE_ENV))
    except BuildStepError as failure:
        raise JitCompileError(
            f"failed to build JIT module {plan.name!r} (cache key {plan.key})\n"
            f"command (exit code {failure.exit_code}):\n  {shlex.join(failure.step.command)}\n"
            f"compiler output:\n{failure.output.rstrip()}\n"
            f"generated source: {failure.step.source}\n"
            f"build directory (kept for inspection): {staging}",
            exit_code=failure.exit_code,
        ) from None
    dependencies, toolchain = record_dependencies(
        compiler_inputs(staging),
        staging,
        plan.roots,
        toolchain_dirs(toolkit.root if toolkit is not None else None, cxx),
        dict(plan.key_material["files"]),
        started_ns,
    )
    write_record(staging / library, dependencies, toolchain)
    return staging / library


def _depfile(output: str) -> tuple[str, ...]:
    """Flags that make g++ or nvcc write the files it reads to ``<output>.d`` (make syntax)."""
    return ("-MD", "-MF", f"{output}.d", "-MT", output)


def _build_and_install(plan: ModulePlan, root: Path, target: Path) -> None:
    """Build ``plan`` in a private staging directory and install the library, its records and
    ``key.json`` at ``target`` (the caller holds the build lock)."""
    staging = staging_dir(root, plan)
    library = _build(plan, staging)
    for record in (record_path, toolchain_record_path):  # before the library: see _problem
        install(record(library), record(target))
    install(library, target)
    install(staging / "key.json", target.parent / "key.json")  # what the key covered
    record_in_index(root, plan, target)
    shutil.rmtree(staging, ignore_errors=True)


def _problem(
    plan: ModulePlan, target: Path, absolute: bool = True
) -> tuple[dict[str, Any] | None, str]:
    """``target``'s record, and why it must not be loaded ("" when it may): damaged (not what was
    built) or stale (a checked dependency changed). ``absolute=False``: see dependency_problem."""
    record = read_record(target)
    damage = library_problem(target, record)
    if damage is not None or record is None:
        return record, f"damaged ({damage})"
    stale = dependency_problem(record.get("dependencies"), plan.roots, absolute)
    return record, "" if stale is None else f"stale ({stale})"


def _usable(plan: ModulePlan, target: Path) -> bool:
    return target.is_file() and not _problem(plan, target)[1]


def _check_not_capturing(name: str) -> None:
    import torch

    if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
        raise RuntimeError(
            f"JIT module {name!r} is not built yet and the current CUDA stream is capturing a "
            "graph; compiling now would break the capture. Build it before capture: run "
            "`python -m jit_kernel precompile` (or call the kernel once before capturing)."
        )


# The file (device, inode) this process mapped from each library path: dlopen returns the mapped
# library for a path it has seen, so a newer build at that path is loaded through a private link.
_mapped: dict[str, tuple[int, int]] = {}


def _load(path: Path) -> Module:
    """Load the library at ``path`` as it is on disk now, even if this process loaded an older
    build from the same path before (a rebuild after ``JIT_KERNEL_FORCE_REBUILD`` or a stale
    dependency)."""
    stat = path.stat()
    identity, name = (stat.st_dev, stat.st_ino), os.path.abspath(path)
    if _mapped.get(name, identity) == identity:
        module = tvm_ffi.load_module(str(path))
    else:
        link = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.so")
        try:
            os.link(path, link)
        except OSError:  # no hard links here: a copy is another file too
            shutil.copyfile(path, link)
        try:
            module = tvm_ffi.load_module(str(link))
        finally:
            link.unlink(missing_ok=True)
    _mapped[name] = identity
    return module


def _prepare(
    markers: Sequence[str],
    cpp_files: Sequence[str | os.PathLike[str]] | None,
    cuda_files: Sequence[str | os.PathLike[str]] | None,
    cpp_wrappers: Sequence[tuple[str, str]] | None,
    cuda_wrappers: Sequence[tuple[str, str]] | None,
    extra_cflags: Sequence[str] | None,
    extra_cuda_cflags: Sequence[str] | None,
    extra_ldflags: Sequence[str] | None,
    extra_include_paths: Sequence[str | os.PathLike[str]] | None,
    build_directory: str | os.PathLike[str] | None,
) -> tuple[ModulePlan, Path, Path]:
    """Validate the arguments; returns the plan, the cache root and the library path."""
    root = Path(build_directory) if build_directory is not None else cache_root()
    plan = plan_module(
        markers,
        resolve_sources(cpp_files, "cpp_files"),
        resolve_sources(cuda_files, "cuda_files"),
        check_wrappers(cpp_wrappers, "cpp_wrappers"),
        check_wrappers(cuda_wrappers, "cuda_wrappers"),
        list(extra_cflags or []),
        list(extra_cuda_cflags or []),
        list(extra_ldflags or []),
        [Path(path).resolve() for path in extra_include_paths or []],
        root / CLOSURE_DIR,
    )
    if plan.toolchain_error is not None:
        return plan, root, prebuilt_without_toolchain(root, plan)
    return plan, root, root / f"{plan.name}_{plan.key}" / f"{plan.name}.so"


def jit_module_path(
    *markers: str,
    cpp_files: Sequence[str | os.PathLike[str]] | None = None,
    cuda_files: Sequence[str | os.PathLike[str]] | None = None,
    cpp_wrappers: Sequence[tuple[str, str]] | None = None,
    cuda_wrappers: Sequence[tuple[str, str]] | None = None,
    extra_cflags: Sequence[str] | None = None,
    extra_cuda_cflags: Sequence[str] | None = None,
    extra_ldflags: Sequence[str] | None = None,
    extra_include_paths: Sequence[str | os.PathLike[str]] | None = None,
    build_directory: str | os.PathLike[str] | None = None,
) -> Path:
    """Where ``load_jit`` with the same arguments keeps its library (it may not exist yet)."""
    return _prepare(
        markers,
        cpp_files,
        cuda_files,
        cpp_wrappers,
        cuda_wrappers,
        extra_cflags,
        extra_cuda_cflags,
        extra_ldflags,
        extra_include_paths,
        build_directory,
    )[2]


def load_jit(
    *markers: str,
    cpp_files: Sequence[str | os.PathLike[str]] | None = None,
    cuda_files: Sequence[str | os.PathLike[str]] | None = None,
    cpp_wrappers: Sequence[tuple[str, str]] | None = None,
    cuda_wrappers: Sequence[tuple[str, str]] | None = None,
    extra_cflags: Sequence[str] | None = None,
    extra_cuda_cflags: Sequence[str] | None = None,
    extra_ldflags: Sequence[str] | None = None,
    extra_include_paths: Sequence[str | os.PathLike[str]] | None = None,
    build_directory: str | os.PathLike[str] | None = None,
) -> Module:
    """Build (or load from the cache) a module exporting the wrappers; see the module docstring.

    ``markers`` name the module (kernel name, then ``*make_cpp_args(...)``). Files are relative
    to ``jit_kernel/csrc`` or absolute. Wrappers are ``(export_name, cpp_expression)``; the export
    is called as ``module.export_name(...)``. Extra flags come after the defaults, so they win.
    ``build_directory`` replaces the cache root (``JIT_KERNEL_CACHE_DIR``) for this module.
    Inside :func:`build_only` the result is a :class:`BuildResult` instead of a module; inside
    :func:`plan_only` it is None (the plan is recorded).
    """
    plan, root, target = _prepare(
        markers,
        cpp_files,
        cuda_files,
        cpp_wrappers,
        cuda_wrappers,
        extra_cflags,
        extra_cuda_cflags,
        extra_ldflags,
        extra_include_paths,
        build_directory,
    )
    plans = _plans.get()
    if plans is not None:
        plans.append(plan)
        return None  # type: ignore[return-value]
    only_build = _build_only.get()
    force = get_bool_env(FORCE_REBUILD_ENV)
    failed_to_load = False
    if plan.toolchain_error is not None:  # nothing can be built: use what was found, or fail
        if only_build or force:
            raise plan.toolchain_error
        record, problem = _problem(plan, target, absolute=False)
        if problem:
            raise JitToolchainError(
                f"{plan.toolchain_error}\nThe prebuilt {target} is {problem} and cannot be "
                "rebuilt here; rebuild it where the toolchain is (python -m jit_kernel precompile)."
            ) from None
        try:
            module = _load(target)
        except Exception as error:
            raise JitToolchainError(
                f"{plan.toolchain_error}\nThe prebuilt {target} failed to load ({error}) and "
                "cannot be rebuilt here."
            ) from None
        log_load(plan, target, record or {})
        return module
    if target.is_file() and not force:
        record, problem = _problem(plan, target)
        if not problem and only_build:
            return BuildResult(plan.name, target, False, tuple(plan.unproven))
        if not problem:
            try:
                module = _load(target)
            except Exception as error:
                logger.warning(
                    "cached JIT module %s failed to load (%s); rebuilding", target, error
                )
                failed_to_load = True
            else:
                log_load(plan, target, record or {})
                return module
        else:
            logger.warning("cached JIT module %s is %s; rebuilding", target, problem)
    refused = None if force else _refused.get(target)
    if refused is not None:
        raise JitCompileError(
            f"{refused}\n(not compiled again: this process already failed to build these "
            f"sources with these flags; set {FORCE_REBUILD_ENV}=1 to retry)",
            exit_code=refused.exit_code,
        )
    if not only_build:
        _check_not_capturing(plan.name)
    cannot_write = unwritable(root)
    if cannot_write is not None:  # a read-only shared cache, say: build for this process alone
        root = private_root(f"the cache directory {root} cannot be written", cannot_write)
        target = root / target.parent.name / target.name
    built = True
    with build_lock(root, plan):
        if not force and not failed_to_load and _usable(plan, target):
            built = False  # another process built it while this one waited for the lock
        else:
            try:
                _build_and_install(plan, root, target)
            except JitCompileError as error:
                if error.is_deterministic:
                    _refused[target] = error
                raise
    if only_build:
        return BuildResult(plan.name, target, built, tuple(plan.unproven))
    module = _load(target)
    log_load(plan, target, read_record(target) or {})
    return module
