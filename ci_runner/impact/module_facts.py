"""What a Python file's module-level code binds and reads, statement by statement, and which
names each function block reads.

Module-level code (:data:`~ci_runner.impact.blocks.MODULE`) is cut into statements: the
top-level statements, and the statements of each class body (a class statement itself is its
header: name, bases, keywords, decorators). A statement's digest is its position-free dump with
function bodies left out, as :mod:`.blocks` hashes blocks, so an edit is the statements present on
one side and not the other.

Each statement says what it binds, what it reads, and whether running it can do more than bind
names (:attr:`Statement.effect`): a call, a decorator, a subscript, an ``if`` or ``try`` block, a
star import, a module-level ``__all__`` or ``__getattr__`` are effects this analysis cannot bound.
What it cannot decide from the statement alone (a name that must already be bound, an import
that must succeed, a base class that must run no hook) is listed for :mod:`.binding` to prove.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
from dataclasses import dataclass, field
from functools import cached_property

from ci_runner.impact.blocks import function_nodes, stub_dump
from ci_runner.impact.parsed import parse

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Reading these reads names that no source text spells: the namespace of a module or object.
DYNAMIC_NAMES = frozenset(
    {"globals", "vars", "locals", "dir", "__import__", "eval", "exec", "inspect", "importlib",
     "attrgetter", "methodcaller", "getmembers", "import_module"}
)  # fmt: skip
DYNAMIC_ATTRS = frozenset({"__dict__", "getmembers", "import_module", "__getattribute__"})
NAME_ARGUMENT = frozenset({"getattr", "hasattr", "setattr", "delattr"})
BUILTIN_DECORATORS = frozenset({"staticmethod", "classmethod", "property"})
BUILTINS = frozenset(dir(builtins))
MAX_STRING = 300  # longer string constants name no attribute


@dataclass(frozen=True)
class Reads:
    """The names a piece of code reads: as names of its own module (``names``), as attributes,
    imported names or identifiers in string constants (``attrs``), or dynamically (``dynamic``:
    what, with its line; empty when none)."""

    names: frozenset[str] = frozenset()
    attrs: frozenset[str] = frozenset()
    dynamic: str = ""


@dataclass(frozen=True)
class Import:
    """An import a statement runs: ``import module`` (``names`` empty) or ``from module import
    names`` (``level``: the leading dots; ``"*"`` for a star import)."""

    module: str
    level: int = 0
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Statement:
    """One module-level statement (see the module docstring)."""

    scope: str  # "" for the module's top level; "C" or "C.D" for a class body
    digest: str
    line: int
    binds: frozenset[str]
    reads: Reads
    effect: str = ""  # what else running it may do; empty when it only binds names
    needs: frozenset[str] = frozenset()  # names it evaluates when it runs
    imports: tuple[Import, ...] = ()
    bases: tuple[str, ...] = ()  # a class header: the names of its bases
    builtins: tuple[str, ...] = ()  # names that must be the builtins (staticmethod, frozenset)
    # (name, attribute path): ``name`` must be a standard module imported as ``import name``
    modules: tuple[tuple[str, str], ...] = ()
    froms: tuple[tuple[str, str], ...] = ()  # (name, module): bound by ``from module import name``
    constants: tuple[str, ...] = ()  # names that must hold immutable constants
    constant: bool = False  # ``name = <immutable constant>``
    exports: tuple[str, ...] = ()  # ``__all__``: the names it lists
    hooks: bool = False  # a class header whose body defines __init_subclass__
    is_class: bool = False  # a class header


@dataclass(frozen=True)
class ModuleFacts:
    """The statements of a file's module-level code, and each function block's reads."""

    statements: tuple[Statement, ...]
    blocks: dict[str, Reads] = field(default_factory=dict)
    star_import: bool = False  # some top-level statement is ``from x import *``

    @cached_property
    def binders(self) -> dict[str, list[int]]:
        """Each name -> the statements (any scope) that bind it, in order."""
        found: dict[str, list[int]] = {}
        for index, statement in enumerate(self.statements):
            for name in statement.binds:
                found.setdefault(name, []).append(index)
        return found

    @cached_property
    def first_star(self) -> int:
        """The index of the first top-level star import (the number of statements if none)."""
        return next(
            (
                i
                for i, s in enumerate(self.statements)
                if not s.scope and any("*" in imp.names for imp in s.imports)
            ),
            len(self.statements),
        )


def module_facts(source: str | bytes) -> ModuleFacts | None:
    """The facts of ``source``; None when it does not parse."""
    try:
        tree = parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    future = any(
        isinstance(node, ast.ImportFrom)
        and node.module == "__future__"
        and any(alias.name == "annotations" for alias in node.names)
        for node in tree.body
    )
    statements: list[Statement] = []
    _statements(tree.body, "", future, statements)
    blocks = {key: _reads(node, own=node) for key, node in function_nodes(tree)}
    star = any(
        isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)
        for node in tree.body
    )
    return ModuleFacts(tuple(statements), blocks, star)


def _statements(body: list[ast.stmt], scope: str, future: bool, out: list[Statement]) -> None:
    for node in body:
        if isinstance(node, ast.ClassDef):
            out.append(_class_header(node, scope, future))
            _statements(node.body, f"{scope}.{node.name}" if scope else node.name, future, out)
        else:
            out.append(_statement(node, scope, future))


def _class_header(node: ast.ClassDef, scope: str, future: bool) -> Statement:
    header = ast.ClassDef(
        name=node.name,
        bases=node.bases,
        keywords=node.keywords,
        body=[],
        decorator_list=node.decorator_list,
        type_params=getattr(node, "type_params", []),
    )
    effect = ""
    bases = [base.partition(".") for base in _base_names(node)]
    uses = _Uses(needs={name for name, _, _ in bases})
    # a module's attribute as a base: the module must be a standard one (binding.py checks)
    uses.modules.update((name, attribute) for name, _, attribute in bases if attribute)
    if node.decorator_list:
        effect = _dataclass_problem(node, future, uses)
    if effect:
        pass
    elif node.keywords:
        effect = "a class with keywords (a metaclass= or a hook's arguments)"
    elif getattr(node, "type_params", None):
        effect = "a generic class"
    elif not all(
        isinstance(base, ast.Name) or (isinstance(base, ast.Attribute) and _chain(base) is not None)
        for base in node.bases
    ):
        effect = "a class whose base is not a name or a module's attribute"
    elif len(node.bases) > 1:
        effect = "a class of several bases (its method order may not resolve)"
    hooks = any(
        isinstance(child, _FUNCTIONS) and child.name == "__init_subclass__" for child in node.body
    ) or any(
        isinstance(child, (ast.Assign, ast.AnnAssign))
        and "__init_subclass__" in _target_names(child)
        for child in node.body
    )
    reads = _reads(header)
    if node.decorator_list:  # a dataclass reads the names its annotations may spell
        reads = Reads(reads.names | _DATACLASS_NAMES, reads.attrs, reads.dynamic)
    return Statement(
        scope,
        _hash(header),
        node.lineno,
        frozenset({node.name}),
        reads,
        effect,
        needs=frozenset(uses.needs),
        bases=_base_names(node),
        hooks=hooks,
        is_class=True,
        modules=tuple(sorted(uses.modules)),
        froms=tuple(sorted(uses.froms)),
        constants=tuple(sorted(uses.constants)),
    )


def _base_names(node: ast.ClassDef) -> tuple[str, ...]:
    """The bases as dotted names (``Base``, ``collections.abc.Mapping``)."""
    names = []
    for base in node.bases:
        chain = _chain(base) if isinstance(base, ast.Attribute) else None
        if isinstance(base, ast.Name):
            names.append(base.id)
        elif chain is not None:
            names.append(".".join(chain))
    return tuple(names)


_DATACLASS_NAMES = frozenset({"ClassVar", "InitVar", "KW_ONLY", "typing", "dataclasses"})
_DATACLASS_FLAGS = frozenset(
    {"init", "repr", "eq", "order", "unsafe_hash", "frozen", "match_args", "kw_only", "slots",
     "weakref_slot"}
)  # fmt: skip
# Methods a dataclass refuses to overwrite with some flags, or a layout it must own.
_DATACLASS_CLASHES = frozenset(
    {"__setattr__", "__delattr__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__",
     "__slots__", "__eq__", "__init__", "__repr__", "__match_args__", "__weakref__"}
)  # fmt: skip
_FIELD_FLAGS = frozenset({"init", "repr", "hash", "compare", "kw_only"})


def _dataclass_problem(node: ast.ClassDef, future: bool, uses: _Uses) -> str:
    """Why a decorated class may do more than define a class: empty only for one
    ``@dataclass`` (``dataclasses.dataclass``, with constant flags) of no base whose fields
    provably make no error (no field without a default after one with, no mutable default,
    no method the flags clash with)."""
    unknown = "a decorated class (the decorator may do anything)"
    if len(node.decorator_list) != 1 or node.bases or node.keywords:
        return unknown
    decorator = node.decorator_list[0]
    flags: dict[str, object] = {}
    if isinstance(decorator, ast.Call):
        if decorator.args or not all(
            k.arg in _DATACLASS_FLAGS and isinstance(k.value, ast.Constant)
            for k in decorator.keywords
        ):
            return unknown
        flags = {k.arg: k.value.value for k in decorator.keywords if k.arg}  # type: ignore[attr-defined]
        decorator = decorator.func
    if isinstance(decorator, ast.Name) and decorator.id == "dataclass":
        uses.froms.add(("dataclass", "dataclasses"))
        uses.needs.add("dataclass")
    elif isinstance(decorator, ast.Attribute) and _chain(decorator) == ["dataclasses", "dataclass"]:
        uses.modules.add(("dataclasses", "dataclass"))
        uses.needs.add("dataclasses")
    else:
        return unknown
    kw_only = bool(flags.get("kw_only"))
    defaulted = False
    for child in node.body:
        bound = (
            set(_target_names(child)) if isinstance(child, (ast.Assign, ast.AnnAssign)) else set()
        )
        if isinstance(child, (*_FUNCTIONS, ast.ClassDef)):
            bound = {child.name}
        if bound & _DATACLASS_CLASHES:
            return f"a dataclass that defines {sorted(bound & _DATACLASS_CLASHES)[0]}"
        if not isinstance(child, ast.AnnAssign):
            continue
        text = ast.unparse(child.annotation)
        if "ClassVar" in text:
            continue
        if not isinstance(child.target, ast.Name):
            return unknown
        if "KW_ONLY" in text:
            kw_only = True
            continue
        default, field_kw_only, init = _field_default(child.value, uses)
        if default is None:
            return "a dataclass field whose default may be mutable or fail"
        if not init or kw_only or field_kw_only:
            continue
        if defaulted and not default:
            return f"a dataclass field without a default after one with ({child.target.id})"
        defaulted = defaulted or default
    return ""


def _field_default(value: ast.expr | None, uses: _Uses) -> tuple[bool | None, bool, bool]:
    """(has a default, or None when it may fail or be mutable; kw_only; init) of a field."""
    if value is None:
        return False, False, True
    if _immutable(value):
        return True, False, True
    if isinstance(value, ast.Name):
        uses.constants.add(value.id)
        return True, False, True
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
        return None, False, True
    if value.func.id != "field" or value.args:
        return None, False, True
    given = {k.arg: k.value for k in value.keywords}
    if None in given or {"default", "default_factory"} <= set(given):
        return None, False, True
    if "default" in given and not _immutable(given["default"]):
        return None, False, True
    flags = {k: v for k, v in given.items() if k in _FIELD_FLAGS}
    if not all(isinstance(v, ast.Constant) for v in flags.values()):
        return None, False, True
    kw_only = bool(getattr(flags.get("kw_only"), "value", False))
    init = bool(getattr(flags.get("init"), "value", True))
    return ("default" in given or "default_factory" in given), kw_only, init


def _immutable(value: ast.expr | None) -> bool:
    """A constant, a signed number or a tuple of these."""
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, (ast.USub, ast.UAdd)):
        return isinstance(value.operand, ast.Constant) and type(value.operand.value) in (
            int,
            float,
            complex,
        )
    return isinstance(value, ast.Constant) or (
        isinstance(value, ast.Tuple) and all(_immutable(e) for e in value.elts)
    )


@dataclass
class _Uses:
    """What evaluating a statement relies on (see :class:`Statement`)."""

    needs: set[str] = field(default_factory=set)
    builtins: set[str] = field(default_factory=set)
    modules: set[tuple[str, str]] = field(default_factory=set)
    froms: set[tuple[str, str]] = field(default_factory=set)
    constants: set[str] = field(default_factory=set)


def _hash(node: ast.AST) -> str:
    return hashlib.sha256(stub_dump(node).encode("utf-8", "surrogatepass")).hexdigest()


def _statement(node: ast.stmt, scope: str, future: bool) -> Statement:
    uses = _Uses()
    binds: set[str] = set()
    exports: set[str] = set()
    imports: tuple[Import, ...] = ()
    effect = ""
    if isinstance(node, ast.Pass) or (
        isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    ):
        pass
    elif isinstance(node, ast.Import):
        binds = {(a.asname or a.name.split(".")[0]) for a in node.names}
        imports = tuple(Import(a.name) for a in node.names)
    elif isinstance(node, ast.ImportFrom):
        names = tuple(a.name for a in node.names)
        imports = (Import(node.module or "", node.level, names),)
        if "*" in names:
            effect = "a star import (it binds names no source text spells)"
        binds = {a.asname or a.name for a in node.names if a.name != "*"}
    elif isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if not all(isinstance(t, ast.Name) for t in targets):
            effect = "an assignment to something other than a name"
        elif node.value is not None and not _pure(node.value, uses, in_class=bool(scope)):
            effect = "an assignment of a computed value (a call, subscript or operator)"
        elif isinstance(node, ast.AnnAssign) and not future and not _pure(node.annotation, uses):
            effect = "an annotation that is evaluated and may run code"
        binds = _target_names(node) if node.value is not None else set()
        if isinstance(node, ast.AnnAssign):
            binds.add("__annotations__")
        if binds >= {"__all__"} and not scope and not effect:
            if not _literal_strings(node.value):
                effect = "an __all__ that is no list of strings (a star import binds unknown names)"
            exports = _exported(node.value)
            binds |= exports
    elif isinstance(node, _FUNCTIONS):
        binds = {node.name}
        effect = _def_effect(node, scope, future, uses)
    elif _type_checking_only(node):
        uses.froms.add(("TYPE_CHECKING", "typing"))
    else:
        effect = _describe(node)
    if not effect and not scope:
        dunder = sorted(
            n for n in binds if n.startswith("__") and n.endswith("__") and n not in _PLAIN_DUNDERS
        )
        if dunder:
            effect = f"it binds {dunder[0]} (module-level dunders change what importers see)"
    return Statement(
        scope,
        _hash(node),
        node.lineno,
        frozenset(binds),
        _reads(node),
        effect,
        frozenset(uses.needs),
        imports,
        builtins=tuple(sorted(uses.builtins)),
        modules=tuple(sorted(uses.modules)),
        froms=tuple(sorted(uses.froms)),
        constants=tuple(sorted(uses.constants)),
        constant=isinstance(node, ast.Assign) and _immutable(node.value) and not effect,
        exports=tuple(sorted(exports)),
    )


_PLAIN_DUNDERS = frozenset({"__annotations__", "__all__"})  # __all__: only its strings are read


def _literal_strings(value: ast.expr | None) -> bool:
    """A list or tuple written as string constants only."""
    return isinstance(value, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
    )


def _exported(value: ast.expr | None) -> set[str]:
    """The names an ``__all__`` list or tuple of strings exports (a star import binds them)."""
    if isinstance(value, (ast.List, ast.Tuple)):
        return {
            e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        }
    return set()


def _type_checking_only(node: ast.stmt) -> bool:
    """``if TYPE_CHECKING:`` without ``else``: its body never runs."""
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Name)
        and node.test.id == "TYPE_CHECKING"
        and not node.orelse
    )


def _def_effect(
    node: ast.FunctionDef | ast.AsyncFunctionDef, scope: str, future: bool, uses: _Uses
) -> str:
    for decorator in node.decorator_list:
        if scope and isinstance(decorator, ast.Name) and decorator.id in BUILTIN_DECORATORS:
            uses.builtins.add(decorator.id)
        else:
            return "a decorated function (the decorator may do anything)"
    if getattr(node, "type_params", None):
        return "a generic function"
    args = node.args
    defaults = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
    if not all(_pure(d, uses) for d in defaults):
        return "a default value that is computed (a call, subscript or operator)"
    if not future:
        annotations = [
            a.annotation
            for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
            if a is not None and a.annotation is not None
        ]
        if node.returns is not None:
            annotations.append(node.returns)
        if not all(_pure(a, uses) for a in annotations):
            return "an annotation that is evaluated and may run code"
    return ""


def _describe(node: ast.stmt) -> str:
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        return "a module-level call"
    names = {
        ast.If: "an if block",
        ast.Try: "a try block",
        ast.For: "a loop",
        ast.While: "a loop",
        ast.With: "a with block",
        ast.Global: "a global statement",
        ast.Delete: "a del statement",
        ast.AugAssign: "an augmented assignment",
        ast.Assert: "an assert",
        ast.Raise: "a raise",
    }
    return names.get(type(node), f"a {type(node).__name__} statement")


def _target_names(node: ast.stmt) -> set[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return {t.id for t in targets if isinstance(t, ast.Name)}


# Builtin constructors that run no code and cannot raise on a literal argument.
_CONTAINERS = frozenset({"frozenset", "set", "tuple", "list"})
# Standard-library calls without arguments that only make an object.
_MAKERS = frozenset({("threading", "Lock"), ("threading", "RLock"), ("threading", "Event")})


def _pure(node: ast.expr, uses: _Uses, in_class: bool = False) -> bool:
    """Whether evaluating ``node`` can neither raise (given ``uses``) nor run code. In a class
    body a value may hold an object whose ``__set_name__`` runs: only values made there count."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        uses.needs.add(node.id)
        if in_class:  # an immutable constant has no __set_name__
            uses.constants.add(node.id)
        return True
    if isinstance(node, ast.Attribute) and not in_class:
        chain = _chain(node)
        if chain is None:
            return False
        uses.needs.add(chain[0])
        uses.modules.add((chain[0], ".".join(chain[1:])))
        return True
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(not isinstance(e, ast.Starred) and _pure(e, uses, in_class) for e in node.elts)
    if isinstance(node, ast.Set):
        return all(_hashable(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _hashable(k) for k in node.keys) and all(
            _pure(v, uses, in_class) for v in node.values
        )
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = node.operand
        return isinstance(operand, ast.Constant) and type(operand.value) in (int, float, complex)
    if isinstance(node, ast.Lambda):
        args = node.args
        defaults = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
        return all(_pure(d, uses, in_class) for d in defaults)
    if isinstance(node, ast.Call):
        return _pure_call(node, uses, in_class)
    return False


def _pure_call(node: ast.Call, uses: _Uses, in_class: bool) -> bool:
    """A call of a builtin container on a literal, or of a standard maker without arguments."""
    func = node.func
    if isinstance(func, ast.Name) and func.id in _CONTAINERS and not node.keywords:
        if not node.args:
            uses.builtins.add(func.id)
            return True
        if len(node.args) != 1:
            return False
        (arg,) = node.args
        hashed = func.id in ("frozenset", "set")
        if isinstance(arg, ast.Set) or (
            isinstance(arg, (ast.List, ast.Tuple))
            and (all(_hashable(e) for e in arg.elts) if hashed else _pure(arg, uses, in_class))
        ):
            uses.builtins.add(func.id)
            return True
        return False
    if isinstance(func, ast.Name) and func.id == "field" and not node.args:
        # dataclasses.field() only records its arguments; the factory is called later
        for keyword in node.keywords:
            value = keyword.value
            if keyword.arg == "default_factory" and isinstance(value, (ast.Name, ast.Lambda)):
                if isinstance(value, ast.Name):
                    uses.needs.add(value.id)
            elif keyword.arg is None or not _immutable(value):
                return False
        uses.froms.add(("field", "dataclasses"))
        uses.needs.add("field")
        return True
    chain = _chain(func) if isinstance(func, ast.Attribute) else None
    if chain is not None and len(chain) == 2 and tuple(chain) in _MAKERS:
        if node.args or node.keywords:
            return False
        uses.needs.add(chain[0])
        uses.modules.add((chain[0], chain[1]))
        return True
    return False


def _chain(node: ast.Attribute) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; None when its root is not a name."""
    parts: list[str] = []
    item: ast.expr = node
    while isinstance(item, ast.Attribute):
        parts.append(item.attr)
        item = item.value
    if not isinstance(item, ast.Name):
        return None
    return [item.id, *reversed(parts)]


def _hashable(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant)


def _reads(node: ast.AST, own: ast.AST | None = None) -> Reads:
    """What ``node`` reads, the bodies of functions nested in it left out (``own``: the function
    whose body is read)."""
    names: set[str] = set()
    attrs: set[str] = set()
    dynamic: list[str] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, _FUNCTIONS) and item is not own:
            stack.extend(item.decorator_list)
            stack.append(item.args)
            if item.returns is not None:
                stack.append(item.returns)
            continue
        if isinstance(item, ast.Name):
            if isinstance(item.ctx, ast.Load):
                names.add(item.id)
                if item.id in DYNAMIC_NAMES:
                    dynamic.append(f"{item.id} (line {item.lineno})")
        elif isinstance(item, ast.Attribute):
            attrs.add(item.attr)
            if item.attr in DYNAMIC_ATTRS:
                dynamic.append(f".{item.attr} (line {item.lineno})")
        elif isinstance(item, ast.Import):  # a top-level module is no module's name
            attrs.update(p for a in item.names for p in a.name.split(".")[1:])
            continue
        elif isinstance(item, ast.ImportFrom):
            parts = [p for p in (item.module or "").split(".") if p]
            attrs.update(parts if item.level else parts[1:])
            attrs.update(a.name for a in item.names if a.name != "*")
            if any(a.name == "*" for a in item.names):
                dynamic.append(f"import * (line {item.lineno})")
            continue
        elif isinstance(item, ast.Constant) and isinstance(item.value, str):
            if len(item.value) <= MAX_STRING:
                attrs.update(p for p in item.value.split(".") if p.isidentifier())
        elif isinstance(item, ast.Call) and (
            isinstance(item.func, ast.Name)
            and item.func.id in NAME_ARGUMENT
            and not (len(item.args) >= 2 and isinstance(item.args[1], ast.Constant))
        ):
            dynamic.append(f"{item.func.id} with a computed name (line {item.lineno})")
        stack.extend(_children(item))
    return Reads(frozenset(names), frozenset(attrs), min(dynamic, key=_line) if dynamic else "")


def _children(node: ast.AST) -> list[ast.AST]:
    """:func:`ast.iter_child_nodes` of ``node`` as a list, in the same order (faster)."""
    found: list[ast.AST] = []
    for name in node._fields:
        value = getattr(node, name, None)
        if value.__class__ is list:
            found += [item for item in value if isinstance(item, ast.AST)]
        elif isinstance(value, ast.AST):
            found.append(value)
    return found


def _line(text: str) -> int:
    return int(text.rsplit("line ", 1)[1].rstrip(")"))


def builtin_name(name: str) -> bool:
    return name in BUILTINS
