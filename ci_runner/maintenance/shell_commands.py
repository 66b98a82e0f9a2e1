"""Shell commands of a workflow step: simple commands, and which of them launch
the runner (``run_suite.py``, ``run-suite``, ``python -m ci_runner.cli``), for
:mod:`ci_runner.maintenance.workflow_coverage`.

A command launches the runner only when it *is* the runner: the script or console script itself,
or a python interpreter (after its own options) given the script or ``-m`` a module, possibly
behind ``env``, ``exec``, ``time``, ``nohup``, ``timeout DURATION`` or ``uv run``. ``echo
run_suite.py --suite s`` runs nothing, and neither does ``python -m ci_runner.cli.command`` (a
module without a ``__main__`` block).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

RUN_SUITE_SCRIPTS = frozenset({"run_suite.py", "run-suite"})
# The modules that run the runner with ``python -m`` (each has a __main__; the tests run them).
RUN_SUITE_MODULES = ("ci_runner.cli", "ci_runner")
PYTHON = re.compile(r"python(\d+(\.\d+)*)?")
PYTHON_OPTIONS_WITH_VALUE = frozenset({"-X", "-W"})
SEPARATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", "{", "}"})


def simple_commands(line: str) -> Iterator[list[str]]:
    """Simple commands of one shell line (split at ; && || | & and parentheses)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    command: list[str] = []
    for token in lexer:
        if token in SEPARATORS or set(token) <= set(";&|(){}"):
            if command:
                yield command
            command = []
        else:
            command.append(token)
    if command:
        yield command


def strip_assignments(command: list[str]) -> list[str]:
    index = 0
    while index < len(command) and re.fullmatch(r"\w+=.*", command[index]):
        index += 1
    return command[index:]


def launched(command: list[str]) -> list[str]:
    """``command`` without the wrappers that launch another command (``env A=1``, ``exec``,
    ``time``, ``nohup``, ``timeout 30m``, ``uv run``)."""
    while command:
        head = command[0].rsplit("/", 1)[-1]
        if head == "env":
            command = strip_assignments(_without_options(command[1:], {"-u", "-C", "-S"}))
        elif head in ("exec", "time", "nohup"):
            command = _without_options(command[1:], set())
        elif head == "timeout":
            command = _without_options(command[1:], {"-k", "-s"})[1:]  # then the duration
        elif head == "uv" and command[1:2] == ["run"]:
            command = command[2:]
        else:
            return command
    return command


def _without_options(words: list[str], taking_a_value: set[str]) -> list[str]:
    """``words`` without the leading options of a wrapper (``-k 5``, ``--signal=KILL``)."""
    index = 0
    while index < len(words) and words[index].startswith("-"):
        index += 2 if words[index] in taking_a_value else 1
    return words[index:]


def run_suite_launch(command: list[str]) -> tuple[int, str] | None:
    """(index of the first argument, how it was launched) when ``command`` itself launches
    run_suite or a ``ci_runner`` module, else None; an ``echo run_suite.py`` runs nothing."""
    command = launched(command)
    if not command:
        return None
    head = command[0].rsplit("/", 1)[-1]
    if head in RUN_SUITE_SCRIPTS:
        return 1, head
    if not PYTHON.fullmatch(head):
        return None
    index = 1
    while index < len(command) and command[index].startswith("-") and command[index] != "-m":
        index += 2 if command[index] in PYTHON_OPTIONS_WITH_VALUE else 1
    if index >= len(command) or command[index] == "-c":
        return None
    if command[index] == "-m" and index + 1 < len(command):
        module = command[index + 1]
        return (index + 2, f"-m {module}") if module.split(".")[0] == "ci_runner" else None
    if command[index].rsplit("/", 1)[-1] == "run_suite.py":
        return index + 1, "run_suite.py"
    return None


def option_values(args: list[str], name: str) -> list[str]:
    values: list[str] = []
    for index, arg in enumerate(args):
        if arg == name and index + 1 < len(args):
            values.append(args[index + 1])
        elif arg.startswith(name + "="):
            values.append(arg.split("=", 1)[1])
    return values
