"""The one reader of marker calls: every ``register_<backend>_ci`` call of a module, however bound.

A call is a marker call when what it calls is

* a marker's own name: ``register_cuda_ci(...)`` (imported by name, or by ``*``);
* an import alias, from any module: ``from ci_runner import register_cuda_ci as reg``;
* a name bound at module level from an attribute: ``reg = load("ci_register").register_cuda_ci``;
* an attribute: ``ci_runner.register_cuda_ci(...)``, ``cr.markers.register_cuda_ci(...)``.

Markers are the catalog's (:class:`~ci_runner.catalog.syntax.RegistrationSyntax`) plus any other
``register_<x>_ci`` name, read as an unknown marker (``known=False``). Every call is returned,
wherever it sits, with its arguments bound to the marker signature and the suite it names (None
when that cannot be read without running the file); so is every marker named without being
called. Discovery, ``--scoped-validation``, the est_time updater, ``init``'s survey and the lints
all read marker calls here, so they agree on what a file registers.
"""

from __future__ import annotations

import ast
import bisect
import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ci_runner.catalog import DEFAULT_SYNTAX, RegistrationSyntax
from ci_runner.collect.source_text import identifier_text

_MARKER_PATTERN = r"register_\w+_ci"
_MARKER_NAME = re.compile(r"register_(\w+)_ci\Z")


@dataclass(frozen=True)
class BoundArguments:
    """A marker call's arguments bound to the signature, and what could not be bound."""

    values: Mapping[str, ast.expr]  # argument name -> its value node
    keywords: Mapping[str, ast.keyword]  # the keyword node of each value given by keyword
    unpacked: bool  # a ``*args`` or ``**kwargs`` hides some arguments
    issues: tuple[tuple[ast.AST, str], ...]  # (node, message): starred, unknown, too many, twice


@dataclass(frozen=True)
class MarkerCall:
    """One call of a marker, anywhere in the module."""

    marker: str  # the marker function's own name, e.g. "register_cuda_ci"
    known: bool  # a marker of the catalog (else only a ``register_<x>_ci`` name)
    call: ast.Call
    statement: ast.stmt  # the top-level statement that holds the call
    arguments: BoundArguments
    suite: str | None  # the suite named (literal or composed); None: unknown without running

    @property
    def is_registration(self) -> bool:
        """A module-level expression statement of its own: what the runner collects."""
        return isinstance(self.statement, ast.Expr) and self.statement.value is self.call


@dataclass(frozen=True)
class MarkerReference:
    """A marker named without being called (a wrapper, an indirect call, a stray name)."""

    marker: str
    known: bool
    node: ast.expr
    statement: ast.stmt


@dataclass(frozen=True)
class MarkerUses:
    """Every marker call and uncalled marker reference of one module, in source order."""

    calls: tuple[MarkerCall, ...]
    references: tuple[MarkerReference, ...]

    @property
    def registrations(self) -> list[MarkerCall]:
        """The calls that are registrations of a catalog marker."""
        return [c for c in self.calls if c.known and c.is_registration]


SHOWN_CHARS = 80  # an argument's source text in a message is cut to this length


def shown(node: ast.AST) -> str:
    """The source text of ``node`` for a message: at most ``SHOWN_CHARS`` characters."""
    try:
        text = ast.unparse(node)
    except RecursionError:
        return "<an expression nested too deeply to show>"
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def backend_of_marker_name(name: str) -> str:
    """``register_mlx_ci`` -> ``mlx`` (the naming convention of markers)."""
    match = _MARKER_NAME.match(name)
    return match.group(1) if match else name


def read_marker_calls(
    tree: ast.Module,
    syntax: RegistrationSyntax = DEFAULT_SYNTAX,
    source: str | bytes | None = None,
) -> MarkerUses:
    """Every marker call and reference in ``tree`` (see the module docstring).

    With ``source``, only the top-level statements whose lines mention a marker or a name bound
    to one are walked; the result is the same, just faster on large trees.
    """
    markers = syntax.markers
    if source is not None and _has_bare_carriage_return(source):
        source = None  # line numbers would not match "\n" counting: walk everything
    statements = tree.body if source is None else _statements_mentioning(tree, source, markers)
    names, sources = _bindings(statements, markers)
    new_words = _aliases(names, markers)
    if source is not None and new_words:
        statements = _statements_mentioning(tree, source, markers, new_words)
    calls: list[MarkerCall] = []
    references: list[MarkerReference] = []
    for stmt in statements:
        nodes = iter_nodes(stmt)
        callees: set[int] = set()
        for node in nodes:
            if isinstance(node, ast.Call) and (marker := _marker_of(node.func, names, markers)):
                callees.add(id(node.func))
                bound = bind_arguments(node, marker, syntax)
                known = marker in markers
                suite = _suite(bound, syntax)
                calls.append(MarkerCall(marker, known, node, stmt, bound, suite))
        for node in nodes:
            if id(node) in callees or id(node) in sources:
                continue
            if isinstance(node, ast.expr) and (marker := _marker_of(node, names, markers)):
                references.append(MarkerReference(marker, marker in markers, node, stmt))
    calls.sort(key=lambda c: (c.call.lineno, c.call.col_offset))
    references.sort(key=lambda r: (r.node.lineno, r.node.col_offset))
    return MarkerUses(tuple(calls), tuple(references))


def bind_arguments(call: ast.Call, marker: str, syntax: RegistrationSyntax) -> BoundArguments:
    """Positional arguments in the marker's order, then keywords; what cannot be bound is an
    issue (``*``/``**`` unpacking, too many positionals, unknown keywords, one given twice)."""
    positional = syntax.positional
    accepted = syntax.arguments
    values: dict[str, ast.expr] = {}
    keywords: dict[str, ast.keyword] = {}
    issues: list[tuple[ast.AST, str]] = []
    unpacked = False
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            issues.append((arg, f"starred argument {shown(arg)} is not supported in {marker}()"))
            unpacked = True
        elif index >= len(positional):
            issues.append(
                (
                    arg,
                    f"too many positional arguments in {marker}(): at most {len(positional)} "
                    f"({', '.join(positional)})",
                )
            )
            break
        else:
            values[positional[index]] = arg
    for keyword in call.keywords:
        if keyword.arg is None:
            issues.append((keyword, f"**{shown(keyword.value)} is not supported in {marker}()"))
            unpacked = True
        elif keyword.arg not in accepted:
            close = difflib.get_close_matches(keyword.arg, accepted, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            issues.append(
                (
                    keyword,
                    f"unknown argument {keyword.arg!r} in {marker}(); expected "
                    f"{', '.join(accepted)}{hint}",
                )
            )
        elif keyword.arg in values:
            issues.append(
                (
                    keyword,
                    f"argument {keyword.arg!r} given twice in {marker}() (positionally and by "
                    "keyword)",
                )
            )
        else:
            values[keyword.arg] = keyword.value
            keywords[keyword.arg] = keyword
    return BoundArguments(values, keywords, unpacked, tuple(issues))


def _suite(bound: BoundArguments, syntax: RegistrationSyntax) -> str | None:
    """The literal ``suite=``, or the name the catalog's suite-template composes; else None."""
    if bound.unpacked:
        return None
    suite = bound.values.get("suite")
    if suite is not None:
        return _string(suite)
    template = syntax.suite_template
    if template is None:
        return None
    parts = {name: _string(bound.values.get(name)) for name in template.fields}
    if any(value is None for value in parts.values()):
        return None
    return template.compose(parts)  # type: ignore[arg-type]


def _string(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _is_marker_name(name: str, markers: Mapping[str, str]) -> bool:
    return name in markers or _MARKER_NAME.match(name) is not None


def _marker_of(node: ast.AST, names: Mapping[str, str], markers: Mapping[str, str]) -> str | None:
    """The marker that ``node`` names (a loaded name or attribute), or None."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        if node.id in names:
            return names[node.id]
        return node.id if _is_marker_name(node.id, markers) else None
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Load)
        and _is_marker_name(node.attr, markers)
    ):
        return node.attr
    return None


def _bindings(
    statements: list[ast.stmt], markers: Mapping[str, str]
) -> tuple[dict[str, str], set[int]]:
    """Local name -> marker, from imports anywhere and module-level ``name = <x>.marker``; and
    the ids of those attribute nodes (a binding, not a use of the marker)."""
    names: dict[str, str] = {}
    sources: set[int] = set()
    for stmt in statements:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Attribute)
            and _is_marker_name(stmt.value.attr, markers)
        ):
            names[stmt.targets[0].id] = stmt.value.attr
            sources.add(id(stmt.value))
        if isinstance(stmt, ast.Expr | ast.Assign | ast.AnnAssign | ast.AugAssign | ast.Import):
            continue  # cannot hold a ``from ... import``
        for node in iter_nodes(stmt):
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if _is_marker_name(alias.name, markers):
                        names[alias.asname or alias.name] = alias.name
    return names, sources


def _has_bare_carriage_return(source: str | bytes) -> bool:
    if isinstance(source, bytes):
        return source.count(b"\r") != source.count(b"\r\n")
    return source.count("\r") != source.count("\r\n")


def _aliases(names: Mapping[str, str], markers: Mapping[str, str]) -> list[str]:
    """The bound names that are no marker name themselves (``reg`` of ``... as reg``)."""
    return [name for name in names if not _is_marker_name(name, markers)]


def marker_aliases(statements: list[ast.stmt], markers: Mapping[str, str]) -> list[str]:
    """The names ``statements`` (those mentioning a marker) bind to a marker under another name:
    the words :func:`read_marker_calls` also looks for."""
    return _aliases(_bindings(statements, markers)[0], markers)


def mention_pattern(markers: Mapping[str, str], names: list[str] | None = None) -> str:
    """The regular expression of a textual marker mention: any ``register_<x>_ci``, the
    catalog's other marker names and ``names`` (aliases), as whole words."""
    extra = [name for name in markers if not _MARKER_NAME.match(name)]
    words = [_MARKER_PATTERN, *(rf"\b{re.escape(n)}\b" for n in [*extra, *(names or [])])]
    return "|".join(words)


def _statements_mentioning(
    tree: ast.Module,
    source: str | bytes,
    markers: Mapping[str, str],
    names: list[str] | None = None,
) -> list[ast.stmt]:
    """Top-level statements whose line span contains a marker name or a bound name, in order
    (searched in the text as Python reads its identifiers: NFKC-normalised)."""
    pattern = mention_pattern(markers, names)
    source = identifier_text(source)
    if isinstance(source, bytes):
        matches = re.finditer(pattern.encode(), source)
        newline: str | bytes = b"\n"
    else:
        matches = re.finditer(pattern, source)
        newline = "\n"
    lines: list[int] = []
    line, position = 1, 0
    for match in matches:
        line += source.count(newline, position, match.start())  # type: ignore[arg-type]
        position = match.start()
        lines.append(line)
    if not lines:
        return []
    selected = []
    for stmt in tree.body:
        end = stmt.end_lineno or stmt.lineno
        index = bisect.bisect_left(lines, stmt.lineno)
        if index < len(lines) and lines[index] <= end:
            selected.append(stmt)
    return selected


def iter_nodes(root: ast.AST) -> list[ast.AST]:
    """Every node under ``root`` (included), like :func:`ast.walk` but faster."""
    out: list[ast.AST] = []
    stack = [root]
    while stack:
        node = stack.pop()
        out.append(node)
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                stack.extend(item for item in value if isinstance(item, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append(value)
    return out
