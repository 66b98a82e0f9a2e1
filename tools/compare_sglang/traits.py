"""Facts about upstream's tree that decide where a stricter runner parts ways with upstream's.

Each trait is a list of findings (one line each, file or suite first), computed from upstream's
own registrations and suite tables, and, for how the marker names are bound, from an AST scan
of the files upstream collects.
"""

from __future__ import annotations

import ast
from collections import Counter, defaultdict
from collections.abc import Iterable
from fnmatch import fnmatch
from pathlib import Path

from tools.compare_sglang.upstream import Registration

CONVENTIONAL_NAMES = ("test_*.py", "bench_*.py")
REGISTERED = "test/registered"


def _suite_key(r: Registration) -> str:
    return f"{r.hw or r.backend}:{r.suite!r}"


def upstream_traits(
    root: Path,
    registrations: list[Registration],
    collected: list[str],
    tables: dict[str, dict[str, list[str]]],
    checked_backends: list[str] | None,
    marker_names: Iterable[str],
) -> dict[str, list[str]]:
    """Trait name -> findings."""
    traits: dict[str, list[str]] = {}
    cadences: dict[str, Counter] = defaultdict(Counter)
    for r in registrations:
        cadences[_suite_key(r)][r.nightly] += 1
    traits["suites holding nightly=True and nightly=False registrations"] = [
        f"{key}: {c[True]} nightly=True, {c[False]} nightly=False"
        for key, c in sorted(cadences.items())
        if c[True] and c[False]
    ]
    backends: dict[str, set[str]] = defaultdict(set)
    for r in registrations:
        backends[str(r.suite)].add(r.hw or r.backend)
    traits["suite names registered on more than one backend"] = [
        f"{suite!r}: {', '.join(sorted(hws))}"
        for suite, hws in sorted(backends.items())
        if len(hws) > 1
    ]
    traits["enabled registrations with est_time=0"] = [
        f"{r.path} [{_suite_key(r)}]"
        for r in registrations
        if r.est_time == 0 and r.disabled is None
    ]
    traits["registrations with suite=''"] = [
        f"{r.path} [{r.hw or r.backend}, nightly={r.nightly}, "
        f"{'disabled' if r.disabled is not None else 'ENABLED'}]"
        for r in registrations
        if r.suite == ""
    ]
    counts = Counter((r.path, r.hw, r.suite, r.nightly) for r in registrations)
    traits["files registered twice for one (hw, suite, nightly)"] = [
        f"{path} [{hw}:{suite!r} nightly={nightly}] x{n}"
        for (path, hw, suite, nightly), n in sorted(counts.items(), key=str)
        if n > 1
    ]
    listed = {(hw, s) for by_hw in tables.values() for hw, suites in by_hw.items() for s in suites}
    registered = {(r.hw or r.backend, r.suite) for r in registrations}
    checked = set(checked_backends or [])
    traits["registered suites in no suite table (validated backend: upstream exits 1)"] = [
        f"{hw}:{suite!r}" for hw, suite in sorted(registered - listed, key=str) if hw in checked
    ]
    traits["registered suites in no suite table (unvalidated backend: a warning)"] = [
        f"{hw}:{suite!r}" for hw, suite in sorted(registered - listed, key=str) if hw not in checked
    ]
    traits["suite-table entries nothing registers (upstream selects 0 files, exit 0)"] = [
        f"{hw}:{suite!r}" for hw, suite in sorted(listed - registered, key=str)
    ]
    traits["registrations whose backend has no --hw value"] = sorted(
        {f"{r.backend} ({r.path})" for r in registrations if r.hw is None}
    )
    by_file = Counter(r.path for r in registrations)
    traits["collected files without a registration (upstream's sanity check: exit 1)"] = [
        path for path in collected if path not in by_file
    ]
    traits["collected files not named test_*.py / bench_*.py"] = [
        path
        for path in collected
        if not any(fnmatch(Path(path).name, p) for p in CONVENTIONAL_NAMES)
    ]
    every_py = sorted(p.relative_to(root).as_posix() for p in (root / REGISTERED).rglob("*.py"))
    traits["*.py files under test/registered/ that upstream does not collect"] = sorted(
        set(every_py) - set(collected)
    )
    traits["collected files outside test/registered/"] = [
        path for path in collected if not path.startswith("test/registered/")
    ]
    traits.update(marker_forms(root, collected, set(marker_names)))
    return traits


def marker_forms(root: Path, collected: list[str], names: set[str]) -> dict[str, list[str]]:
    """How the marker names are bound and called, beyond ``from ... import register_x_ci``."""
    assigned, aliased, nested, attribute = [], [], [], []
    for path in collected:
        try:
            tree = ast.parse((root / path).read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue
        top_level = {id(s.value) for s in tree.body if isinstance(s, ast.Expr)}
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            if any(isinstance(t, ast.Name) and t.id in names for t in targets):
                assigned.append(f"{path}:{node.lineno}")
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom | ast.Import):
                aliased += [
                    f"{path}:{node.lineno}: {a.name} as {a.asname}"
                    for a in node.names
                    if a.name in names and a.asname and a.asname != a.name
                ]
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id in names and id(node) not in top_level:
                nested.append(f"{path}:{node.lineno}")
            if isinstance(func, ast.Attribute) and func.attr in names:
                attribute.append(f"{path}:{node.lineno}")
    return {
        "marker names bound by assignment (register_x_ci = ...)": assigned,
        "marker names imported under another name": aliased,
        "marker calls not a top-level statement (upstream ignores them)": nested,
        "marker calls through an attribute (upstream ignores them)": attribute,
    }
