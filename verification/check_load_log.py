"""Check a ``JIT_KERNEL_LOAD_LOG`` directory against its contract (docs/jit-toolchain.md).

Every ``<pid>.jsonl`` line must be a JSON object with ``module`` (a name), ``library`` (an
existing absolute path), ``sources`` (existing absolute paths, each among the dependencies) and
``dependencies`` (absolute paths to a sha256 or null, at least one of our headers among them).
Prints one line per problem and a summary; exit code 0 when there are lines and no problem::

    python -m verification.check_load_log /tmp/load-log
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

SHA256 = re.compile(r"[0-9a-f]{64}")


def problems_of(entry: object) -> list[str]:
    """What is wrong with one line's object (empty when it keeps the contract)."""
    if not isinstance(entry, dict) or set(entry) != {
        "module",
        "library",
        "sources",
        "dependencies",
    }:
        return [f"not an object with module, library, sources, dependencies: {entry!r:.200}"]
    found = []
    library, sources, dependencies = entry["library"], entry["sources"], entry["dependencies"]
    if not isinstance(entry["module"], str) or not entry["module"].startswith("jit_"):
        found.append(f"module {entry['module']!r}")
    if not (isinstance(library, str) and os.path.isabs(library) and os.path.isfile(library)):
        found.append(f"library {library!r} is no existing absolute path")
    if not isinstance(dependencies, dict) or not dependencies:
        return [*found, "no dependencies"]
    for path, digest in dependencies.items():
        if not os.path.isabs(path) or not (digest is None or SHA256.fullmatch(str(digest))):
            found.append(f"dependency {path!r}: {digest!r}")
    if not isinstance(sources, list) or not sources:
        found.append("no sources")
    else:
        found += [
            f"source {s} is not among its dependencies" for s in sources if s not in dependencies
        ]
    if not any("/jit_kernel/include/" in path or "/csrc/" in path for path in dependencies):
        found.append("no kernel header or source among the dependencies")
    return found


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not Path(args[0]).is_dir():
        print("usage: python -m verification.check_load_log DIRECTORY", file=sys.stderr)
        return 2
    files = sorted(Path(args[0]).glob("*.jsonl"))
    lines = problems = 0
    modules: set[str] = set()
    for file in files:
        for number, line in enumerate(file.read_text().splitlines(), start=1):
            lines += 1
            try:
                entry = json.loads(line)
            except ValueError as error:
                print(f"{file.name}:{number}: not JSON ({error})")
                problems += 1
                continue
            for problem in problems_of(entry):
                print(f"{file.name}:{number}: {problem}")
                problems += 1
            if isinstance(entry, dict):
                modules.add(str(entry.get("module")))
    print(
        f"{len(files)} processes, {lines} module loads, {len(modules)} modules; {problems} problems"
    )
    return 0 if lines and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
