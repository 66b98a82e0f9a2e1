"""Every flag and subcommand a command-line tool's ``--help`` prints must appear in the docs.

A helper of ``test_docs.py`` (not a test file). ``cli_help(spec)`` runs the tool with
``--help`` in a subprocess whose ``argparse.ArgumentParser.print_help`` is replaced by a dump of
the parser being printed (its option strings, argparse subcommands and help text), so the flags
come from the very parser ``--help`` shows, not from a list kept by hand. A subcommand that is
dispatched before argparse is found where the help text points to it (``prog init --help``) and
introspected the same way. ``undocumented(...)`` returns one message per flag or subcommand that
no document mentions literally.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MARK = "@@docs-cli-help@@"

# Runs in the subprocess: argv = [this, "path" | "module", target, *arguments before --help].
_INTROSPECT = f"""
import argparse, json, runpy, sys

def describe(parser):
    out = {{"prog": parser.prog, "options": [], "subcommands": {{}}, "text": parser.format_help()}}
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out["subcommands"][name] = describe(sub)
        elif action.option_strings:
            out["options"].append(list(action.option_strings))
    return out

def print_help(self, file=None):
    sys.stdout.write({MARK!r} + json.dumps(describe(self)) + "\\n")
    sys.stdout.flush()

argparse.ArgumentParser.print_help = print_help
kind, target, prefix = sys.argv[1], sys.argv[2], sys.argv[3:]
sys.argv = [target, *prefix, "--help"]
if kind == "module":
    runpy.run_module(target, run_name="__main__", alter_sys=True)
else:
    sys.path.insert(0, str(__import__("pathlib").Path(target).resolve().parent))
    runpy.run_path(target, run_name="__main__")
"""


@dataclass(frozen=True)
class CliSpec:
    """A tool: how the docs spell it, and how to start it (``path`` of a script or ``module``)."""

    label: str  # e.g. "python run_suite.py"
    kind: str  # "path" or "module"
    target: str  # "run_suite.py" or "jit_kernel"
    names: tuple[str, ...]  # words that may precede a subcommand in the docs: run_suite.py init


@dataclass(frozen=True)
class CliHelp:
    """What one ``--help`` shows: option strings per flag, and subcommands (recursively)."""

    prog: str
    options: tuple[tuple[str, ...], ...]
    subcommands: dict[str, CliHelp]
    text: str = ""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CliHelp:
        return cls(
            prog=data["prog"],
            options=tuple(tuple(option) for option in data["options"]),
            subcommands={k: cls.from_json(v) for k, v in data["subcommands"].items()},
            text=data.get("text", ""),
        )


def pointed_subcommands(help_: CliHelp) -> list[str]:
    """Subcommands the help text points to as ``<prog> NAME --help`` that argparse lacks."""
    prog = help_.prog.split()[-1]
    found = re.findall(rf"(?<![\w-]){re.escape(prog)}\s+([a-z][\w-]*)\s+--help", help_.text)
    return [name for name in dict.fromkeys(found) if name not in help_.subcommands]


def cli_help(
    spec: CliSpec, root: Path, timeout: float = 60, prefix: tuple[str, ...] = ()
) -> CliHelp:
    """Run ``spec`` with ``--help`` (cwd ``root``) and return the parser that help printed.

    Subcommands dispatched before argparse (see :func:`pointed_subcommands`) are added to
    ``subcommands`` with their own parsers.
    """
    proc = subprocess.run(
        [sys.executable, "-c", _INTROSPECT, spec.kind, spec.target, *prefix],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=timeout,
    )
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            help_ = CliHelp.from_json(json.loads(line[len(MARK) :]))
            for name in [] if prefix else pointed_subcommands(help_):
                help_.subcommands[name] = cli_help(spec, root, timeout, (name,))
            return help_
    shown = " ".join([spec.label, *prefix, "--help"])
    raise RuntimeError(
        f"`{shown}` printed no argparse help (exit {proc.returncode}):\n"
        f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
    )


def mentions(text: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` as a whole token (``--gpus`` is not ``--gpus-x``)."""
    return re.search(rf"(?<![\w-]){re.escape(phrase)}(?![\w-])", text) is not None


def undocumented(spec: CliSpec, help_: CliHelp, corpus: str, where: str) -> list[str]:
    """One message per flag or subcommand of ``help_`` that ``corpus`` never mentions."""
    missing: list[str] = []
    for option_strings in help_.options:
        missing.extend(
            f"`{spec.label} --help` prints {option}, but {where} never mention it: "
            "document the flag"
            for option in option_strings
            if not mentions(corpus, option)
        )
    for name, sub in help_.subcommands.items():
        spellings = [f"{word} {name}" for word in spec.names]
        if not any(mentions(corpus, spelling) for spelling in spellings):
            missing.append(
                f"`{spec.label} --help` lists the subcommand {name!r}, but {where} never "
                f"mention it (as {' or '.join(repr(s) for s in spellings)}): document it"
            )
        sub_spec = CliSpec(f"{spec.label} {name}", spec.kind, spec.target, (name,))
        missing.extend(undocumented(sub_spec, sub, corpus, where))
    return missing
