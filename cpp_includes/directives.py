"""The ``#include`` directives of a source file, found as the preprocessor finds them.

Backslash-continued lines are joined and comments removed first (string and character literals
kept), so ``#include /* why */ "dep.h"`` and an include split over two lines are read like any
other, and a commented-out include is not. An include written with a macro (``#include MACRO``)
cannot be read. Includes inside ``#if`` blocks are kept, which can only add files.
"""

from __future__ import annotations

import re

_INCLUDE_RE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.MULTILINE)
_SPLICE_RE = re.compile(rb"\\[ \t]*\r?\n")  # a backslash ending a line joins it to the next
# What the preprocessor treats as one token before it looks for directives: literals (kept as
# they are, so "//" inside one is no comment) and comments (each becomes one space).
_LEXEME_RE = re.compile(
    rb'R"(?P<delim>[^()\\\s"]{0,16})\((?s:.*?)\)(?P=delim)"'  # raw string literal
    rb'|"(?:\\.|[^"\\\n])*"'  # string literal, or a "header-name"
    rb"|'(?:\\.|[^'\\\n])*'"  # character literal
    rb"|/\*(?s:.*?)\*/"  # block comment
    rb"|//[^\n]*"  # line comment
)


def directives_text(data: bytes) -> bytes:
    """``data`` with continued lines joined and comments replaced by a space (the text the
    preprocessor finds its directives in)."""
    spliced = _SPLICE_RE.sub(b"", data)
    return _LEXEME_RE.sub(lambda m: b" " if m.group(0)[:1] == b"/" else m.group(0), spliced)


def includes_of(data: bytes) -> tuple[tuple[bytes, str], ...]:
    """``(quote, target)`` of every ``#include`` directive in a source file's bytes; ``quote``
    is ``b'"'`` or ``b"<"``."""
    return tuple(
        (match.group(1), match.group(2).decode("utf-8", "replace").strip())
        for match in _INCLUDE_RE.finditer(directives_text(data))
    )
