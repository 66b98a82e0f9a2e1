"""Python source as the interpreter reads it, for every text-level look at a test file.

The runner reads registrations from the syntax tree, which already is what Python reads. The
text is looked at too: prefilters ("does the file mention a marker?"), the statements a scan
walks, line numbers and the characters ``update-est-time --write`` replaces. Each of those must
agree with the interpreter:

* the encoding is the one Python uses: a UTF-8 byte order mark, else a ``# coding:`` cookie,
  else UTF-8 (:func:`decode`);
* identifiers are NFKC-normalised (``ｒegister_cuda_ci`` *is* ``register_cuda_ci`` to Python,
  PEP 3131), so a text search for a name searches the normalised text
  (:func:`identifier_text`);
* lines end only at ``\\n``, ``\\r\\n`` or ``\\r``; ``str.splitlines`` also splits at form feeds,
  ``\\x1c``-``\\x1e``, ``\\x85``, U+2028 and U+2029, which Python allows inside a line (in a
  comment, a string) (:func:`python_lines`).
"""

from __future__ import annotations

import io
import re
import tokenize
import unicodedata

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def encoding_of(data: bytes) -> str:
    """The encoding Python reads ``data`` with (``utf-8-sig`` when it starts with a BOM);
    raises ``SyntaxError`` for a cookie Python rejects."""
    return tokenize.detect_encoding(io.BytesIO(data).readline)[0]


def decode(data: bytes) -> str:
    """``data`` as Python decodes a source file (the BOM dropped); raises ``SyntaxError`` or
    ``UnicodeDecodeError`` where Python would refuse the file."""
    return data.decode(encoding_of(data))


def python_lines(text: str) -> list[str]:
    """The lines of ``text`` as Python's tokenizer counts them, each with its line ending."""
    return _LINE.findall(text)


def identifier_text(source: str | bytes) -> str | bytes:
    """``source`` with every line NFKC-normalised, as Python normalises identifiers; an ASCII
    source (the usual case) is returned as it is. Lines are kept, so line numbers stay."""
    if source.isascii():
        return source
    if isinstance(source, bytes):
        try:
            source = decode(source)
        except (SyntaxError, UnicodeDecodeError, LookupError):
            source = source.decode("utf-8", "replace")
    return "\n".join(unicodedata.normalize("NFKC", line) for line in source.split("\n"))


def may_mention(data: str | bytes, words: tuple[str, ...]) -> bool:
    """Can ``data`` name any of ``words`` (identifiers) as Python reads it? A cheap prefilter:
    a plain substring test, on the normalised text when there is non-ASCII text."""
    text = identifier_text(data)
    if isinstance(text, bytes):
        return any(word.encode() in text for word in words)
    return any(word in text for word in words)


def differs_as_identifiers(data: bytes) -> bool:
    """Whether NFKC normalisation changes the text of ``data`` (then a byte-level search for an
    identifier can miss one Python sees)."""
    if data.isascii():
        return False
    return identifier_text(data) != data.decode("utf-8", "replace")
