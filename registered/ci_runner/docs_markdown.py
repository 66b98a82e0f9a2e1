"""Read the project's Markdown the way GitHub renders it: headings, anchors, links, code blocks.

A helper of ``test_docs.py`` (not a test file). ``doc_files(root)`` lists the documents that are
checked; ``parse(path, root)`` reads one; ``link_problems(docs, root)`` reports every relative
link or ``#anchor`` that does not resolve, as ``path:line: message``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([^`\s]*)([^`]*)")
FILE_ATTRIBUTE = re.compile(r"(?:^|\s)file=(\S+)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"""<a\s+(?:name|id)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:|^//")


@dataclass(frozen=True)
class Problem:
    """One finding, printed as ``path:line: message`` (path relative to the root, POSIX)."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True)
class CodeBlock:
    """A fenced code block: its info string's first word and its lines (``start`` = 1-based).

    ``file``: the repository file the block shows, from a ``file=PATH`` word in the info string
    (```` ```python file=jit_kernel/add3.py ````); the docs check requires the block to equal it.
    """

    info: str
    start: int
    lines: tuple[str, ...]
    file: str | None = None


@dataclass
class MarkdownDoc:
    """One parsed document."""

    path: Path
    rel: str
    lines: list[str]
    anchors: set[str] = field(default_factory=set)
    blocks: list[CodeBlock] = field(default_factory=list)
    prose: list[tuple[int, str]] = field(default_factory=list)  # (line number, text) outside code


#: Where the measured-figure files live (each beside the script that produced it).
FIGURE_DIRS = ("benchmarks", "tools", "verification")


def doc_files(root: Path) -> list[Path]:
    """README.md, every ``docs/**/*.md`` and the measured-figure files beside the scripts that
    produce them (``benchmarks/**/*.md``, ``tools/*.md``, ``verification/*.md``)."""
    files = [root / "README.md"]
    files += sorted((root / "docs").rglob("*.md"))
    for folder in FIGURE_DIRS:
        files += sorted((root / folder).rglob("*.md"))
    return [path for path in files if path.is_file()]


def inline_text(markdown: str) -> str:
    """The rendered text of inline Markdown (code spans kept verbatim, links as their text)."""
    pieces: list[str] = []
    last = 0
    for match in CODE_SPAN.finditer(markdown):
        pieces.append(_strip_inline(markdown[last : match.start()]))
        pieces.append(match.group(2).strip())
        last = match.end()
    pieces.append(_strip_inline(markdown[last:]))
    return "".join(pieces)


def _strip_inline(text: str) -> str:
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)
    return text.replace("*", "").replace("~~", "")


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading (github-slugger): lower case, punctuation dropped, - for space.

    Letters, digits, ``_``, ``-`` and spaces survive; every other character (``:``, ``.``,
    ``` ` ```, ``(``, ``/``, ``–``, ...) is removed, then each space becomes ``-``.
    """
    text = inline_text(heading).strip().lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in "_- ")
    return text.replace(" ", "-")


def parse(path: Path, root: Path) -> MarkdownDoc:
    """Split ``path`` into code blocks and prose, and collect its anchors (with -1, -2 suffixes)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    doc = MarkdownDoc(path=path, rel=path.relative_to(root).as_posix(), lines=lines)
    seen: dict[str, int] = {}
    fence: tuple[str, int, str, int, str | None] | None = None  # char, length, info, start, file
    body: list[str] = []
    for number, line in enumerate(lines, start=1):
        opening = FENCE.match(line)
        if fence is not None:
            closing = opening is not None and not opening.group(2)
            if closing and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= fence[1]:
                doc.blocks.append(CodeBlock(fence[2], fence[3], tuple(body), fence[4]))
                fence, body = None, []
            else:
                body.append(line)
            continue
        if opening is not None:
            attribute = FILE_ATTRIBUTE.search(opening.group(3))
            fence = (
                opening.group(1)[0],
                len(opening.group(1)),
                opening.group(2).lower(),
                number + 1,
                attribute.group(1) if attribute else None,
            )
            continue
        doc.prose.append((number, line))
        doc.anchors.update(HTML_ANCHOR.findall(line))
        heading = HEADING.match(line)
        if heading:
            slug = github_slug(heading.group(2))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            doc.anchors.add(slug if count == 0 else f"{slug}-{count}")
    if fence is not None:
        doc.blocks.append(CodeBlock(fence[2], fence[3], tuple(body), fence[4]))
    return doc


def file_block_problems(docs: list[MarkdownDoc], root: Path) -> list[Problem]:
    """Every block naming a ``file=`` whose text is not exactly that file's."""
    problems = []
    for doc in docs:
        for block in doc.blocks:
            if block.file is None:
                continue
            where = block.start - 1
            path = root / block.file
            if not path.is_file():
                problems.append(Problem(doc.rel, where, f"file={block.file}: no such file"))
                continue
            actual = path.read_text(encoding="utf-8").splitlines()
            if list(block.lines) != actual:
                pairs = zip(block.lines, actual, strict=False)
                first = next(
                    (i for i, (shown, real) in enumerate(pairs) if shown != real),
                    min(len(block.lines), len(actual)),
                )
                problems.append(
                    Problem(
                        doc.rel,
                        block.start + first,
                        f"the block differs from {block.file} at its line {first + 1}: copy the "
                        "file into the block (or the block into the file)",
                    )
                )
    return problems


def links(doc: MarkdownDoc) -> list[tuple[int, str]]:
    """``(line, target)`` of every inline link, image and reference definition outside code."""
    found: list[tuple[int, str]] = []
    for number, line in doc.prose:
        text = CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)
        definition = REFERENCE_DEFINITION.match(text)
        if definition:
            found.append((number, definition.group(1)))
            continue
        found.extend((number, match.group(2)) for match in LINK.finditer(text))
    return found


def link_problems(docs: list[MarkdownDoc], root: Path) -> list[Problem]:
    """Every relative link whose file is missing, and every ``#anchor`` no heading produces."""
    by_path = {doc.path.resolve(): doc for doc in docs}
    problems: list[Problem] = []
    for doc in docs:
        for number, target in links(doc):
            message = _check_target(doc, target, root, by_path)
            if message:
                problems.append(Problem(doc.rel, number, message))
    return problems


def _check_target(
    doc: MarkdownDoc, target: str, root: Path, by_path: dict[Path, MarkdownDoc]
) -> str | None:
    if not target or SCHEME.match(target):
        return None
    file_part, _, anchor = target.partition("#")
    if file_part:
        base = root if file_part.startswith("/") else doc.path.parent
        resolved = (base / file_part.lstrip("/")).resolve()
        if not resolved.exists():
            return f"broken link {target!r}: {file_part} does not exist"
        if root.resolve() not in (resolved, *resolved.parents):
            return f"broken link {target!r}: it points outside the repository"
    else:
        resolved = doc.path.resolve()
    if not anchor or resolved.suffix.lower() != ".md":
        return None
    target_doc = by_path.get(resolved) or parse(resolved, root)
    if anchor not in target_doc.anchors:
        where = "this file" if resolved == doc.path.resolve() else target_doc.rel
        return f"broken anchor {target!r}: no heading in {where} has the anchor #{anchor}"
    return None
