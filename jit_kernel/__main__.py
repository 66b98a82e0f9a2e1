"""``python -m jit_kernel``: write a ``.clangd`` file, or ``precompile`` the kernels.

python -m jit_kernel [--cuda-target 9.0] [--output .clangd] [--overwrite]
python -m jit_kernel precompile [--arch 9.0] [--jobs N] [--list]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jit_kernel.compiler.arch import ArchError, current_arch_or_none, parse_arch
from jit_kernel.compiler.toolchain import JitToolchainError


def build_parser() -> argparse.ArgumentParser:
    """The command line: clangd options at the top level, ``precompile`` as a subcommand."""
    parser = argparse.ArgumentParser(
        prog="python -m jit_kernel",
        description="Without a subcommand: write a .clangd for JIT kernel development.",
    )
    parser.add_argument(
        "--cuda-target",
        "--cuda",
        metavar="X.Y",
        help="GPU architecture clangd checks against (default: TVM_FFI_CUDA_ARCH_LIST or the GPU)",
    )
    parser.add_argument(
        "--output", type=Path, default=Path(".clangd"), help="file to write (default: ./.clangd)"
    )
    parser.add_argument("--overwrite", action="store_true", help="replace an existing file")
    sub = parser.add_subparsers(dest="command", metavar="{precompile}")
    from jit_kernel.tools.precompile import add_precompile_arguments

    add_precompile_arguments(
        sub.add_parser(
            "precompile",
            help="build every kernel specialization the wrapper modules declare",
            description="Build every specialization registered with register_precompile, in "
            "parallel, into JIT_KERNEL_CACHE_DIR. Needs nvcc, not a GPU. Ends with the line "
            "'built N, cached M, failed K'; exit code 1 when K > 0.",
        )
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code (0 ok, 1 failure, 2 usage error)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "precompile":
            from jit_kernel.tools.precompile import run_from_args

            return run_from_args(parser, args)
        from jit_kernel.tools.clangd import write_clangd

        arch = (
            parse_arch(args.cuda_target, "--cuda-target")
            if args.cuda_target
            else current_arch_or_none()
        )
        if arch is None:
            raise ArchError(
                "no GPU is visible and TVM_FFI_CUDA_ARCH_LIST is not set: pass the target, "
                "e.g. `python -m jit_kernel --cuda-target 9.0`"
            )
        return write_clangd(args.output, arch, args.overwrite)
    except (ArchError, JitToolchainError, ImportError) as error:
        print(f"error: {error}", file=sys.stderr, flush=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
