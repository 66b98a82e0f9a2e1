"""Test-case names in pytest's node-id form: ``path::Class::test_name[param]``.

One spelling names a case everywhere a person or a report gives one: ``--tests``, the catalog's
``[tool.ci-runner.quarantine]`` keys and the cases read back from a JUnit report. The path is the
file's POSIX path from the repository root; the rest is the class chain (if any) and the test
function, whose pytest parameter id in ``[...]`` may hold any character but a line break.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

SEPARATOR = "::"
_PARAMETER = re.compile(r"\[[^\n\r]*\]\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class NodeIdError(ValueError):
    """A node id is malformed; the message says what was expected."""


@dataclass(frozen=True, order=True)
class NodeId:
    """A parsed node id: the file and the case inside it (``""`` for the whole file)."""

    path: str
    case: str = ""

    def __str__(self) -> str:
        return f"{self.path}{SEPARATOR}{self.case}" if self.case else self.path


def check_relative_path(text: str, what: str, shown: str | None = None) -> str:
    """``text`` as a POSIX path from the root: relative, no ``..``, ending in ``.py``;
    ``shown``: how the message spells the input (default ``text``)."""
    path = PurePosixPath(text)
    if (
        not text.strip()
        or path.is_absolute()
        or ".." in path.parts
        or _CONTROL.search(text)
        or not text.endswith(".py")
    ):
        raise NodeIdError(
            f"{what} {(text if shown is None else shown)[:120]!r}: expected a .py file's path from the repository root, such "
            "as registered/test_x.py (no leading /, no ..)"
        )
    return path.as_posix()


def check_case(case: str, what: str) -> str:
    """The case part of a node id: ``name``, ``Class::name`` or either with ``[param]``."""
    head = _PARAMETER.sub("", case)
    parts = head.split(SEPARATOR)
    if not case or _CONTROL.search(head) or not all(part.isidentifier() for part in parts):
        raise NodeIdError(
            f"{what} case {case[:120]!r}: expected test_name, Class::test_name or either with a "
            "[param] id, as pytest names cases"
        )
    return case


def parse_node_id(text: str, what: str = "node id", case_required: bool = True) -> NodeId:
    """Parse ``path::case``; with ``case_required=False`` a bare path names the whole file."""
    path, separator, case = text.partition(SEPARATOR)
    if not separator:
        if case_required:
            raise NodeIdError(
                f"{what} {text[:120]!r}: expected FILE::CASE, e.g. "
                "registered/test_x.py::test_a or registered/test_x.py::TestX::test_a[1]"
            )
        return NodeId(check_relative_path(path, what))
    return NodeId(check_relative_path(path, what), check_case(case, f"{what} {text[:120]!r}:"))


def case_node_id(path: str, classname: str, name: str) -> str:
    """The node id of a JUnit case of the file ``path`` (its pytest ``classname`` and ``name``).

    pytest writes ``classname`` as the node id's module path with dots (relative to its own
    rootdir, which may lie below the repository root) followed by the class chain; the longest
    trailing part of ``path``'s module path that starts ``classname`` is the module, and what
    follows it is the class chain. A case whose classname does not start with the module (a
    non-pytest report) keeps its whole classname as the class chain.
    """
    module_parts = path.removesuffix(".py").split("/")
    rest = classname
    for start in range(len(module_parts)):
        module = ".".join(module_parts[start:])
        if classname == module or classname.startswith(module + "."):
            rest = classname[len(module) + 1 :]
            break
    classes = [part for part in rest.split(".") if part] if rest else []
    return SEPARATOR.join([path, *classes, name])


def is_whole_file_case(path: str, classname: str, name: str) -> bool:
    """True for the JUnit case the runner writes for a whole file (a script, a crash or a
    timeout no case was named for): named after the file, its classname the dotted path."""
    return name == path.rsplit("/", 1)[-1] and classname == path.removesuffix(".py").replace(
        "/", "."
    )


def covers(pattern: NodeId, node_id: str) -> bool:
    """True when ``pattern`` names the case ``node_id``, a class holding it, every parameter
    of it (``test_a`` covers ``test_a[1]``) or its whole file."""
    text = str(pattern)
    return node_id == text or node_id.startswith((text + SEPARATOR, text + "["))
