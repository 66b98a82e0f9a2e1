"""Every name a Python file can read, in one walk: what :mod:`.binding` needs to rule a file out.

A module-level change that only binds names is seen only by code that reads one of them
(:mod:`.binding`). :class:`Identifiers` is the union of what every statement and function block
of a file reads (as :func:`~ci_runner.impact.module_facts.module_facts` reads them: names,
attributes, imported names, identifiers in string constants), and which blocks read names
dynamically; a file whose identifiers meet no reached name is not looked at further, and
:class:`~ci_runner.impact.module_facts.ModuleFacts` (statement by statement, a much slower read)
is made only for the files that do.
"""

from __future__ import annotations

import ast
from collections.abc import Collection
from dataclasses import dataclass, field

from ci_runner.impact.blocks import MODULE
from ci_runner.impact.module_facts import (
    _DATACLASS_NAMES,
    DYNAMIC_ATTRS,
    DYNAMIC_NAMES,
    MAX_STRING,
    NAME_ARGUMENT,
    _reads,
)

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Identifiers:
    """What any code of one file reads: ``names`` as its own module's names, ``attrs`` as
    attributes, imported names or string identifiers; ``dynamic``: each block (a function's key,
    or :data:`~ci_runner.impact.blocks.MODULE` for module-level code) that reads names
    dynamically, with what and where; ``star``: a top-level star import. ``module_names`` and
    ``module_attrs``: the part of ``names`` and ``attrs`` that module-level code reads (what
    importing the file runs), the only code :meth:`.binding.ModuleLevel.close` follows."""

    names: Collection[str] = frozenset()  # a cache hands back its sorted lists as they are
    attrs: Collection[str] = frozenset()
    dynamic: dict[str, str] = field(default_factory=dict)
    star: bool = False
    module_names: Collection[str] = frozenset()
    module_attrs: Collection[str] = frozenset()


def identifiers(source: str | bytes) -> Identifiers | None:
    """The identifiers of ``source``; None when it does not parse."""
    try:
        return tree_identifiers(ast.parse(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


class _State:
    """A traversal-stack entry that sets the block and the function-name prefix in effect."""

    __slots__ = ("owner", "prefix")

    def __init__(self, owner: str, prefix: str) -> None:
        self.owner = owner
        self.prefix = prefix


_SKIPPED = frozenset({"ctx", "type_comment"})
_FIELDS: dict[type, tuple[str, ...]] = {}  # node class -> its child fields, last first


def _fields(kind: type) -> tuple[str, ...]:
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _FIELDS[kind] = tuple(f for f in reversed(kind._fields) if f not in _SKIPPED)
    return fields


def tree_identifiers(tree: ast.Module) -> Identifiers:
    """:func:`identifiers` of a parsed file, in one pass in source order. Function blocks are
    keyed as :func:`~ci_runner.impact.blocks.function_nodes` keys them (``#2`` for a repeated
    name); a function's decorators, arguments and return annotation belong to the block that
    holds its ``def``, as :func:`~ci_runner.impact.module_facts._reads` counts them."""
    module_names: set[str] = set()  # read by module-level code
    module_attrs: set[str] = set()
    body_names: set[str] = set()  # read only inside functions
    body_attrs: set[str] = set()
    names, attrs = module_names, module_attrs  # the sets of the block being walked
    dynamic_blocks: dict[str, ast.AST | None] = {}  # block key -> its function (None: module)
    counts: dict[str, int] = {}
    functions: dict[str, ast.AST | None] = {MODULE: None}
    owner, prefix = MODULE, ""
    stack: list = tree.body[::-1]
    while stack:
        node = stack.pop()
        kind = node.__class__
        if kind is ast.Name:
            if node.ctx.__class__ is ast.Load:
                names.add(node.id)
                if node.id in DYNAMIC_NAMES:
                    dynamic_blocks.setdefault(owner, functions[owner])
            continue
        if kind is ast.Attribute:
            attrs.add(node.attr)
            if node.attr in DYNAMIC_ATTRS:
                dynamic_blocks.setdefault(owner, functions[owner])
            stack.append(node.value)
            continue
        if kind is ast.Constant:
            value = node.value
            if value.__class__ is str and len(value) <= MAX_STRING:
                attrs.update(p for p in value.split(".") if p.isidentifier())
            continue
        if kind is _State:
            owner, prefix = node.owner, node.prefix
            names, attrs = (
                (module_names, module_attrs) if owner == MODULE else (body_names, body_attrs)
            )
            continue
        if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            name = prefix + node.name
            counts[name] = counts.get(name, 0) + 1
            key = name if counts[name] == 1 else f"{name}#{counts[name]}"
            functions[key] = node
            stack.append(_State(owner, prefix))
            stack += node.body[::-1]
            stack.append(_State(key, key + "."))
            outer = [*node.decorator_list, node.args, *getattr(node, "type_params", ())]
            if node.returns is not None:
                outer.append(node.returns)
            stack += outer  # read in the enclosing block, before the body
            continue
        if kind is ast.ClassDef:
            if owner == MODULE and node.decorator_list:
                names.update(_DATACLASS_NAMES)  # a dataclass reads the names annotations spell
            stack.append(_State(owner, prefix))
            stack += node.body[::-1]
            stack.append(_State(owner, f"{prefix}{node.name}."))
            stack += [*node.decorator_list, *node.bases, *node.keywords]
            stack += getattr(node, "type_params", ())
            continue
        if kind is ast.Import:
            attrs.update(p for a in node.names for p in a.name.split(".")[1:])
            continue
        if kind is ast.ImportFrom:
            parts = [p for p in (node.module or "").split(".") if p]
            attrs.update(parts if node.level else parts[1:])
            attrs.update(a.name for a in node.names if a.name != "*")
            if any(a.name == "*" for a in node.names):
                dynamic_blocks.setdefault(owner, functions[owner])
            continue
        if kind is ast.Call:
            func, args = node.func, node.args
            if (
                func.__class__ is ast.Name
                and func.id in NAME_ARGUMENT
                and not (len(args) >= 2 and isinstance(args[1], ast.Constant))
            ):
                dynamic_blocks.setdefault(owner, functions[owner])
        for field_name in _fields(kind):
            value = getattr(node, field_name, None)
            if value is None:
                continue
            if value.__class__ is list:
                stack += [v for v in value[::-1] if v is not None and v.__class__ is not str]
            elif isinstance(value, ast.AST):
                stack.append(value)
    dynamic = {
        key: _reads(function, own=function).dynamic if function is not None else "module level"
        for key, function in dynamic_blocks.items()
    }
    star = any(
        isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)
        for node in tree.body
    )
    return Identifiers(
        frozenset(module_names | body_names),
        frozenset(module_attrs | body_attrs),
        dynamic,
        star,
        frozenset(module_names),
        frozenset(module_attrs),
    )
