"""The static #include closure is exactly what nvcc reads: for every kernel module CI builds.

Every specialization ``python -m jit_kernel precompile`` declares (one per kernel loader call of
every wrapper; other specializations of a wrapper differ only in template arguments, never in
the files they include) is planned for sm_90a with ``plan_only``. nvcc then writes the
dependency file of that build: the module's own command (flags, include directories, generated
translation unit) with ``-M -MF`` in place of ``-c``, so it preprocesses without compiling. For
each module, the repository files in that depfile must equal the files its cache key covers (the
static closure of ``cpp_includes``), and for each wrapper the kernel files the runner's change
analysis reaches from it must equal the union over its modules, and no module of ours may hold
what the scanner reports unproven (a macro include): the static closure must be exact here. A
header the analysis missed would be a change that selects too few tests; one it adds needlessly
would select too many.
"""

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers_jit_toolchain import REPO_ROOT, nvcc_missing_reason

from ci_runner import register_cpu_ci

register_cpu_ci(est_time=20, suite="base-a-test-cpu")

pytestmark = pytest.mark.skipif(
    nvcc_missing_reason() is not None, reason=str(nvcc_missing_reason())
)

KERNEL_TREES = {
    "include": REPO_ROOT / "jit_kernel" / "include",
    "csrc": REPO_ROOT / "jit_kernel" / "csrc",
}


def depfile_inputs(text: str) -> list[str]:
    """The prerequisites of a make-style dependency file (``out.o: a.cu b.h ...``)."""
    inputs: list[str] = []
    for rule in text.replace("\\\n", " ").splitlines():
        _, _, prerequisites = rule.partition(": ")
        words = re.split(r"(?<!\\)\s+", prerequisites.strip())
        inputs += [word.replace("\\ ", " ") for word in words if word]
    return inputs


def test_depfile_inputs_reads_continued_lines_and_escaped_spaces():
    text = "cuda.o : cuda.cu \\\n    /a/b.h \\\n    /c/with\\ space.h\n"
    assert depfile_inputs(text) == ["cuda.cu", "/a/b.h", "/c/with space.h"]


def repository_files(paths: list[str]) -> set[str]:
    """The depfile entries inside jit_kernel/include and jit_kernel/csrc, root-relative."""
    trees = [str(tree.resolve()) + os.sep for tree in KERNEL_TREES.values()]
    root = REPO_ROOT.resolve()
    return {
        Path(os.path.relpath(path, root)).as_posix()
        for path in paths
        if any(path.startswith(tree) for tree in trees)
    }


def key_files(key_material: dict) -> set[str]:
    """The files a module's key covers, root-relative (labels ``include/...``, ``csrc/...``)."""
    files = set()
    for label, _digest in key_material["files"]:
        tree, _, rest = label.partition("/")
        assert tree in KERNEL_TREES, f"a key file outside our trees: {label}"
        path = (KERNEL_TREES[tree] / rest).resolve()
        files.add(path.relative_to(REPO_ROOT.resolve()).as_posix())
    return files


def compiler_reads(plan, staging: Path) -> set[str]:
    """Real paths of every file the module's compile commands read, from nvcc's (and the host
    compiler's) depfiles, generated with the build's own command and ``-M``."""
    from jit_kernel.compiler.build import nvcc_command
    from jit_kernel.compiler.toolchain import find_cuda_toolkit, host_compiler

    staging.mkdir(parents=True)
    commands = []
    if plan.cuda_source is not None:
        (staging / "cuda.cu").write_text(plan.cuda_source)
        args = ("-M", "-MF", "cuda.o.d", "-MT", "cuda.o", "cuda.cu")
        commands.append(
            ("cuda.o.d", nvcc_command(find_cuda_toolkit().nvcc, plan.cuda_flags, staging, *args))
        )
    if plan.cpp_source is not None:
        (staging / "main.cpp").write_text(plan.cpp_source)
        args = ("-M", "-MF", "main.o.d", "-MT", "main.o", "main.cpp")
        commands.append(("main.o.d", (host_compiler(), *plan.cpp_flags, *args)))
    read: set[str] = set()
    for depfile, command in commands:
        done = subprocess.run(command, cwd=staging, capture_output=True, text=True)
        assert done.returncode == 0, f"{plan.name}: {command}\n{done.stdout}{done.stderr}"
        text = (staging / depfile).read_text()
        read |= {os.path.realpath(staging / p) for p in depfile_inputs(text)}
    return read


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    """``[(wrapper file, plan, repository files nvcc read)]`` for every declared specialization."""
    from jit_kernel.compiler import override_arch, plan_only
    from jit_kernel.tools.precompile import import_wrapper_modules
    from jit_kernel.wrapper.registry import registered_specs

    assert import_wrapper_modules("jit_kernel") == []
    specs = registered_specs()
    assert specs, "no kernel declares its specializations"
    planned = []
    for spec in specs:
        with override_arch("9.0"), plan_only() as plans:
            spec.fn.__wrapped__(*spec.args)
        assert len(plans) == 1, f"{spec.label}: planned {len(plans)} modules"
        wrapper = Path(sys.modules[spec.fn.__module__].__file__).resolve()
        planned.append((wrapper.relative_to(REPO_ROOT.resolve()).as_posix(), plans[0]))
    base = tmp_path_factory.mktemp("depfiles")
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        reads = pool.map(
            lambda item: compiler_reads(item[1][1], base / f"{item[0]}-{item[1][1].name}"),
            enumerate(planned),
        )
        return [
            (wrapper, plan, repository_files(sorted(read)))
            for (wrapper, plan), read in zip(planned, reads, strict=True)
        ]


def test_every_module_reads_exactly_the_files_its_key_covers(modules):
    for wrapper, plan, read in modules:
        covered = key_files(plan.key_material)
        assert not plan.unproven, f"{wrapper} ({plan.name}): not provable: {plan.unproven}"
        assert read, f"{plan.name}: the depfile lists no kernel file"
        assert read == covered, (
            f"{wrapper} ({plan.name}): read but not in the key: {sorted(read - covered)}; "
            f"in the key but not read: {sorted(covered - read)}"
        )
    assert len({wrapper for wrapper, _, _ in modules}) >= 10


def test_the_change_analysis_reaches_exactly_those_files_from_each_wrapper(modules):
    from ci_runner.catalog import load_catalog
    from ci_runner.impact.config import load_impact_config
    from ci_runner.impact.fact_cache import FactCache
    from ci_runner.impact.graph import DependencyGraph
    from ci_runner.impact.index import RepoIndex

    compiled: dict[str, set[str]] = {}
    for wrapper, _plan, read in modules:
        compiled.setdefault(wrapper, set()).update(read)
    config = load_impact_config(load_catalog(REPO_ROOT))
    graph = DependencyGraph(config, RepoIndex(REPO_ROOT), FactCache(config), compiled)
    for wrapper, files in compiled.items():
        reached, pending = set(), [wrapper]
        while pending:
            node = pending.pop()
            for target, _how in graph.edges.get(node, ()):
                if target not in reached and not target.endswith(".py"):
                    reached.add(target)
                    pending.append(target)
        assert reached == files, (
            f"{wrapper}: reached but not compiled: {sorted(reached - files)}; "
            f"compiled but not reached: {sorted(files - reached)}"
        )


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
