"""Which repository files each test file imports when it is loaded: a run-time trace.

``python import_trace.py ROOT FILE...`` imports the third-party libraries the tests use once,
then forks one child per file (so no repository module is loaded before it). The child loads
the file as ``python FILE`` would (``sys.path[0]`` its directory, the root on ``sys.path``, cwd
the root) under another ``__name__``, so its tests do not run, and reports every module in
``sys.modules`` whose file lies in the root. Prints one JSON object ``{file: [root-relative
path, ...]}``; a file that raises while loading still reports what it had imported.
"""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import sys
from pathlib import Path

THIRD_PARTY = ("torch", "pytest", "numpy", "tvm_ffi", "hypothesis", "junitparser", "yaml")


def repository_modules(root: Path) -> list[str]:
    """Root-relative paths of the loaded modules whose file lies in ``root``."""
    prefix = str(root) + os.sep
    found = set()
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if (
            name in ("__main__", "__mp_main__")
            or not isinstance(file, str)
            or not os.path.isabs(file)
        ):
            continue  # this script; a module without a real file
        if os.path.realpath(file).startswith(prefix):
            rel = Path(os.path.realpath(file)).relative_to(root)
            # A virtual environment inside the checkout (CI's .venv-ci) is not the repository:
            # hidden directories and installed packages are never the project's modules.
            if any(part.startswith(".") or part == "site-packages" for part in rel.parts[:-1]):
                continue
            found.add(rel.as_posix())
    return sorted(found)


def trace_in_child(root: Path, file: str) -> list[str]:
    """Fork, load ``file`` in the child, and return what it imported from ``root``."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        path = root / file
        sys.path[:] = [str(path.parent), str(root), *sys.path[1:]]
        sys.argv = [str(path)]
        os.chdir(root)
        # a module-level skip or failure still reports what was imported
        with contextlib.suppress(BaseException):
            runpy.run_path(str(path), run_name="__import_trace__")
        with os.fdopen(write_end, "w") as out:
            json.dump(repository_modules(root), out)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    return json.loads(data) if data else []


def main(argv: list[str]) -> int:
    root = Path(argv[0]).resolve()
    for name in THIRD_PARTY:
        with contextlib.suppress(ImportError):
            __import__(name)
    already = repository_modules(root)
    if already:
        print(f"repository modules loaded before the fork: {already}", file=sys.stderr)
        return 1
    print(json.dumps({file: trace_in_child(root, file) for file in argv[1:]}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
