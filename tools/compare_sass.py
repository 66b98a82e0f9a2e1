"""Compare the machine code of two JIT caches: did a refactor change what the GPU runs?

``python -m tools.compare_sass OLD_CACHE NEW_CACHE``

Each argument is a ``JIT_KERNEL_CACHE_DIR`` filled by ``python -m jit_kernel precompile --arch
X.Y`` (old code and new code, same arch). For every module (by name, the key dropped) it
disassembles each kernel (``cuobjdump -sass``), drops addresses and encodings, and compares the
multisets of (instruction text, ``cuobjdump -res-usage`` line): kernel names may differ (a new
template argument), their code and registers/stack/local may not. Prints one line per module
(``SASS identical (N kernels, ...)`` or what exists on one side only); exit 1 when any module
differs, 2 when cuobjdump (with nvdisasm) is not found, a cache has no modules or cuobjdump
cannot read one (named). cuobjdump and nvdisasm come with the CUDA toolkit (``$CUDA_HOME/bin``)
or the pip packages ``nvidia-cuda-cuobjdump`` and ``nvidia-cuda-nvdisasm``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

_FUNCTION = re.compile(r"^\s*Function : (\S+)")
_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s*(.*?)\s*;?\s*/\*")
_USAGE = re.compile(r"Function (\S+):\s*\n\s*(REG:.*)")


def kernels_of(sass: str, usage: str) -> Counter[tuple[str, str]]:
    """(sha256 of the kernel's instructions, its resource line) for each kernel of a dump."""
    bodies: dict[str, list[str]] = {}
    current = None
    for line in sass.splitlines():
        if match := _FUNCTION.match(line):
            current = bodies.setdefault(match.group(1), [])
        elif current is not None and (match := _INSTRUCTION.match(line)):
            current.append(match.group(1))
    resources = {name: text.strip() for name, text in _USAGE.findall(usage)}
    return Counter(
        (hashlib.sha256("\n".join(body).encode()).hexdigest(), resources.get(name, "?"))
        for name, body in bodies.items()
    )


class UnreadableModule(Exception):
    """cuobjdump failed on a module of a cache; the message names it and quotes the tool."""


def cuobjdump_output(
    cuobjdump: str, flag: str, library: Path, env: dict[str, str] | None = None
) -> str:
    """``cuobjdump flag library``'s output; UnreadableModule when it fails."""
    result = subprocess.run(
        [cuobjdump, flag, str(library)], capture_output=True, text=True, env=env
    )
    if result.returncode != 0:
        said = (result.stderr.strip().splitlines() or ["no message"])[-1]
        raise UnreadableModule(
            f"cuobjdump cannot read {library} (exit {result.returncode}: {said})"
        )
    return result.stdout


def modules_of(cache: Path, cuobjdump: str, nvdisasm: str) -> dict[str, Counter[tuple[str, str]]]:
    """Module name (without its key) -> its kernels, for every built module of ``cache``."""
    env = {**os.environ, "NVDISASM_PATH": str(Path(nvdisasm).parent)}
    found = {}
    for library in sorted(cache.glob("*/*.so")):
        if library.parent.name.startswith("."):
            continue
        dumps = [
            cuobjdump_output(cuobjdump, flag, library, env) for flag in ("-sass", "-res-usage")
        ]
        found[library.stem] = kernels_of(*dumps)
    return found


def compare(
    old: dict[str, Counter[tuple[str, str]]], new: dict[str, Counter[tuple[str, str]]]
) -> tuple[list[str], bool]:
    """(one line per module, whether every module is identical)."""
    lines, same = [], True
    for module in sorted(set(old) | set(new)):
        a, b = old.get(module, Counter()), new.get(module, Counter())
        if a == b:
            lines.append(f"{module}: SASS identical ({sum(a.values())} kernels, same resources)")
            continue
        same = False
        lines.append(
            f"{module}: DIFFERS ({sum(a.values())} kernels old, {sum(b.values())} new; "
            f"{sum((a - b).values())} only old, {sum((b - a).values())} only new)"
        )
        lines += [f"  only old: {res}" for (_, res) in (a - b)]
        lines += [f"  only new: {res}" for (_, res) in (b - a)]
    return lines, same


def find_tool(name: str) -> str | None:
    """``name`` on PATH, else in ``$CUDA_HOME/bin`` (default /usr/local/cuda)."""
    found = shutil.which(name)
    if found:
        return found
    candidate = Path(os.environ.get("CUDA_HOME") or "/usr/local/cuda") / "bin" / name
    return str(candidate) if candidate.is_file() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path, help="JIT cache of the old code")
    parser.add_argument("new", type=Path, help="JIT cache of the new code")
    args = parser.parse_args(argv)
    cuobjdump, nvdisasm = find_tool("cuobjdump"), find_tool("nvdisasm")
    if cuobjdump is None or nvdisasm is None:
        missing = [
            name for name, path in (("cuobjdump", cuobjdump), ("nvdisasm", nvdisasm)) if not path
        ]
        print(
            f"compare_sass: {' and '.join(missing)} not found on PATH or in $CUDA_HOME/bin",
            file=sys.stderr,
        )
        return 2
    try:
        old = modules_of(args.old, cuobjdump, nvdisasm)
        new = modules_of(args.new, cuobjdump, nvdisasm)
    except UnreadableModule as error:
        print(f"compare_sass: {error}", file=sys.stderr)
        return 2
    if not old or not new:
        empty = args.old if not old else args.new
        print(f"compare_sass: {empty} holds no built module (*/<module>.so)", file=sys.stderr)
        return 2
    lines, same = compare(old, new)
    print("\n".join(lines))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
