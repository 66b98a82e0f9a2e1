"""Check that no kernel touches global memory before its PDL wait.

``python -m tools.pdl_wait_order CACHE``

``CACHE`` is a ``JIT_KERNEL_CACHE_DIR`` filled by ``python -m jit_kernel precompile``. For every
kernel that waits for the previous one (``griddepcontrol.wait``, SASS ``ACQBULK``), it lists the
global loads, stores and atomics placed before the first wait in program order. Such an access
races with the previous kernel: a load may read its output before it is written, a store may
overwrite what it still reads. The compiler may move a non-coherent load (``__ldg``) there on its
own. Prints the offending instructions per module and a summary line; exit 1 when any is found,
2 when cuobjdump is not found, the cache holds no module or cuobjdump cannot read one (named).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from tools.compare_sass import UnreadableModule, cuobjdump_output, find_tool

_FUNCTION = re.compile(r"^\s*Function : (\S+)")
_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s*(.*?)\s*;")
_PREDICATE = re.compile(r"^@!?U?P[T0-9]+\s+")
_WAIT = "ACQBULK"
# Global (or generic) memory: loads, stores, atomics, asynchronous and bulk copies.
_GLOBAL_ACCESS = re.compile(
    r"^(LDG|STG|LD|ST|LDGSTS|ATOM|ATOMG|RED|REDG|UTMALDG|UTMASTG|UTMAPF|UBLKCP|UBLKRED)(\.|$)"
)


def early_accesses(sass: str) -> dict[str, list[str]]:
    """Kernel name -> its global accesses before its first PDL wait (kernels with a wait only)."""
    found: dict[str, list[str]] = {}
    current: str | None = None
    before: list[str] = []
    waiting = False
    for line in sass.splitlines():
        if match := _FUNCTION.match(line):
            current, before, waiting = match.group(1), [], False
        elif current is not None and not waiting and (match := _INSTRUCTION.match(line)):
            text = match.group(1)
            opcode = _PREDICATE.sub("", text).split(" ", 1)[0]
            if opcode == _WAIT:
                waiting = True
                found[current] = before
            elif _GLOBAL_ACCESS.match(opcode):
                before.append(text)
    return found


def check_cache(cache: Path, cuobjdump: str) -> tuple[list[str], int, int]:
    """(report lines, kernels with a wait, offending kernels) over every module of ``cache``."""
    lines: list[str] = []
    waiting = offending = 0
    for library in sorted(cache.glob("*/*.so")):
        if library.parent.name.startswith("."):
            continue
        sass = cuobjdump_output(cuobjdump, "-sass", library)
        kernels = early_accesses(sass)
        waiting += len(kernels)
        for kernel, accesses in sorted(kernels.items()):
            if accesses:
                offending += 1
                lines.append(f"{library.stem}: {kernel}: {'; '.join(accesses)}")
    return lines, waiting, offending


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cache", type=Path, help="JIT cache filled by `jit_kernel precompile`")
    args = parser.parse_args(argv)
    cuobjdump = find_tool("cuobjdump")
    if cuobjdump is None:
        print("pdl_wait_order: cuobjdump not found on PATH or in $CUDA_HOME/bin", file=sys.stderr)
        return 2
    if not any(p for p in args.cache.glob("*/*.so") if not p.parent.name.startswith(".")):
        print(
            f"pdl_wait_order: {args.cache} holds no built module (*/<module>.so)", file=sys.stderr
        )
        return 2
    try:
        lines, waiting, offending = check_cache(args.cache, cuobjdump)
    except UnreadableModule as error:
        print(f"pdl_wait_order: {error}", file=sys.stderr)
        return 2
    summary = f"{waiting} kernels wait for the previous one; {offending} touch global memory"
    print("\n".join([*lines, f"{summary} before the wait"]))
    return 1 if offending else 0


if __name__ == "__main__":
    sys.exit(main())
