"""The docs stay true: links and anchors resolve, every CLI flag is documented, commands run.

Checks README.md, docs/**/*.md and the measured-figure files (benchmarks/, tools/, verification/):

* every relative link and ``#anchor`` resolves (GitHub's heading slugs), and every page under
  docs/ is reachable by links from README.md;
* every flag and subcommand that ``--help`` prints (``run_suite.py``, ``python -m
  jit_kernel``, the scripts) appears literally somewhere in README.md or docs/;
* every code block that names a file (```` ```python file=jit_kernel/add3.py ````) is exactly
  that file, so templates shown in the docs are the real, tested files;
* every ``python ...`` command of a shell code block exits 0 when run in a throwaway copy of
  the tree, unless it is marked ``# gpu-only`` or ``# no-check: <reason>``
  (docs/ci-wiring.md#the-docs-check);
* every header of jit_kernel/include/sgl_kernel/ has a row in docs/header-library.md;
* README.md's setup installs exactly what ``.ci/run`` installs.

The last tests run the same checks on small broken documents, so each check is shown to fail.
"""

import re
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ci_runner import register_cpu_ci

sys.path.insert(0, str(Path(__file__).parent))

from docs_cli import CliSpec, cli_help, undocumented
from docs_commands import doc_commands, run_commands
from docs_markdown import (
    Problem,
    doc_files,
    file_block_problems,
    github_slug,
    link_problems,
    links,
    parse,
)

register_cpu_ci(est_time=20, suite="base-a-test-cpu")

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTED_IN = "README.md and docs/**/*.md"
DOCUMENTED_WITH_FIGURES_IN = (
    "README.md, docs/**/*.md and the figure files (*.md beside the scripts)"
)


def maintenance(command: str) -> CliSpec:
    """``python -m ci_runner.maintenance COMMAND``: ``names`` holds the command (its --help prefix)."""
    return CliSpec(
        f"python -m ci_runner.maintenance {command}", "module", "ci_runner.maintenance", (command,)
    )


def module(name: str) -> CliSpec:
    return CliSpec(f"python -m {name}", "module", name, (name.rsplit(".", 1)[-1],))


def help_of(spec: CliSpec):
    prefix = spec.names if spec.target == "ci_runner.maintenance" else ()
    return cli_help(spec, ROOT, prefix=prefix)


# Documented in README.md or docs/.
CLIS = [
    CliSpec("python run_suite.py", "path", "run_suite.py", ("run_suite.py", "run-suite")),
    CliSpec("python -m jit_kernel", "module", "jit_kernel", ("jit_kernel",)),
    maintenance("merge-junit"),
    maintenance("update-est-time"),
    maintenance("flaky-report"),
    maintenance("check-registered-tests"),
    maintenance("check-no-registered-tests-in-package"),
    maintenance("check-workflow-dispatch"),
]
# Measurement scripts: documented in README.md, docs/ or their figures file <name>.md beside them.
MEASUREMENT_CLIS = [
    module("benchmarks.runner.bench_discovery"),
    module("benchmarks.runner.bench_planner"),
    module("benchmarks.runner.bench_runner_overhead"),
    module("benchmarks.bench_jit_kernels"),
]
# Top-level modules of jit_kernel/ that are not kernel wrappers (as precompile skips them).
NOT_KERNELS = {"__init__", "__main__", "precompile", "clangd"}


def all_docs(root: Path = ROOT):
    return [parse(path, root) for path in doc_files(root)]


def report(problems: list) -> str:
    return "\n".join(str(problem) for problem in problems)


# ------------------------------------------------------------------ this repository's docs


def test_links_and_anchors_resolve():
    problems = link_problems(all_docs(), ROOT)
    assert not problems, "\n" + report(problems)


def test_code_blocks_that_name_a_file_are_that_file():
    docs = all_docs()
    assert any(block.file for doc in docs for block in doc.blocks)
    problems = file_block_problems(docs, ROOT)
    assert not problems, "\n" + report(problems)


def test_every_docs_page_is_reachable_from_the_readme():
    docs = {doc.path.resolve(): doc for doc in all_docs()}
    seen, queue = set(), [(ROOT / "README.md").resolve()]
    while queue:
        path = queue.pop()
        if path in seen or path not in docs:
            continue
        seen.add(path)
        for _, target in links(docs[path]):
            file_part = target.partition("#")[0]
            if file_part and "://" not in file_part:
                queue.append((path.parent / file_part).resolve())
    orphans = sorted(
        f"{doc.rel}:1: no link leads here from README.md (add it to an index: README.md, "
        "docs/kernels.md, ...)"
        for path, doc in docs.items()
        if path not in seen and doc.rel.startswith("docs/")
    )
    assert not orphans, "\n" + "\n".join(orphans)


def test_every_cli_flag_and_subcommand_is_documented():
    texts = {path: path.read_text(encoding="utf-8") for path in doc_files(ROOT)}
    docs = "\n".join(
        text
        for path, text in texts.items()
        if path.name == "README.md" or path.is_relative_to(ROOT / "docs")
    )
    everything = "\n".join(texts.values())
    specs = [(spec, docs, DOCUMENTED_IN) for spec in CLIS]
    specs += [(spec, everything, DOCUMENTED_WITH_FIGURES_IN) for spec in MEASUREMENT_CLIS]
    with ThreadPoolExecutor(max_workers=4) as pool:
        helps = list(pool.map(lambda entry: help_of(entry[0]), specs))
    missing = [
        message
        for (spec, corpus, where), help_ in zip(specs, helps, strict=True)
        for message in undocumented(spec, help_, corpus, where)
    ]
    assert not missing, "\n" + "\n".join(missing)


def test_every_kernel_module_is_in_the_kernel_index():
    index = (ROOT / "docs" / "kernels.md").read_text(encoding="utf-8")
    missing = sorted(
        f"docs/kernels.md:1: jit_kernel/{path.name} is a kernel wrapper without a row: add "
        f"`jit_kernel.{path.stem}.<function>(...)` to the index"
        for path in (ROOT / "jit_kernel").glob("*.py")
        if path.stem not in NOT_KERNELS and f"jit_kernel.{path.stem}." not in index
    )
    assert not missing, "\n" + "\n".join(missing)


def headers_without_a_row(root: Path) -> list[str]:
    """One line per header of jit_kernel/include/sgl_kernel/ that docs/header-library.md's
    reference table does not list (a row starts ``| `<header path>` ``)."""
    reference = (root / "docs" / "header-library.md").read_text(encoding="utf-8")
    include = root / "jit_kernel" / "include" / "sgl_kernel"
    return sorted(
        f"docs/header-library.md:1: {path.relative_to(include).as_posix()} has no row in the "
        "header reference table: add one (header, namespace, API)"
        for path in include.rglob("*")
        if path.suffix in (".h", ".cuh")
        and f"| `{path.relative_to(include).as_posix()}`" not in reference
    )


def test_every_header_is_in_the_header_reference():
    missing = headers_without_a_row(ROOT)
    assert not missing, "\n" + "\n".join(missing)


def test_doc_commands_run_or_are_marked():
    commands = [command for doc in all_docs() for command in doc_commands(doc)]
    assert any(command.marker is None for command in commands)
    problems = run_commands(commands, ROOT)
    assert not problems, "\n" + report(problems)


def pip_installs(text: str) -> set[str]:
    """``pip install ...`` commands, spelled without ``python -m``, ``-q`` or comments."""
    found = set()
    for line in text.splitlines():
        command = line.split("#", 1)[0]
        for part in command.split("&&"):
            words = part.split()
            if words[:3] == ["python", "-m", "pip"]:
                words = words[2:]
            if words[:2] == ["pip", "install"]:
                found.add(" ".join(word for word in words if word != "-q"))
    return found


def test_readme_setup_is_what_ci_runs():
    readme = parse(ROOT / "README.md", ROOT)
    shell = "\n".join(
        line for block in readme.blocks if block.info == "bash" for line in block.lines
    )
    ci_run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    # The README gives ordinary machines PyTorch's CPU index for torch (PyPI's is the CUDA
    # build); CI installs the same version from a local file. Otherwise the same installs.
    cpu_index = " --index-url https://download.pytorch.org/whl/cpu"
    readme_installs = pip_installs(shell)
    assert f"pip install torch==2.13.0{cpu_index}" in readme_installs
    assert {c.replace(cpu_index, "") for c in readme_installs} == pip_installs(ci_run)
    test_command = "python run_suite.py --hw cpu --suite base-a-test-cpu"
    assert test_command in shell
    assert test_command in ci_run


# ------------------------------------------------------------------ the checks can fail


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        (
            "The JIT toolchain: `load_jit`, the build cache, precompile and clangd",
            "the-jit-toolchain-load_jit-the-build-cache-precompile-and-clangd",
        ),
        (
            "Kernels and the `sgl_kernel` C++ header library",
            "kernels-and-the-sgl_kernel-c-header-library",
        ),
        ("`do_bench`: how a cell is timed", "do_bench-how-a-cell-is-timed"),
        (
            "Measured on Hopper (H200, CUDA 13.0, 16 cores)",
            "measured-on-hopper-h200-cuda-130-16-cores",
        ),
        ("**Bold** and [a link](x.md) – dash", "bold-and-a-link--dash"),
        ("Karmarkar–Karp, `--gpus N`", "karmarkarkarp---gpus-n"),
    ],
)
def test_github_slug(heading, slug):
    assert github_slug(heading) == slug


def test_broken_links_and_anchors_are_reported_with_file_and_line(tmp_path):
    write(
        tmp_path,
        {
            "README.md": """\
                # Title

                ## Same
                ## Same
                [ok](docs/a.md#part-two) [ok](#same-1) [ok](docs/) [web](https://x.y/#z)
                [gone](docs/missing.md) and [bad anchor](docs/a.md#part-3)
                `[in code](nowhere.md)`

                ```bash
                [in a block](nowhere.md)
                ```
                [here](#nope)
                [ref]: docs/also-missing.md
                """,
            "docs/a.md": "# A\n\n## Part two\n\n[up](../README.md#title) [x](../README.md#no)\n",
        },
    )
    problems = [str(p) for p in link_problems(all_docs(tmp_path), tmp_path)]
    assert problems == [
        "README.md:6: broken link 'docs/missing.md': docs/missing.md does not exist",
        "README.md:6: broken anchor 'docs/a.md#part-3': no heading in docs/a.md has the "
        "anchor #part-3",
        "README.md:12: broken anchor '#nope': no heading in this file has the anchor #nope",
        "README.md:13: broken link 'docs/also-missing.md': docs/also-missing.md does not exist",
        "docs/a.md:5: broken anchor '../README.md#no': no heading in README.md has the anchor #no",
    ]


def test_headers_without_a_row_are_reported(tmp_path):
    write(
        tmp_path,
        {
            "docs/header-library.md": "| `listed.cuh` | `device` | x |\n`unlisted.cuh` in prose\n",
            "jit_kernel/include/sgl_kernel/listed.cuh": "",
            "jit_kernel/include/sgl_kernel/unlisted.cuh": "",
            "jit_kernel/include/sgl_kernel/impl/deep.cuh": "",
            "jit_kernel/include/sgl_kernel/notes.txt": "",
        },
    )
    assert headers_without_a_row(tmp_path) == [
        "docs/header-library.md:1: impl/deep.cuh has no row in the header reference table: "
        "add one (header, namespace, API)",
        "docs/header-library.md:1: unlisted.cuh has no row in the header reference table: "
        "add one (header, namespace, API)",
    ]


FAKE_CLI = """\
    import argparse
    import sys

    if sys.argv[1:2] == ["init"]:  # dispatched before argparse, like run_suite.py init
        init = argparse.ArgumentParser(prog="tool.py init")
        init.add_argument("--force", action="store_true")
        init.parse_args(sys.argv[2:])
        sys.exit(0)
    parser = argparse.ArgumentParser(prog="tool.py", epilog="New here? `tool.py init --help`.")
    parser.add_argument("--alpha")
    parser.add_argument("-b", "--beta", action="store_true")
    parser.add_argument("--hidden", help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command")
    sync = sub.add_parser("sync")
    sync.add_argument("--gamma")
    parser.parse_args()
    """


def test_undocumented_flags_and_subcommands_are_reported(tmp_path):
    write(tmp_path, {"tool.py": FAKE_CLI})
    spec = CliSpec("python tool.py", "path", "tool.py", ("tool.py",))
    help_ = cli_help(spec, tmp_path)
    assert help_.options == (("--alpha",), ("-b", "--beta"))
    assert list(help_.subcommands) == ["sync", "init"]
    assert help_.subcommands["init"].options == (("--force",),)
    docs = (
        "Use `--alpha A`, `--beta` (also `-b`) and --alpha-beta. `tool.py sync` syncs. "
        "`tool.py init --force` starts over."
    )
    assert undocumented(spec, help_, docs, "the docs") == [
        "`python tool.py sync --help` prints --gamma, but the docs never mention it: "
        "document the flag"
    ]
    assert undocumented(spec, help_, "--alpha-beta and --betas", "the docs") == [
        "`python tool.py --help` prints --alpha, but the docs never mention it: document the flag",
        "`python tool.py --help` prints -b, but the docs never mention it: document the flag",
        "`python tool.py --help` prints --beta, but the docs never mention it: document the flag",
        "`python tool.py --help` lists the subcommand 'sync', but the docs never mention it "
        "(as 'tool.py sync'): document it",
        "`python tool.py sync --help` prints --gamma, but the docs never mention it: "
        "document the flag",
        "`python tool.py --help` lists the subcommand 'init', but the docs never mention it "
        "(as 'tool.py init'): document it",
        "`python tool.py init --help` prints --force, but the docs never mention it: "
        "document the flag",
    ]


def test_file_blocks_that_differ_or_name_no_file_are_reported(tmp_path):
    write(
        tmp_path,
        {
            "src/k.py": "a = 1\nb = 2\n",
            "README.md": """\
                # Files

                ```python file=src/k.py
                a = 1
                b = 2
                ```

                ```python file=src/k.py
                a = 1
                b = 3
                ```

                ```cuda file=src/missing.cuh
                ```

                ```python
                not checked
                ```
                """,
        },
    )
    problems = [str(p) for p in file_block_problems(all_docs(tmp_path), tmp_path)]
    assert problems == [
        "README.md:10: the block differs from src/k.py at its line 2: copy the file into the "
        "block (or the block into the file)",
        "README.md:13: file=src/missing.cuh: no such file",
    ]


def test_commands_run_in_a_copy_and_markers_skip_them(tmp_path):
    write(
        tmp_path,
        {
            "README.md": """\
                # Commands

                ```bash
                python -c "open('written.txt', 'w').write('x')"
                python -c "import sys; sys.exit(3)"
                SOME_VAR=1 python3 -c "import os, sys; sys.exit(os.environ['SOME_VAR'] != '1')"
                python -c "import sys; \\
                    sys.exit(4)"
                python -c "import sys; sys.exit(5)"   # gpu-only
                pip install nothing-here
                ```

                ```bash
                # no-check: it needs CI artifacts
                python -c "import sys; sys.exit(6)"
                ```

                ```text
                python -c "import sys; sys.exit(7)"
                ```
                """,
        },
    )
    commands = doc_commands(parse(tmp_path / "README.md", tmp_path))
    assert [(c.line, c.marker) for c in commands] == [
        (4, None),
        (5, None),
        (6, None),
        (7, None),
        (9, "gpu-only"),
        (15, "no-check"),
    ]
    assert commands[3].text == 'python -c "import sys; sys.exit(4)"'
    problems = run_commands(commands, tmp_path, timeout=60)
    assert [(p.path, p.line) for p in problems] == [("README.md", 5), ("README.md", 7)]
    assert re.match(
        r"README.md:5: `python -c \"import sys; sys.exit\(3\)\"` exited 3 \(mark it `# gpu-only`",
        str(problems[0]),
    )
    assert not (tmp_path / "written.txt").exists()
    assert isinstance(problems[0], Problem)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
