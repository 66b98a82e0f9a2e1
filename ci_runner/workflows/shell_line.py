"""Find upstream ``run_suite.py`` invocations in a workflow step's shell script and read their flags.

Expressions (``${{ }}``) are substituted before this module sees the text; what could not be
resolved arrives as a marker token (:func:`marker`), so a flag whose value still holds one is
reported as unresolved instead of guessed.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from ci_runner.workflows.expressions import MAX_VALUE_CHARS

# Paths under which upstream's own test/run_suite.py is invoked (workflows `cd test` first).
UPSTREAM_SCRIPT_PATHS = frozenset(
    {"run_suite.py", "./run_suite.py", "test/run_suite.py", "./test/run_suite.py"}
)
_VALUE_FLAGS = {"--hw", "--suite", "--auto-partition-id", "--auto-partition-size"}
_OTHER_VALUE_FLAGS = {
    "--timeout-per-file",
    "--max-attempts",
    "--retry-wait-seconds",
    "--retry-timeout-increase",
    "--partition-model-file",
}
_MARKER = re.compile(r"__UNRESOLVED_(\d+)__")
_ASSIGNMENT = re.compile(r"^\s*(?:export\s+|local\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def marker(index: int) -> str:
    """The placeholder that stands for unresolved source number ``index``."""
    return f"__UNRESOLVED_{index}__"


def marker_indexes(text: str) -> list[int]:
    return [int(m) for m in _MARKER.findall(text)]


@dataclass(frozen=True)
class LogicalLine:
    """One shell command line after joining ``\\`` continuations; ``first`` is its 0-based line."""

    first: int
    text: str


def logical_lines(script: str) -> list[LogicalLine]:
    lines, start, parts = [], 0, []
    for number, physical in enumerate(script.splitlines()):
        if not parts:
            start = number
        stripped = physical.rstrip()
        if stripped.endswith("\\"):
            parts.append(stripped[:-1])
            continue
        parts.append(stripped)
        lines.append(LogicalLine(start, " ".join(p.strip() for p in parts)))
        parts = []
    if parts:
        lines.append(LogicalLine(start, " ".join(p.strip() for p in parts)))
    return lines


def assignments_before(lines: list[LogicalLine], indexes: list[int]) -> dict[int, dict[str, str]]:
    """The ``NAME=value`` assignments made in the script before each logical line of
    ``indexes``, in one pass over the script."""
    values: dict[str, str] = {}
    wanted = set(indexes)
    found: dict[int, dict[str, str]] = {}
    for index in range(max(indexes, default=-1) + 1):
        if index in wanted:
            found[index] = dict(values)
        if index >= len(lines):
            continue
        match = _ASSIGNMENT.match(lines[index].text)
        if match:
            try:
                words = shlex.split(match.group(2))
            except ValueError:
                continue
            if len(words) == 1:
                values[match.group(1)] = words[0]
    return found


def expand_variables(text: str, values: Mapping[str, str], unknown: Callable[[str], str]) -> str:
    """``$NAME`` / ``${NAME}`` replaced from ``values``; ``unknown('$NAME')`` for the others, and
    for every variable once the line would grow past ``MAX_VALUE_CHARS``."""
    grown = [len(text)]

    def replace(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        value = values.get(name)
        if value is not None and grown[0] + len(value) <= MAX_VALUE_CHARS:
            grown[0] += len(value)
            return value
        return unknown(f"${name}")

    return _VARIABLE.sub(replace, text)


@dataclass(frozen=True)
class Call:
    """One invocation: the script path and its arguments (shell operators excluded)."""

    script: str
    args: tuple[str, ...]


def _words(text: str) -> tuple[str, ...]:
    """Shell words of a line (short lines cached: a reusable workflow's lines recur once per
    caller; a long one would hold its memory)."""
    return _short_words(text) if len(text) <= _CACHED_CHARS else _split_words(text)


_CACHED_CHARS = 4096


@functools.lru_cache(maxsize=4096)
def _short_words(text: str) -> tuple[str, ...]:
    return _split_words(text)


def _split_words(text: str) -> tuple[str, ...]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return tuple(lexer)
    except ValueError:  # unbalanced quotes: fall back to whitespace
        return tuple(text.split())


def _is_operator(word: str) -> bool:
    return bool(word) and all(ch in "();<>|&" for ch in word)


def find_calls(text: str) -> Iterator[Call]:
    """Every ``...run_suite.py ARGS`` in a command line, also inside ``bash -c "..."`` strings."""
    words = _words(text)
    for index, word in enumerate(words):
        if word.endswith("run_suite.py") and " " not in word:
            args = []
            for arg in words[index + 1 :]:
                if _is_operator(arg):
                    break
                args.append(arg)
            yield Call(word, tuple(args))
        elif "run_suite.py" in word and " " in word:
            yield from find_calls(word)


@dataclass(frozen=True)
class Flags:
    """What selects the files: the four flags the comparison needs (raw strings)."""

    hw: str | None
    suite: str | None
    nightly: bool
    size: str | None
    unknown_flags: tuple[str, ...]
    other_words: tuple[str, ...]


def read_flags(args: tuple[str, ...]) -> Flags:
    values: dict[str, str] = {}
    nightly, unknown, others = False, [], []
    items = list(args)
    while items:
        word = items.pop(0)
        name, _, inline = word.partition("=")
        if name in _VALUE_FLAGS | _OTHER_VALUE_FLAGS:
            value = inline if "=" in word else (items.pop(0) if items else "")
            if name in _VALUE_FLAGS:
                values[name] = value
        elif word == "--nightly":
            nightly = True
        elif word in ("--continue-on-error", "--enable-retry", "--timeout-from-est-time"):
            continue
        elif word.startswith("-"):
            unknown.append(word)
        else:
            others.append(word)
    return Flags(
        hw=values.get("--hw"),
        suite=values.get("--suite"),
        nightly=nightly,
        size=values.get("--auto-partition-size"),
        unknown_flags=tuple(unknown),
        other_words=tuple(others),
    )
