"""Parse only what a scan reads: the statements up to the last marker mention, and the tail.

A test file's marker calls sit near its top and its ``__main__`` block at its end; the body in
between (most of the bytes) holds neither. :func:`parse_for_scan` parses the two ends and skips
the body whenever that provably gives the scan the same statements, else it parses the whole
file. A cold collection of a large tree spends nearly all its time in ``ast.parse``.
"""

from __future__ import annotations

import ast
import re

from ci_runner.catalog.syntax import RegistrationSyntax
from ci_runner.collect.calls import _statements_mentioning, marker_aliases, mention_pattern
from ci_runner.collect.scan import parse_source
from ci_runner.collect.source_text import differs_as_identifiers
from ci_runner.model import Problem

# A line that starts a new top-level statement if the text before it parses: not indented, not
# blank, not a comment, not a closing bracket, not a clause that continues a compound statement.
_STATEMENT_START = re.compile(rb"^(?=[^ \t\r\n#)\]}])(?!(?:else|elif|except|finally)\b)", re.M)
_TOP_LEVEL_IF = re.compile(rb"^if\b", re.M)
_ENCODING_LINE = re.compile(rb"^[ \t]*#.*?coding[:=]", re.M)


def parse_for_scan(
    data: bytes, rel_path: str, syntax: RegistrationSyntax
) -> tuple[ast.Module | None, Problem | None]:
    """A module with every top-level statement a scan of ``data`` reads, or the parse problem.

    The statements are those up to the end of the top-level statement holding the last textual
    mention of a marker (any ``register_<x>_ci``, the catalog's other marker names, and the names
    bound to a marker there), plus the top-level statements from the first top-level ``if`` after
    them to the end of the file (the ``__main__`` blocks). A full parse is done instead whenever
    that is not certain to give the same statements (see :func:`_prefix_and_tail`), so the scan
    sees exactly the registrations and problems of a full parse, with one difference: a syntax
    error (or undecodable text, or a NUL byte) in the skipped body, after the last marker
    statement and before that ``if``, is not reported at collection; the file then fails when it
    runs, so it is never silent.
    """
    module = _prefix_and_tail(data, syntax, rel_path)
    if module is not None:
        return module, None
    return parse_source(data, rel_path)


def _prefix_and_tail(
    data: bytes, syntax: RegistrationSyntax, rel_path: str = "<unknown>"
) -> ast.Module | None:
    """The prefix and tail statements, or None (parse everything) when not certain.

    Certain because: a prefix that parses ends outside any string, bracket or line continuation,
    so a following unindented line that is no ``else``/``elif``/``except``/``finally`` starts a
    new top-level statement, and the prefix's statements are the file's. The tail starts at an
    unindented ``if`` line whose previous line has no continuing backslash and holds no triple
    quote: were that line inside a string or brackets of the body, the string's closing quotes or
    the brackets' closers would be in the tail, which then does not parse. A top-level ``if``
    begins with an unindented ``if``, so the skipped body holds no ``__main__`` block. Not tried:
    no marker mention (nothing to anchor), form feeds (they reset a line's indentation), an
    encoding declaration (the tail would be read as UTF-8), bare carriage returns (line
    numbers), text whose identifiers NFKC normalisation changes (a byte search misses
    ``ｒegister_cuda_ci``), and a mention in the last statement (nothing to skip).
    """
    if b"\f" in data or data.count(b"\r") != data.count(b"\r\n") or differs_as_identifiers(data):
        return None
    if _ENCODING_LINE.search(data, 0, _end_of_line(data, _end_of_line(data, 0) + 1)):
        return None
    markers = syntax.markers
    mentions = re.compile(mention_pattern(markers).encode())
    prefix = _prefix_after(data, _last_match(mentions, data, 0), rel_path)
    if prefix is None:
        return None
    aliases = marker_aliases(_statements_mentioning(prefix[1], data, markers), markers)
    if aliases:
        words = re.compile(mention_pattern(markers, aliases).encode())
        later = _last_match(words, data, prefix[0])
        if later is not None:
            prefix = _prefix_after(data, later, rel_path)
            if prefix is None:
                return None
    cut, tree = prefix
    tail = _tail_statements(data, cut, rel_path)
    if tail is None:
        return None
    return ast.Module(body=[*tree.body, *tail], type_ignores=[])


def _end_of_line(data: bytes, position: int) -> int:
    end = data.find(b"\n", position)
    return len(data) if end < 0 else end


def _last_match(pattern: re.Pattern[bytes], data: bytes, start: int) -> int | None:
    last = None
    for match in pattern.finditer(data, start):
        last = match.start()
    return last


def _parsed(text: bytes, rel_path: str) -> ast.Module | None:
    try:
        return ast.parse(text, filename=rel_path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _prefix_after(data: bytes, mention: int | None, rel_path: str) -> tuple[int, ast.Module] | None:
    """(cut, parsed prefix): the text up to the next statement start after the line of
    ``mention``; None when there is no such line or the prefix does not parse."""
    if mention is None:
        return None
    start = _STATEMENT_START.search(data, _end_of_line(data, mention) + 1)
    if start is None:
        return None
    tree = _parsed(data[: start.start()], rel_path)
    return None if tree is None else (start.start(), tree)


def _tail_statements(data: bytes, cut: int, rel_path: str) -> list[ast.stmt] | None:
    """The statements from the first unindented ``if`` at or after ``cut`` to the end ([] when
    there is none: then no top-level statement after ``cut`` is an ``if``); None when unsure."""
    found = _TOP_LEVEL_IF.search(data, cut)
    if found is None:
        return []
    start = found.start()
    previous = data[:start].removesuffix(b"\n").removesuffix(b"\r")
    tail = data[start:]
    if previous.endswith(b"\\") or b'"""' in tail or b"'''" in tail:
        return None
    tree = _parsed(tail, rel_path)
    if tree is None:
        return None
    ast.increment_lineno(tree, data.count(b"\n", 0, start))
    return tree.body
