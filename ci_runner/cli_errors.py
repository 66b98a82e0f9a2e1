"""How every command line of the project reports bad input: ``error: ...`` on stderr, exit 2; and
the argparse actions that make a repeated option an error (or, for a list, a merge) instead of
a silent override."""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from collections.abc import Callable

from ci_runner.exit_codes import EXIT_USAGE


def robust_output() -> None:
    """Let stdout and stderr print any text: a character their encoding lacks (an ASCII
    terminal, a non-UTF-8 file name) is written as a backslash escape instead of raising."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")


def usage_error(*messages: object, prog: str | None = None) -> int:
    """Print each message as one ``[prog: ]error: <message>`` line to stderr; return exit code 2."""
    prefix = f"{prog}: error: " if prog else "error: "
    for message in messages:
        print(f"{prefix}{message}", file=sys.stderr, flush=True)
    return EXIT_USAGE


class _RepeatAware(argparse.Action):
    """An option that knows whether it was given before: :meth:`repeated` decides."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        given = namespace.__dict__.setdefault(_GIVEN, {})
        if self.dest in given:
            values = self.repeated(parser, str(option_string), given[self.dest], values)
        given[self.dest] = values
        setattr(namespace, self.dest, values)

    def repeated(
        self, parser: argparse.ArgumentParser, option: str, previous: object, value: object
    ) -> object:
        raise NotImplementedError


class StoreOnce(_RepeatAware):
    """An option that may be given once: a second occurrence is a usage error naming the flag
    and both values (``--hw cpu --hw cuda`` must not silently keep the last one)."""

    def repeated(
        self, parser: argparse.ArgumentParser, option: str, previous: object, value: object
    ) -> object:
        parser.error(f"{option} given twice ('{previous}', then '{value}'); give it once")


class JoinCommaLists(_RepeatAware):
    """A comma-list option that may be repeated: ``--suite a --suite b,c`` means ``a,b,c``."""

    def repeated(
        self, parser: argparse.ArgumentParser, option: str, previous: object, value: object
    ) -> object:
        return f"{previous},{value}"


_GIVEN = "_options_given"  # the namespace's record of the options seen so far


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")


def number_type(unit: str, maximum: float, minimum_exclusive: bool) -> Callable[[str], float]:
    """An argparse ``type``: a finite number of ``unit`` in [0, maximum] ((0, maximum] with
    ``minimum_exclusive``); anything else is a usage error naming the flag."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a number of {unit}, got {_shown(text)}"
            ) from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(
                f"expected a finite number of {unit}, got {_shown(text)}"
            )
        if minimum_exclusive and value <= 0:
            raise argparse.ArgumentTypeError(
                f"expected a positive number of {unit}, got {_shown(text)}"
            )
        if value < 0:
            raise argparse.ArgumentTypeError(f"expected {unit} >= 0, got {_shown(text)}")
        if value > maximum:
            raise argparse.ArgumentTypeError(
                f"expected at most {maximum:g} {unit}, got {_shown(text)}"
            )
        return value

    return parse


def whole_number_type(
    minimum: int | None = None, maximum: int | None = None
) -> Callable[[str], int]:
    """An argparse ``type``: an integer, in [minimum, maximum] when both are given."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:  # not a number, or past Python's 4,300-digit conversion limit
            raise argparse.ArgumentTypeError(
                f"expected a whole number, got {_shown(text)}"
            ) from None
        if minimum is not None and maximum is not None and not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(
                f"expected a whole number from {minimum} to {maximum}, got {_shown(text)}"
            )
        return value

    return parse
