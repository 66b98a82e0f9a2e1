"""The dependency directives of one C/C++/CUDA source, found as the preprocessor finds them.

Followed (GCC's preprocessor, which nvcc's passes use too; a property test compares the result
with ``g++ -M`` on generated sources):

* a UTF-8 byte-order mark at the start of the file is skipped;
* a line ends at ``\\n``, ``\\r\\n`` or a lone ``\\r``; a backslash followed by optional spaces,
  tabs, form feeds or vertical tabs and a line end joins two lines, before anything else;
* comments are whitespace (a block comment may span lines, inside a directive too); string,
  character and raw string literals are skipped whole, so nothing in them is a directive;
* a directive is ``#`` or the digraph ``%:`` as the first token of a line (only whitespace and
  comments before it), then whitespace (space, tab, form feed, vertical tab, NUL) and comments,
  then its name; ``%:%:`` (``##``) starts none;
* ``#include``, ``#include_next``, ``#import`` and ``#embed`` with a ``"file"`` or ``<file>``
  name, and ``__has_include``, ``__has_include_next`` and ``__has_embed`` with one anywhere
  (their answer decides what compiles, so the file they name is a dependency when it exists);
* directives in every ``#if`` branch, which can only add files.

What cannot be known without running the preprocessor is reported as :class:`Unproven` (its line
and why), never guessed: a header named by a macro (``#include KERNEL_H``, ``__has_include(X)``),
a trigraph ``??=`` or ``??/`` (with ``-trigraphs``, off by default in the C++17+ modes g++ and
nvcc use, ``??=include`` is a directive and ``??/`` joins lines), a directive name spelled with a
universal character name (``#incl\\u0075de``, which g++ reads as ``include``), and a header name
without its closing ``"`` or ``>``.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

#: Directives that read a file, and the operators that ask whether one exists.
INCLUDE_DIRECTIVES = ("include", "include_next", "import", "embed")
EXISTENCE_OPERATORS = ("__has_include", "__has_include_next", "__has_embed")

_BOM = b"\xef\xbb\xbf"
_LINE_END = re.compile(rb"\r\n?")
_SPLICE = re.compile(rb"\\[ \t\f\v]*\n")
_TRIGRAPH = re.compile(rb"\?\?[=/]")
_GAP = rb"(?:[ \t\f\v\0]+|/\*(?s:.*?)\*/)*"  # whitespace and comments within a directive
_WORD = rb"[A-Za-z0-9_$\\\x80-\xff]+"  # an identifier or number (a backslash: a UCN)
_IDENTIFIER = rb"[A-Za-z0-9_$\x80-\xff]"
_SPACE = rb"[ \t\f\v\0]"
_NUMBER = rb"\.?[0-9](?:[eEpP][+-]|'[0-9A-Za-z_]|[0-9A-Za-z_.$\x80-\xff])*"  # digit separators too
# One token: a line end (with the next line's indentation), whitespace or a comment, a literal
# (one without its closing quote runs to the end of the line, as the preprocessor lexes it), a
# directive's ``#``, an existence operator, a run of code that starts none of these, or any other
# character. A run of code is numbers (``1'000`` included), whole words (none followed by a
# quote: that may make it a literal's prefix), other characters, line comments and line ends
# whose next line starts with code; it stops before anything that may start a literal, a block
# comment or a directive.
_TOKEN = re.compile(
    rb"(?P<nl>\n" + _SPACE + rb"*)"
    rb"|(?P<space>" + _SPACE + rb"+|/\*(?s:.*?)(?:\*/|\Z)|//[^\n]*)"
    rb'|(?P<literal>(?:u8|[uUL])?R"(?P<delim>[^()\\ \t\f\v\n"]{0,16})\((?s:.*?)\)(?P=delim)"'
    rb'|"(?:\\.|[^"\\\n])*"?'
    rb"|'(?:\\.|[^'\\\n])*'?)"
    rb"|(?P<hash>#|%:)"
    rb"|(?P<operator>__has_(?:include|include_next|embed)(?!" + _IDENTIFIER + rb"))"
    rb"|(?P<code>(?:" + _NUMBER + rb"|(?!__has_)" + _IDENTIFIER + rb"+(?![\"'$\w\x80-\xff])"
    rb"|[^\n\"'/#%\\A-Za-z0-9_$\x80-\xff]+|//[^\n]*|/(?![*/])|%(?!:)|#|%:"
    rb"|\n(?=" + _SPACE + rb"*(?://|[^ \t\f\v\0#%/\"'\\])))+)"
    rb"|(?P<other>" + _NUMBER + rb"|" + _IDENTIFIER + rb"+|.)"
)
_DIRECTIVE_NAME = re.compile(_GAP + rb"(?P<name>" + _WORD + rb")?" + _GAP)
_HEADER_NAME = re.compile(rb'"(?P<quoted>[^"\n]*)"|<(?P<angled>[^>\n]*)>')
_OPERATOR_ARGUMENT = re.compile(_GAP + rb"\(" + _GAP)
_UCN = re.compile(rb"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")
_COMMENT = re.compile(rb"/\*(?s:.*?)\*/|//[^\n]*")


@dataclass(frozen=True)
class Include:
    """A file a source names: ``kind`` is the directive or operator (``include``,
    ``include_next``, ``import``, ``embed``, ``__has_include``, ...), ``quote`` ``b'"'`` or
    ``b"<"``, ``line`` the physical line (1-based)."""

    kind: str
    quote: bytes
    target: str
    line: int

    @property
    def searches_next(self) -> bool:
        """``#include_next`` / ``__has_include_next``: the search continues past the directory
        the including file was found in."""
        return self.kind.endswith("include_next")

    @property
    def is_data(self) -> bool:
        """``#embed`` / ``__has_embed``: the file is read as bytes, not preprocessed."""
        return self.kind.endswith("embed")


@dataclass(frozen=True)
class Unproven:
    """Why the files a source reads cannot all be known statically (``line`` is physical)."""

    line: int
    text: str


@dataclass(frozen=True)
class SourceScan:
    """The files one source names, and what makes its dependencies unprovable."""

    includes: tuple[Include, ...]
    unproven: tuple[Unproven, ...]


class _Lines:
    """Physical line numbers of positions in the normalized, spliced text, asked for in
    increasing order (counted incrementally)."""

    def __init__(self, text: bytes, splices: list[int]) -> None:
        self._text = text
        self._splices = splices  # positions (in the spliced text) where a line was joined
        self._position = 0
        self._newlines = 0

    def of(self, position: int) -> int:
        if position < self._position:
            self._position = self._newlines = 0
        self._newlines += self._text.count(b"\n", self._position, position)
        self._position = position
        return 1 + self._newlines + bisect.bisect_right(self._splices, position)


def _splice(normalized: bytes) -> tuple[bytes, list[int]]:
    pieces: list[bytes] = []
    splices: list[int] = []
    start = removed = 0
    for match in _SPLICE.finditer(normalized):
        pieces.append(normalized[start : match.start()])
        removed += match.end() - match.start()
        splices.append(match.end() - removed)
        start = match.end()
    pieces.append(normalized[start:])
    return b"".join(pieces), splices


def _line_text(text: bytes, start: int) -> str:
    """The rest of a directive from ``start``: comments dropped, whitespace collapsed."""
    end = text.find(b"\n", start)
    rest = _COMMENT.sub(b" ", text[start : len(text) if end < 0 else end])
    return " ".join(rest.decode("utf-8", "replace").split())


def _decoded_name(name: bytes) -> str:
    def char(match: re.Match[bytes]) -> bytes:
        return chr(int(match.group(1) or match.group(2), 16)).encode("utf-8", "replace")

    return _UCN.sub(char, name).decode("utf-8", "replace")


def scan_source(data: bytes) -> SourceScan:
    """The files ``data`` (a source file's bytes) names, and what cannot be proven (see the
    module docstring)."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    unproven: list[Unproven] = []
    normalized = _LINE_END.sub(b"\n", data)
    text, splices = _splice(normalized)
    lines = _Lines(text, splices)
    trigraph = _TRIGRAPH.search(normalized)
    if trigraph is not None:
        line = 1 + normalized.count(b"\n", 0, trigraph.start())
        unproven.append(
            Unproven(
                line,
                f"trigraph {trigraph.group().decode()}: a directive or line join only with "
                "-trigraphs, which the preprocessor's flags decide",
            )
        )
    includes: list[Include] = []
    line_start = True
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        assert match is not None  # "other" matches any byte but a newline
        position = match.end()
        kind = match.lastgroup
        if kind == "nl":
            line_start = True
        elif kind == "space":  # whitespace and comments are no token
            continue
        elif kind == "hash" and line_start:
            position = _directive(text, position, lines, includes, unproven)
            line_start = False
        elif kind == "operator":
            position = _operator(match.group(kind), text, position, lines, includes, unproven)
            line_start = False
        else:
            line_start = False
    return SourceScan(tuple(includes), tuple(unproven))


def _directive(
    text: bytes, position: int, lines: _Lines, includes: list[Include], unproven: list[Unproven]
) -> int:
    """Read the directive whose ``#`` ends at ``position``; returns where scanning goes on."""
    match = _DIRECTIVE_NAME.match(text, position)
    assert match is not None  # every part is optional
    raw = match.group("name") or b""
    name = _decoded_name(raw) if b"\\" in raw else raw.decode("utf-8", "replace")
    if name not in INCLUDE_DIRECTIVES:
        return match.start("name") if raw else match.end()
    line = lines.of(position)
    if raw != name.encode():
        unproven.append(
            Unproven(line, f"#{raw.decode('utf-8', 'replace')}: a directive name spelled with a "
                     f"universal character name (read as #{name})")
        )  # fmt: skip
        return match.end()
    return _header(f"#{name}", name, text, match.end(), line, includes, unproven)


def _operator(
    word: bytes,
    text: bytes,
    position: int,
    lines: _Lines,
    includes: list[Include],
    unproven: list[Unproven],
) -> int:
    """Read ``__has_include(...)`` and its kin; a use without ``(`` (``defined(...)``) is none."""
    opening = _OPERATOR_ARGUMENT.match(text, position)
    if opening is None:
        return position
    name = word.decode()
    return _header(f"{name}(", name, text, opening.end(), lines.of(position), includes, unproven)


def _header(
    spelled: str,
    kind: str,
    text: bytes,
    position: int,
    line: int,
    includes: list[Include],
    unproven: list[Unproven],
) -> int:
    """Read the header name at ``position`` (after ``spelled``, e.g. ``#include``)."""
    match = _HEADER_NAME.match(text, position)
    if match is not None:
        quoted = match.group("quoted")
        target = quoted if quoted is not None else match.group("angled")
        quote = b'"' if quoted is not None else b"<"
        includes.append(Include(kind, quote, target.decode("utf-8", "surrogateescape"), line))
        return match.end()
    rest = _line_text(text, position)
    opening = text[position : position + 1]
    if opening in (b'"', b"<"):
        why = f"the header name has no closing {'>' if opening == b'<' else chr(34)}"
    else:
        why = "the file is named by a macro, which only the preprocessor can expand"
    unproven.append(
        Unproven(line, f"{spelled}{rest if spelled.endswith('(') else ' ' + rest}: {why}")
    )
    return position
