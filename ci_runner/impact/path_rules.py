"""The catalog's path globs (``ignore``, ``run-everything``), with git's ``.gitignore`` rules.

Matching is pathspec's ``GitIgnoreSpec``: the rules users already know from ``.gitignore``
(``docs/**``, ``*.md`` at any depth, ``/run_suite.py`` at the root only, ``!keep.md`` to take a
path back, character classes), implemented and tested by a library that tracks git, not by a
hand-written translation to regular expressions.
"""

from __future__ import annotations

from functools import cache

import pathspec


class PatternError(ValueError):
    """A glob pathspec cannot compile; the message names it."""


@cache
def _spec(patterns: tuple[str, ...]) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(patterns)


def check_patterns(patterns: tuple[str, ...]) -> None:
    """Raise :class:`PatternError` naming the first pattern that does not compile."""
    for pattern in patterns:
        try:
            pathspec.GitIgnoreSpec.from_lines([pattern])
        except (ValueError, TypeError) as exc:  # pathspec's GitWildMatchPatternError is one
            raise PatternError(f"{pattern!r}: {exc}") from None


def matching_pattern(patterns: tuple[str, ...], path: str) -> str | None:
    """The pattern that decides that ``path`` (root-relative, POSIX) matches, or None when it
    does not match (no pattern, or a later ``!pattern`` takes it back)."""
    if not patterns:
        return None
    result = _spec(patterns).check_file(path)
    if not result.include or result.index is None:
        return None
    return patterns[result.index]
