"""The ``[tool.ci-runner.change-impact]`` table ``init`` drafts, and the text printed for review.

What it can see in the tree, nothing guessed:

* ``python-roots``: the import roots of the repository's packaging, wherever it lives
  (``python/pyproject.toml``; :mod:`ci_runner.impact.import_roots`);
* ``kernel-source-dirs``: the directories the literal file names of the tree's ``load_jit``
  calls resolve in (``elementwise/rope.cuh`` -> ``python/pkg/jit/csrc``), and
  ``kernel-include-dirs``: the ``include/`` directory beside each;
* ``ignore``: documentation: top-level directories most of whose files are text documents
  (``docs/``),
  coding-agent instruction directories (``.claude/``), and the document suffixes present
  (``*.md``, ``*.mdx``, ``*.rst``). Registered test files that mention documents are named in
  the review: a test that reads an ignored file is kept only when a test's code names it or a
  recorded run saw it opened.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ci_runner.adoption.tables import DraftedTable, render_table
from ci_runner.catalog import CATALOG_FILE
from ci_runner.catalog.location import CatalogLocation
from ci_runner.impact.config import DEFAULT_LOADERS, TABLE, KernelLoader
from ci_runner.impact.import_roots import read_import_roots
from ci_runner.impact.index import RepoIndex
from ci_runner.impact.python_facts import file_facts

DOCUMENT_SUFFIXES = (".md", ".mdx", ".rst")
TEXT_DOCUMENTS = (*DOCUMENT_SUFFIXES, ".ipynb")  # images and .txt are not: tests read them
AGENT_DIRECTORIES = (".claude", ".cursor", ".codex", ".gemini", ".windsurf", ".agents")
SHOWN = 5


@dataclass
class ImpactDraft:
    """The drafted table (TOML text with its comments) and the lines printed for review."""

    python_roots: list[str] = field(default_factory=list)
    root_sources: dict[str, tuple[str, ...]] = field(default_factory=dict)
    kernel_source_dirs: list[str] = field(default_factory=list)
    kernel_include_dirs: list[str] = field(default_factory=list)
    loader_files: int = 0  # literal kernel file names the loader calls give
    ignore: list[str] = field(default_factory=list)
    ignore_why: dict[str, str] = field(default_factory=dict)
    readers: list[str] = field(default_factory=list)  # registered files mentioning documents

    def table(self) -> DraftedTable | None:
        """``[tool.ci-runner.change-impact]``, each key with why it was drafted; None when the
        tree shows nothing to write."""
        values: dict[str, object] = {}
        notes: dict[str, str] = {}
        if self.python_roots:
            values["python-roots"] = self.python_roots
            sources = sorted({s for r in self.python_roots for s in self.root_sources.get(r, ())})
            notes["python-roots"] = "from " + ", ".join(sources)
        if self.kernel_source_dirs:
            values["kernel-source-dirs"] = self.kernel_source_dirs
            notes["kernel-source-dirs"] = f"the {self.loader_files} load_jit file(s) are there"
        if self.kernel_include_dirs:
            values["kernel-include-dirs"] = self.kernel_include_dirs
        if self.ignore:
            values["ignore"] = self.ignore
            notes["ignore"] = "documentation: " + "; ".join(
                f"{p} {self.ignore_why[p]}" for p in self.ignore
            )
        if not values:
            return None
        comments = (
            "What --changed-since / --changed-files know about this tree (docs/change-impact.md),",
            "drafted by `run_suite.py init` from what the tree shows; review it.",
        )
        return DraftedTable(TABLE, values, comments, notes)

    @property
    def text(self) -> str:
        """The table as ``pyproject.toml`` text."""
        table = self.table()
        location = CatalogLocation.for_file(Path(CATALOG_FILE))
        return "\n".join(render_table(table, location)[1:]) + "\n" if table else ""

    @property
    def review(self) -> list[str]:
        """What the user should check before trusting the table."""
        lines = [
            f"[tool.ci-runner.change-impact]: python-roots {self.python_roots or 'none'} (from "
            "the packaging); kernel dirs "
            f"{self.kernel_source_dirs + self.kernel_include_dirs or 'none'}; ignore "
            f"{self.ignore or 'nothing'}"
        ]
        if self.readers:
            more = f" and {len(self.readers) - SHOWN} more" if len(self.readers) > SHOWN else ""
            lines.append(
                "  check the ignore rules: registered files mention documents "
                f"({', '.join(self.readers[:SHOWN])}{more}); a test that reads an ignored file "
                "by a computed path is kept only when a recorded run saw it open the file"
            )
        if not self.kernel_source_dirs:
            lines.append(
                "  no load_jit call names a kernel file: add kernel-source-dirs and "
                "kernel-include-dirs if the tree builds kernels (until then a kernel change "
                "runs the whole suite)"
            )
        return lines


def draft_change_impact(
    root: Path, registered_dir: str, loaders: tuple[tuple[str, tuple], ...] = DEFAULT_LOADERS
) -> ImpactDraft:
    """Survey ``root`` and draft its change-impact table (module docstring)."""
    index = RepoIndex(root)
    draft = ImpactDraft()
    roots = read_import_roots(index)
    draft.python_roots = list(roots.roots)
    draft.root_sources = {r: roots.sources.get(r, ()) for r in roots.roots}
    _kernel_dirs(index, draft, tuple(KernelLoader(name, args) for name, args in loaders))
    _documentation(index, draft)
    draft.readers = _document_readers(index, registered_dir)
    return draft


def _kernel_dirs(index: RepoIndex, draft: ImpactDraft, loaders: tuple[KernelLoader, ...]) -> None:
    """The directories the literal files of the loader calls resolve in: for ``a/b.cuh``,
    the directory ``d`` of every ``d/a/b.cuh`` in the tree, the one holding most of them."""
    names = [loader.function.encode() for loader in loaders]
    votes: Counter[str] = Counter()
    for path in sorted(p for p in index.files if p.endswith(".py")):
        try:
            data = (index.root / path).read_bytes()
        except OSError:
            continue
        if not any(name in data for name in names):
            continue
        facts = file_facts(data, loaders, path.endswith("__init__.py"))
        for kind, text, _line in facts.get("kernel", ()):
            if kind != "file" or os.path.isabs(text):
                continue
            draft.loader_files += 1
            for found in index.ending_with(text):
                votes[found[: -len(text)].rstrip("/")] += 1
    if not votes:
        return
    best = max(votes.values())
    draft.kernel_source_dirs = sorted(d for d, n in votes.items() if n == best and d)
    for source in draft.kernel_source_dirs:
        include = f"{source.rsplit('/', 1)[0]}/include" if "/" in source else "include"
        if include in index.dirs:
            draft.kernel_include_dirs.append(include)


def _documentation(index: RepoIndex, draft: ImpactDraft) -> None:
    """Top-level documentation directories, agent instruction directories, and the document
    suffixes present elsewhere."""
    ignored = _gitignored(index)
    by_top: dict[str, Counter[bool]] = {}
    for path in index.files:
        if "/" in path:
            top = path.split("/", 1)[0]
            if not ignored(top + "/"):  # build output (an egg-info) is no documentation
                by_top.setdefault(top, Counter())[path.endswith(TEXT_DOCUMENTS)] += 1
    for top in sorted(by_top):
        documents, others = by_top[top][True], by_top[top][False]
        if documents > others and documents >= 3:
            pattern = f"/{top}/**"
            draft.ignore.append(pattern)
            draft.ignore_why[pattern] = (
                f"{documents} of its {documents + others} files are documents"
            )
    for agent in AGENT_DIRECTORIES:
        if (index.root / agent).is_dir():
            pattern = f"/{agent}/**"
            draft.ignore.append(pattern)
            draft.ignore_why[pattern] = "coding-agent instructions"
    covered = tuple(p[1:-3] + "/" for p in draft.ignore)
    for suffix in DOCUMENT_SUFFIXES:
        outside = [p for p in index.files if p.endswith(suffix) and not p.startswith(covered)]
        if outside:
            pattern = f"*{suffix}"
            draft.ignore.append(pattern)
            draft.ignore_why[pattern] = f"{len(outside)} file(s), e.g. {sorted(outside)[0]}"


def _gitignored(index: RepoIndex):
    """Whether the root ``.gitignore`` ignores a path (pathspec's git rules)."""
    import pathspec

    try:
        lines = (index.root / ".gitignore").read_text(encoding="utf-8").splitlines()
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
    except (OSError, UnicodeDecodeError, ValueError):
        return lambda path: False
    return spec.match_file


def _document_readers(index: RepoIndex, registered_dir: str) -> list[str]:
    """Registered Python files whose text mentions a document suffix or ``docs/``."""
    marks = [s.encode() for s in DOCUMENT_SUFFIXES] + [b"docs/", b"README"]
    found = []
    for path in index.under(registered_dir.rstrip("/") + "/", ".py"):
        try:
            data = (index.root / path).read_bytes()
        except OSError:
            continue
        if any(mark in data for mark in marks):
            found.append(path)
    return found
