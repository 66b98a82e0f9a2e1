"""The JIT compiler: ``load_jit`` builds header-only kernels into tvm-ffi modules, cached by content.

:mod:`.plan` names a module and computes its cache key, :mod:`.build` runs ninja, :mod:`.cache`
is the cache directory, :mod:`.deps` records and checks the files the compilers read,
:mod:`.load_log` the ``JIT_KERNEL_LOAD_LOG`` lines, :mod:`.toolchain` finds nvcc and the host
compiler, :mod:`.arch` the target architecture, :mod:`.sources` the headers a key covers,
:mod:`.cpp_args` spells template arguments.
"""

from jit_kernel.compiler.arch import (
    ArchError,
    ArchInfo,
    get_jit_cuda_arch,
    is_arch_support_pdl,
    override_arch,
)
from jit_kernel.compiler.cpp_args import CPP_DTYPE_MAP, CPPArgList, make_cpp_args
from jit_kernel.compiler.load import (
    BuildResult,
    JitCompileError,
    build_only,
    jit_module_path,
    load_jit,
    plan_only,
)
from jit_kernel.compiler.plan import KERNEL_ROOT
from jit_kernel.compiler.toolchain import JitToolchainError

__all__ = [
    "CPP_DTYPE_MAP",
    "KERNEL_ROOT",
    "ArchError",
    "ArchInfo",
    "BuildResult",
    "CPPArgList",
    "JitCompileError",
    "JitToolchainError",
    "build_only",
    "get_jit_cuda_arch",
    "is_arch_support_pdl",
    "jit_module_path",
    "load_jit",
    "make_cpp_args",
    "override_arch",
    "plan_only",
]
