"""How every command line of the project reports bad input: ``error: ...`` on stderr, exit 2."""

from __future__ import annotations

import sys

from ci_runner.exit_codes import EXIT_USAGE


def usage_error(*messages: object, prog: str | None = None) -> int:
    """Print each message as one ``[prog: ]error: <message>`` line to stderr; return exit code 2."""
    prefix = f"{prog}: error: " if prog else "error: "
    for message in messages:
        print(f"{prefix}{message}", file=sys.stderr, flush=True)
    return EXIT_USAGE
