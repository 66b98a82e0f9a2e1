"""The kernel test files (or kernels) of a GPU suite, from the registries, never a hand list.

    python -m verification.kernel_tests                  # every kernel test of the unit suite
    python -m verification.kernel_tests --kernels        # the kernels (wrapper modules) they test
    python -m verification.kernel_tests --uses jit_kernel/include/sgl_kernel/impl/elementwise.cuh

A kernel is a wrapper module of ``jit_kernel`` (``python -m jit_kernel precompile`` builds the
same list). A kernel test is a file that the runner registers in ``--suite`` (its own dry run)
and that imports a kernel's wrapper module, itself or through ``testing/``. ``--uses FILE`` keeps the tests that a change to
FILE selects (the runner's change analysis: every kernel whose sources include the header).
Prints one path (or kernel name) per line, sorted; the verification scripts read it, so a new
kernel with a registered test is built, run and memchecked without editing them. A kernel that
no test of the suite imports is named on stderr (the multi-GPU all-reduce's tests are in
another suite); bad usage exits 2.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from pathlib import Path

from jit_kernel.tools.precompile import wrapper_module_names

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SUITE = "base-b-kernel-unit-1-gpu-large"


def suite_files(suite: str, changed: str | None = None) -> list[str]:
    """The files the runner runs for ``suite`` (``--changed-files`` narrows it to ``changed``)."""
    command = [sys.executable, "run_suite.py", "--hw", "cuda", "--suite", suite, "--dry-run"]
    command += ["--format", "json", "--allow-empty"]
    if changed is not None:
        command += ["--changed-files", "-"]
    done = subprocess.run(
        command,
        cwd=ROOT,
        input=f"{changed}\n" if changed is not None else None,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"kernel_tests: the dry run of {suite} failed:\n{done.stderr.strip()}")
    return [entry["path"] for entry in json.loads(done.stdout)["files"]]


def _imported_names(path: Path) -> list[str]:
    """Every absolute module name ``path`` imports (``from m import n`` gives m and m.n)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    return names


def imported_kernels(path: Path, kernels: set[str]) -> set[str]:
    """The kernels whose wrapper module ``path`` imports (``jit_kernel.<kernel>``), anywhere,
    itself or through the ``testing`` modules it imports (a benchmark reads its kernel's
    definition in ``testing/bench/``)."""
    found: set[str] = set()
    pending, seen = [path], {path}
    while pending:
        for name in _imported_names(pending.pop()):
            parts = name.split(".")
            if len(parts) >= 2 and parts[0] == "jit_kernel" and parts[1] in kernels:
                found.add(parts[1])
            elif parts[0] == "testing":
                module = ROOT.joinpath(*parts).with_suffix(".py")
                if module.is_file() and module not in seen:
                    seen.add(module)
                    pending.append(module)
    return found


def kernel_tests(suite: str, uses: str | None) -> tuple[dict[str, set[str]], set[str]]:
    """(test file -> kernels it imports, kernels that no test of the whole suite imports)."""
    kernels = set(wrapper_module_names("jit_kernel"))
    tests = {}
    for rel in suite_files(suite):
        imported = imported_kernels(ROOT / rel, kernels)
        if imported:
            tests[rel] = imported
    untested = kernels - set().union(*tests.values())
    if uses is not None:
        selected = set(suite_files(suite, uses))
        tests = {rel: found for rel, found in tests.items() if rel in selected}
    return tests, untested


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default=DEFAULT_SUITE, help=f"default: {DEFAULT_SUITE}")
    parser.add_argument(
        "--uses", metavar="FILE", help="only the tests a change to FILE (from the root) selects"
    )
    parser.add_argument(
        "--kernels", action="store_true", help="print the kernels tested, not the test files"
    )
    args = parser.parse_args(argv)
    if args.uses is not None and not (ROOT / args.uses).is_file():
        parser.error(f"--uses {args.uses}: no such file under {ROOT}")
    tests, untested = kernel_tests(args.suite, args.uses)
    if args.kernels:
        print("\n".join(sorted(set().union(*tests.values()))))
    else:
        print("\n".join(sorted(tests)))
    for kernel in sorted(untested):
        print(f"kernel_tests: no test of {args.suite} imports jit_kernel.{kernel}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
