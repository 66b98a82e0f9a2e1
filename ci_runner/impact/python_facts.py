"""What one Python file says about its dependencies, read from its syntax tree (never imported).

:func:`file_facts` returns plain data (it is cached by content, :mod:`.fact_cache`):

* ``imports``: every ``import`` and ``from ... import`` anywhere in the file (inside functions,
  ``try`` and ``if TYPE_CHECKING:`` too), as ``[level, module, names]``;
* ``dynamic``: calls that import by a computed name (``importlib.import_module``, ``__import__``,
  ``runpy.run_module``): ``["module", name]`` for a literal, ``["prefix", head]`` when the name
  starts with a literal (an f-string, ``+``, ``%`` or ``.format``; ``{__name__}`` and
  ``{__package__}`` stand for the file's own module and package), ``["unresolved", text]``
  otherwise; and file loaders (``runpy.run_path``, ``spec_from_file_location``,
  ``SourceFileLoader``) with a computed path;
* ``names``: string literals spelled like a dotted module name (``"pkg.mod"``, ``"pkg.mod.attr"``):
  ``mock.patch`` targets, ``python -m`` arguments, plugin and registry entries;
* ``paths``: string literals spelled like a file name with a source suffix (``"run_suite.py"``,
  ``"elementwise/add3.cuh"``);
* ``words``: in a package's ``__init__.py``, string literals that are plain identifiers (its
  ``__all__`` and lazy-import tables name submodules this way);
* ``kernel``: the file arguments of kernel loader calls (``load_jit(cuda_files=[...])``):
  ``["file", name]``, ``["glob", pattern]`` for an f-string, ``["local", path]`` for a path
  spelled from the file's own location (``Path(__file__).parent / "k.cuh"``, relative to the
  file's directory, :mod:`.local_paths`), ``["unresolved", text]`` otherwise; a module-level
  name bound once stands for its value; calls inside the definition of a loader itself forward
  its parameters and are not recorded;
* ``listings``: calls that list a directory (``rglob``, ``glob``, ``iterdir``, ``os.walk``,
  ``listdir``, ``scandir``) as ``[text, line]``: test code that reads a tree as data;
* ``enumerators``: the functions that list a package's modules (``pkgutil.iter_modules``,
  ``walk_packages``), and ``enumerated``: the dotted string literals inside them or passed to a
  call of a function of that name (``import_processors("pkg.processors")``): packages whose
  every module may be imported;
* ``error``: why the file could not be read (a syntax error), else ``None``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ci_runner.impact.config import KernelLoader
from ci_runner.impact.local_paths import LocalPaths

FACTS_FORMAT = 7  # bump when the facts change shape or meaning: the cache is keyed by it
SOURCE_SUFFIXES = (".py", ".cuh", ".cu", ".h", ".hpp", ".hh", ".cpp", ".cc", ".cxx", ".c", ".inl")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\Z")
_PATH = re.compile(r"[\w.+-]+(?:/[\w.+-]+)*\Z")
_IMPORT_CALLS = frozenset({"import_module", "__import__", "run_module"})
_FILE_LOADERS = frozenset(
    {"run_path", "spec_from_file_location", "SourceFileLoader", "load_source"}
)
_ENUMERATORS = frozenset({"iter_modules", "walk_packages"})
_LISTINGS = frozenset({"rglob", "glob", "iglob", "iterdir", "walk", "listdir", "scandir"})
_OWN_NAMES = {"__name__": "{__name__}", "__package__": "{__package__}"}
_MAX_TEXT = 120


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _text(node: ast.AST) -> str:
    try:
        text = ast.unparse(node)
    except (ValueError, RecursionError):
        return "<expression>"
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "..."


def literal_head(node: ast.expr) -> tuple[str, bool] | None:
    """``(text, complete)``: a string expression's literal beginning, and whether that is all of
    it; None when it does not start with a literal. ``__name__``/``__package__`` are literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value, True
    if isinstance(node, ast.Name) and node.id in _OWN_NAMES:
        return _OWN_NAMES[node.id], True
    if isinstance(node, ast.JoinedStr):
        head = ""
        for part in node.values:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                head += part.value
                continue
            inner = part.value if isinstance(part, ast.FormattedValue) else None
            if isinstance(inner, ast.Name) and inner.id in _OWN_NAMES and not part.format_spec:
                head += _OWN_NAMES[inner.id]
                continue
            return (head, False) if head else None
        return head, True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = literal_head(node.left)
        if left is None:
            return None
        if not left[1]:
            return left
        right = literal_head(node.right)
        if right is None:
            return left[0], False
        return left[0] + right[0], right[1]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = literal_head(node.left)
        if left is not None and left[1]:
            return left[0].split("%", 1)[0], "%" not in left[0]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
    ):
        base = literal_head(node.func.value)
        if base is not None and base[1]:
            return base[0].split("{", 1)[0], "{" not in base[0]
    return None


def _dynamic(node: ast.Call, name: str) -> list[object] | None:
    """The ``dynamic`` entry of an import-by-name call, or None when it is not one."""
    if name in _FILE_LOADERS:
        arguments = [*node.args, *(k.value for k in node.keywords)]
        if any(_is_literal_path(a) for a in arguments):
            return None  # its literal path is one of the file's path literals
        return ["unresolved", _text(node)]
    if name not in _IMPORT_CALLS or not node.args:
        return None
    head = literal_head(node.args[0])
    if head is None or not head[0]:
        return ["unresolved", _text(node)]
    text, complete = head
    if text.startswith("."):  # relative: resolved against package=
        package = next((k.value for k in node.keywords if k.arg == "package"), None)
        base = literal_head(package) if package is not None else None
        if (
            base is None
            or not base[1]
            or ("{__" in base[0] and len(text) - len(text.lstrip(".")) > 1)
        ):
            return ["unresolved", _text(node)]
        dots = len(text) - len(text.lstrip("."))
        stem = base[0].rsplit(".", dots - 1)[0] if dots > 1 else base[0]
        text = f"{stem}.{text[dots:]}" if text[dots:] or not complete else stem
    return ["module", text] if complete else ["prefix", text]


def _is_other_walk(func: ast.expr, os_walks: set[str]) -> bool:
    """A ``walk`` that lists no directory: ``ast.walk(tree)`` (``_ast`` too), or a bare
    ``walk(...)`` that is not ``from os import walk`` (a function of the file's own)."""
    if isinstance(func, ast.Attribute) and func.attr == "walk":
        return isinstance(func.value, ast.Name) and func.value.id in ("ast", "_ast")
    return isinstance(func, ast.Name) and func.id == "walk" and "walk" not in os_walks


def _is_literal_path(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _kernel_entries(argument: ast.expr, paths: LocalPaths) -> Iterator[list[object]]:
    """The kernel files one loader argument names."""
    value = paths.value_of(argument)
    if isinstance(value, ast.Constant) and value.value is None:
        return
    items = value.elts if isinstance(value, ast.List | ast.Tuple) else [value]
    for item in map(paths.value_of, items):
        head = literal_head(item) if not isinstance(item, ast.Starred) else None
        local = paths.resolve(item) if head is None else None
        if head is not None and head[1] and "{__" not in head[0]:
            yield ["file", head[0]]
        elif isinstance(item, ast.JoinedStr) and head is not None:
            pattern = "".join(p.value if isinstance(p, ast.Constant) else "*" for p in item.values)
            yield ["glob", pattern]
        elif local is not None:
            yield ["local", local]
        else:
            yield ["unresolved", _text(argument)]
            return


class _Reader(ast.NodeVisitor):
    def __init__(
        self, loaders: dict[str, tuple[str | int, ...]], is_package: bool, paths: LocalPaths
    ) -> None:
        self.loaders = loaders
        self.is_package = is_package
        self.paths = paths
        self.facts: dict[str, list] = {
            "imports": [],
            "dynamic": [],
            "names": [],
            "paths": [],
            "words": [],
            "kernel": [],
            "listings": [],
        }
        self.enumerators: set[str] = set()
        self.calls: list[list[str]] = []  # [callee, dotted literal argument]
        self.in_function: list[list[str]] = []  # dotted literals of each open function
        self.functions: list[str] = []
        self.os_walks: set[str] = set()  # names bound by ``from os import walk [as ...]``

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.facts["imports"].append([0, alias.name, None])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        names = [alias.name for alias in node.names if alias.name != "*"]
        if node.module == "os":
            self.os_walks.update(a.asname or a.name for a in node.names if a.name == "walk")
        self.facts["imports"].append([node.level, node.module or "", names])

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.append(node.name)
        self.in_function.append([])
        self.generic_visit(node)
        literals = self.in_function.pop()
        if node.name in self.enumerators:
            self.calls += [[node.name, literal] for literal in literals]
        if self.in_function:
            self.in_function[-1].extend(literals)
        self.functions.pop()

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def visit_Constant(self, node: ast.Constant) -> None:
        value = node.value
        if not isinstance(value, str) or len(value) > 300:
            return
        if _DOTTED.match(value):
            self.facts["names"].append(value)
            if self.in_function:
                self.in_function[-1].append(value)
        if value.endswith(SOURCE_SUFFIXES) and _PATH.match(value.removeprefix("./")):
            self.facts["paths"].append(value.removeprefix("./"))
        if self.is_package and value.isidentifier():
            self.facts["words"].append(value)

    def visit_Call(self, node: ast.Call) -> None:
        name = _called_name(node.func)
        if name is not None:
            if name in _ENUMERATORS and self.functions:
                self.enumerators.add(self.functions[-1])
            for argument in [*node.args, *(k.value for k in node.keywords)]:
                if (
                    isinstance(argument, ast.Constant)
                    and isinstance(argument.value, str)
                    and _DOTTED.match(argument.value)
                ):
                    self.calls.append([name, argument.value])
            os_walk = isinstance(node.func, ast.Name) and node.func.id in self.os_walks
            if os_walk or (name in _LISTINGS and not _is_other_walk(node.func, self.os_walks)):
                self.facts["listings"].append([_text(node), node.lineno])
            entry = _dynamic(node, name)
            if entry is not None:
                self.facts["dynamic"].append([*entry, node.lineno])
            arguments = self.loaders.get(name)
            if arguments is not None and not set(self.functions) & set(self.loaders):
                self._loader_call(node, arguments)
        self.generic_visit(node)

    def _loader_call(self, node: ast.Call, arguments: tuple[str | int, ...]) -> None:
        keywords = {k.arg: k.value for k in node.keywords if k.arg is not None}
        starred = next((i for i, a in enumerate(node.args) if isinstance(a, ast.Starred)), None)
        spread = any(k.arg is None for k in node.keywords)
        for argument in arguments:
            if isinstance(argument, int):
                if starred is not None and starred <= argument:
                    value = None  # a *args before it: its position is unknown
                    unknown = True
                else:
                    value = node.args[argument] if argument < len(node.args) else None
                    unknown = value is None and spread
            else:
                value = keywords.get(argument)
                unknown = value is None and spread
            if unknown:
                self.facts["kernel"].append(["unresolved", _text(node), node.lineno])
            elif value is not None:
                for entry in _kernel_entries(value, self.paths):
                    self.facts["kernel"].append([*entry, node.lineno])


def file_facts(source: bytes, loaders: tuple[KernelLoader, ...], is_package: bool) -> dict:
    """The dependency facts of one Python file's source (see the module docstring)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        return {"error": f"cannot parse it ({type(exc).__name__} at line {line})"}
    except RecursionError:
        return {"error": "cannot parse it (nested too deeply for Python's parser)"}
    try:
        paths = LocalPaths(tree)
        arguments = {loader.function: loader.arguments for loader in loaders}
        reader = _Reader(arguments, is_package, paths)
        reader.visit(tree)
    except RecursionError:
        return {"error": "cannot read it (nested too deeply)"}
    facts = {key: _unique(values) for key, values in reader.facts.items()}
    enumerators = sorted(reader.enumerators)
    return {**facts, "enumerators": enumerators, "calls": _unique(reader.calls), "error": None}


def _unique(values: list) -> list:
    seen: set[str] = set()
    kept = []
    for value in values:
        key = repr(value)
        if key not in seen:
            seen.add(key)
            kept.append(value)
    return kept


_STRINGS = ("names", "paths", "words", "enumerators")
_KINDS = {
    "dynamic": frozenset({"module", "prefix", "unresolved"}),
    "kernel": frozenset({"file", "glob", "local", "unresolved"}),
}
MAX_LEVEL = 10_000  # a relative import's dots (Python's parser allows no more anyway)


def _whole(value: object, maximum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= maximum


def _row_problem(key: str, row: object) -> str | None:
    """Why one row of ``facts[key]`` is not of the shape :func:`file_facts` writes."""
    if key in _STRINGS:
        return None if isinstance(row, str) else "is not a string"
    if not isinstance(row, list):
        return "is not a list"
    if key == "imports":
        ok = (
            len(row) == 3
            and _whole(row[0], MAX_LEVEL)
            and isinstance(row[1], str)
            and (row[2] is None or (isinstance(row[2], list) and all(isinstance(n, str) for n in row[2])))
        )  # fmt: skip
        return None if ok else "is not [level, module, names]"
    if key in _KINDS:
        ok = len(row) == 3 and row[0] in _KINDS[key] and isinstance(row[1], str)
        return None if ok and _whole(row[2], 2**31) else "is not [kind, text, line]"
    if key == "listings":
        ok = len(row) == 2 and isinstance(row[0], str) and _whole(row[1], 2**31)
        return None if ok else "is not [text, line]"
    ok = len(row) == 2 and all(isinstance(part, str) for part in row)  # calls
    return None if ok else "is not [function, name]"


FACT_KEYS = ("imports", "dynamic", "names", "paths", "words", "kernel", "listings", "enumerators", "calls")  # fmt: skip


def facts_problem(facts: object) -> str | None:
    """Why ``facts`` (read from a cache) is not of the shape :func:`file_facts` returns, else
    None; the dependency graph reads only facts that pass."""
    if not isinstance(facts, dict):
        return "the facts are not an object"
    unknown = sorted(str(key) for key in facts if key not in (*FACT_KEYS, "error"))
    if unknown:
        return f"unknown key {unknown[0]!r}"
    error = facts.get("error", ...)
    if isinstance(error, str) and error:
        return None  # a file that could not be read: nothing else is used
    if error is not None:
        return "'error' is neither null nor a reason"
    for key in FACT_KEYS:
        rows = facts.get(key)
        if not isinstance(rows, list):
            return f"{key!r} is not a list"
        for index, row in enumerate(rows):
            problem = _row_problem(key, row)
            if problem:
                return f"{key}[{index}] {problem}"
    return None
