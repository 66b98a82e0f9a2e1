"""How every command line of the project writes its output and reports bad input: any text
prints, a reader that closes the pipe (``| head``) ends the command quietly, bad input is
``error: ...`` on stderr, exit 2; and the argparse actions that make a repeated option an error
(or, for a list, a merge) instead of a silent override."""

from __future__ import annotations

import argparse
import contextlib
import errno
import math
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TextIO

from ci_runner.exit_codes import EXIT_OUTPUT_CLOSED, EXIT_USAGE


class OutputClosed(SystemExit):
    """stdout or stderr was closed by its reader: the command ends with
    :data:`~ci_runner.exit_codes.EXIT_OUTPUT_CLOSED`, as a program killed by SIGPIPE does, and
    no traceback (a ``SystemExit``: ``except Exception`` does not catch it, ``finally`` runs)."""


_closed_callbacks: list[Callable[[], None]] = []


class _ClosableOutput:
    """A text stream whose reader may go away: the first write or flush that finds the pipe
    closed points the file descriptor at /dev/null (so nothing written later, or flushed at
    exit, fails), runs the callbacks of :func:`on_output_closed` and, in the main thread when
    none is registered, raises :class:`OutputClosed`; every later write is dropped."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.reader_gone = False

    def _reader_left(self) -> None:
        self.reader_gone = True
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        callbacks = list(_closed_callbacks)
        for callback in callbacks:
            callback()
        if not callbacks and threading.current_thread() is threading.main_thread():
            raise OutputClosed(EXIT_OUTPUT_CLOSED)

    def _guarded(self, operation: Callable[[], Any], default: Any) -> Any:
        if self.reader_gone:
            return default
        try:
            return operation()
        except OSError as exc:
            if exc.errno not in (errno.EPIPE, errno.ECONNRESET):
                raise
        self._reader_left()
        return default

    def write(self, text: str) -> int:
        return self._guarded(lambda: self._stream.write(text), len(text))

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._guarded(self._stream.flush, None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def robust_output() -> None:
    """Called first by every entry point: stdout and stderr print any text (a character their
    encoding lacks, from an ASCII terminal or a non-UTF-8 file name, is written as a backslash
    escape), and a reader that closes them ends the command quietly (:class:`OutputClosed`)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None or isinstance(stream, _ClosableOutput):
            continue
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")
        setattr(sys, name, _ClosableOutput(stream))


@contextlib.contextmanager
def on_output_closed(callback: Callable[[], None]) -> Iterator[None]:
    """While inside, a closed stdout or stderr calls ``callback`` (from the thread that wrote)
    instead of ending the command: a shard that runs files stops them as on a signal, writes
    its reports and exits :data:`~ci_runner.exit_codes.EXIT_OUTPUT_CLOSED` itself."""
    _closed_callbacks.append(callback)
    try:
        streams = (sys.stdout, sys.stderr)
        if any(isinstance(s, _ClosableOutput) and s.reader_gone for s in streams):
            callback()
        yield
    finally:
        _closed_callbacks.remove(callback)


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


class ExtendOnRepeat(_RepeatAware):
    """A list option (``nargs="+"``) that may be repeated: ``--files a b --files c`` is
    ``[a, b, c]``."""

    def repeated(
        self, parser: argparse.ArgumentParser, option: str, previous: object, value: object
    ) -> object:
        return [*previous, *value]  # type: ignore[misc]


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
