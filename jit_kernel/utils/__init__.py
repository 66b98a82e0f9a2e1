"""Public helpers for JIT kernels: load_jit, caching, C++ arguments, CI switches, wrapper checks."""

from jit_kernel.utils.arch import (
    ArchError,
    ArchInfo,
    get_jit_cuda_arch,
    is_arch_support_pdl,
    override_arch,
)
from jit_kernel.utils.cache import cache_once
from jit_kernel.utils.ci import get_ci_test_range, is_in_ci, should_run_full_tests
from jit_kernel.utils.compile import (
    KERNEL_ROOT,
    BuildResult,
    JitCompileError,
    build_only,
    jit_module_path,
    load_jit,
)
from jit_kernel.utils.cpp_args import CPP_DTYPE_MAP, CPPArgList, make_cpp_args
from jit_kernel.utils.registry import register_precompile
from jit_kernel.utils.toolchain import JitToolchainError
from jit_kernel.utils.wrapper_args import (
    FirstCallBinding,
    KernelTable,
    raise_argument_type_error,
    rebind_global,
)

__all__ = [
    "CPP_DTYPE_MAP",
    "KERNEL_ROOT",
    "ArchError",
    "ArchInfo",
    "BuildResult",
    "CPPArgList",
    "FirstCallBinding",
    "JitCompileError",
    "JitToolchainError",
    "KernelTable",
    "build_only",
    "cache_once",
    "get_ci_test_range",
    "get_jit_cuda_arch",
    "is_arch_support_pdl",
    "is_in_ci",
    "jit_module_path",
    "load_jit",
    "make_cpp_args",
    "override_arch",
    "raise_argument_type_error",
    "rebind_global",
    "register_precompile",
    "should_run_full_tests",
]
