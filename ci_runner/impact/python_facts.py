"""What one Python file says about its dependencies, read from its syntax tree (never imported).

:func:`file_facts` returns plain data (it is cached by content, :mod:`.fact_cache`):

* ``imports``: every ``import`` and ``from ... import`` anywhere in the file (inside functions,
  ``try`` and ``if TYPE_CHECKING:`` too), as ``[level, module, names, line]``;
* ``dynamic``: imports by name (``importlib.import_module``, ``__import__``,
  ``runpy.run_module``, ``importlib.util.find_spec``, ``python -m``): ``["module", name, line]`` for a literal, ``["prefix",
  head, line]`` when the name starts with a literal (an f-string, ``+``, ``%`` or ``.format``;
  ``{__name__}`` and ``{__package__}`` stand for the file's own module and package),
  ``["unresolved", text, line]`` otherwise;
* ``names``: string literals spelled like a dotted module name (``"pkg.mod"``, ``"pkg.mod.attr"``):
  ``mock.patch`` targets, ``python -m`` arguments, plugin and registry entries;
* ``paths``: string literals spelled like a file name with a source or document suffix
  (``"run_suite.py"``, ``"elementwise/add3.cuh"``, ``"prompt.md"``);
* ``words``: in a package's ``__init__.py``, string literals that are plain identifiers (its
  ``__all__`` and lazy-import tables name submodules this way);
* ``kernel``: the file arguments of kernel loader calls (``load_jit(cuda_files=[...])``):
  ``["file", name]``, ``["glob", pattern]`` for an f-string, ``["local", path]`` for a path
  spelled from the file's own location (``Path(__file__).parent / "k.cuh"``, relative to the
  file's directory, :mod:`.local_paths`), ``["unresolved", text]`` otherwise; a module-level
  name bound once stands for its value; calls inside the definition of a loader itself forward
  its parameters and are not recorded;
* ``listings``: calls that list a directory (``rglob``, ``glob``, ``iterdir``, ``os.walk``,
  ``listdir``, ``scandir``, ``discover``) as ``[text, line]``: test code that reads a tree as
  data;
* ``syspath``: directories put on the import path (``sys.path.insert``, ``site.addsitedir``,
  ``PYTHONPATH`` in an environment): ``["dir", path relative to the file's directory, line]``
  when spelled from the file's location, ``["unresolved", text, line]`` otherwise;
* ``places``: module-level names bound once to a path spelled from the file's location
  (``REPO_ROOT = Path(__file__).parents[2]``), relative to the file's directory, for files that
  import them to put on ``sys.path`` or ``PYTHONPATH``; a name the file imports itself is
  ``"@module:NAME"`` (a re-export, followed by the graph);
* ``files``: Python files run or loaded by a path spelled from the file's location (a script
  started with ``sys.executable``, ``runpy.run_path``, ``spec_from_file_location``), relative to
  the file's directory, as ``[path, line]``;
* ``unproven``: what loads code the facts cannot name, as ``[what, text, line]``: a Python
  process started with computed ``-c`` code or on a computed script, ``exec`` of computed code,
  a file loaded by a computed path, a custom importer (``sys.meta_path``);
  the code of ``python -c CODE`` and ``exec(CODE)`` with a literal CODE is read as the file's
  own (:mod:`.python_launches`);
* ``enumerators``: the functions that list a package's modules (``pkgutil.iter_modules``,
  ``walk_packages``), and ``calls``: the dotted string literals inside them or passed to a
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
from ci_runner.impact.python_launches import (
    COMPUTED,
    LaunchFacts,
    LaunchReader,
    interpreter_names,
    is_interpreter,
    joined_command,
    mentions_python,
    text_of,
)

FACTS_FORMAT = 15  # bump when the facts change shape or meaning: the cache is keyed by it
SOURCE_SUFFIXES = (".py", ".cuh", ".cu", ".h", ".hpp", ".hh", ".cpp", ".cc", ".cxx", ".c", ".inl")
# Named files a test may read as data: a name keeps such a file from being ignored
DOCUMENT_SUFFIXES = (".md", ".mdx", ".rst", ".txt", ".ipynb")
_NAMED_SUFFIXES = (*SOURCE_SUFFIXES, *DOCUMENT_SUFFIXES)
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\Z")
_PATH = re.compile(r"[\w.+-]+(?:/[\w.+-]+)*\Z")
_IMPORT_CALLS = frozenset({"import_module", "__import__", "run_module", "find_spec"})
# Calls that load a Python file by its path: (position, keyword) of the path argument
_FILE_LOADERS = {
    "run_path": (0, "path_name"),
    "spec_from_file_location": (1, "location"),
    "SourceFileLoader": (1, "path"),
    "load_source": (1, "pathname"),
}
_ENUMERATORS = frozenset({"iter_modules", "walk_packages"})
_LISTINGS = frozenset(
    {"rglob", "glob", "iglob", "iterdir", "walk", "listdir", "scandir", "discover"}
)
# Calls whose positional arguments, from this one on, are a command line: os.execl(path, *argv)
_LAUNCHERS = {
    "create_subprocess_exec": 0,
    "execl": 1, "execle": 1, "execlp": 1, "execlpe": 1,
    "spawnl": 2, "spawnle": 2, "spawnlp": 2, "spawnlpe": 2,
}  # fmt: skip
# Calls whose first argument is a shell command line (or an argument list)
_SHELL_LAUNCHERS = frozenset(
    {
        "system", "popen", "run", "call", "check_call", "check_output", "Popen", "getoutput",
        "getstatusoutput", "create_subprocess_shell", "spawn", "runcmd", "run_command",
    }
)  # fmt: skip
_MAX_NAME_DEPTH = 8
# Calls :meth:`_Reader._path_call` reads: sys.path and environment edits, exec, pytest.main
_PATH_CALLS = frozenset(
    {
        "insert", "append", "extend", "__setitem__", "__iadd__", "addsitedir", "syspath_prepend",
        "setenv", "putenv", "setdefault", "exec", "main",
    }
)  # fmt: skip
_IMPORTED = "\0"  # marks a directory named through another module's constant
_OWN_NAMES = {"__name__": "{__name__}", "__package__": "{__package__}"}


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


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
    if name not in _IMPORT_CALLS or not node.args:
        return None
    head = literal_head(node.args[0])
    if head is None or not head[0]:
        return ["unresolved", text_of(node)]
    text, complete = head
    if text.startswith("."):  # relative: resolved against package=
        package = next((k.value for k in node.keywords if k.arg == "package"), None)
        base = literal_head(package) if package is not None else None
        if (
            base is None
            or not base[1]
            or ("{__" in base[0] and len(text) - len(text.lstrip(".")) > 1)
        ):
            return ["unresolved", text_of(node)]
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


def _is_sys_attribute(node: ast.AST, attribute: str) -> bool:
    """``sys.<attribute>``."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == attribute
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    )


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
            yield ["unresolved", text_of(argument)]
            return


# Fields that never hold a node worth reading: names, numbers, flags, operators, contexts.
_SKIPPED_FIELDS = frozenset(
    {
        "ctx", "op", "ops", "kind", "conversion", "type_comment", "id", "attr", "arg",
        "name", "names", "module", "level", "asname", "kwd_attrs", "is_async", "tag", "n", "s",
        "simple", "rest",
    }
)  # fmt: skip
_LEAF_KINDS = (ast.Constant, ast.MatchSingleton)  # their ``value`` is a Python value


def _child_fields(kind: type) -> tuple[str, ...]:
    """The fields of a node class that hold nodes, lists of nodes, or None, last first."""
    if issubclass(kind, _LEAF_KINDS):
        return ()
    return tuple(f for f in reversed(kind._fields) if f not in _SKIPPED_FIELDS)  # popped in order


_EXIT = object()  # marks the end of a function's body on the traversal stack


class _Reader:
    """One pass over a syntax tree, in source order (see the module docstring)."""

    def __init__(
        self, tree: ast.Module, loaders: dict[str, tuple[str | int, ...]], is_package: bool
    ) -> None:
        self.tree = tree
        self.loaders = loaders
        self.is_package = is_package
        self.facts: dict[str, list] = {
            "imports": [],
            "dynamic": [],
            "names": [],
            "paths": [],
            "words": [],
            "kernel": [],
            "listings": [],
            "unproven": [],
        }
        self.enumerators: set[str] = set()
        self.calls: list[list[str]] = []  # [callee, dotted literal argument]
        self.in_function: list[list[str]] = []  # dotted literals of each open function
        self.functions: list[str] = []
        self.os_walks: set[str] = set()  # names bound by ``from os import walk [as ...]``
        self.interpreters = interpreter_names(tree)
        self.loader_calls: list[tuple[ast.Call, tuple[str | int, ...]]] = []
        self.commands: list[tuple[ast.expr, ast.Call]] = []  # shell launchers' command lines
        self.pythonpath: list[tuple[ast.expr | None, int, str]] = []  # values given PYTHONPATH
        self.assigned: dict[str, list[ast.expr]] = {}  # name -> every value assigned to it
        self.file_loads: list[ast.Call] = []
        self._local_paths: LocalPaths | None = None
        self.launches = LaunchReader(self.paths, self.imported_path)
        self.from_imports: dict[str, str] = {}  # local name -> "module:NAME" (dots for level)
        self._fields: dict[type, tuple[str, ...]] = {}

    def paths(self) -> LocalPaths:
        """The file's local-path resolver, built on first use (it reads the whole tree)."""
        if self._local_paths is None:
            self._local_paths = LocalPaths(self.tree)
        return self._local_paths

    def read(self) -> None:
        handlers = {
            ast.Import: self._import,
            ast.ImportFrom: self._import_from,
            ast.FunctionDef: self._function,
            ast.AsyncFunctionDef: self._function,
            ast.AnnAssign: self._assign,
            ast.Constant: self._constant,
            ast.Call: self._call,
            ast.List: self._display,
            ast.Tuple: self._display,
            ast.Assign: self._assign,
            ast.AugAssign: self._assign,
            ast.Dict: self._dict,
            ast.keyword: self._keyword,
        }
        stack: list = [self.tree]
        fields_of = self._fields
        while stack:
            node = stack.pop()
            if node is None:  # a gap in a list (a dict's ** entry, a missing default)
                continue
            if node is _EXIT:
                self._leave_function(stack.pop())
                continue
            kind = node.__class__
            handler = handlers.get(kind)
            if handler is not None:
                handler(node)
                if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                    stack += (node, _EXIT)
            fields = fields_of.get(kind)
            if fields is None:
                fields = fields_of[kind] = _child_fields(kind)
            for name in fields:
                value = getattr(node, name, None)
                if value is None:
                    continue
                if value.__class__ is list:
                    stack += value[::-1]
                else:
                    stack.append(value)
        self._finish()

    # ------------------------------------------------------------------ node handlers

    def _import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.facts["imports"].append([0, alias.name, None, node.lineno])

    def _import_from(self, node: ast.ImportFrom) -> None:
        names = [alias.name for alias in node.names if alias.name != "*"]
        module = "." * node.level + (node.module or "")
        for alias in node.names:
            self.from_imports[alias.asname or alias.name] = f"{module}:{alias.name}"
        if node.module == "os":
            self.os_walks.update(a.asname or a.name for a in node.names if a.name == "walk")
        self.facts["imports"].append([node.level, node.module or "", names, node.lineno])

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.append(node.name)
        self.in_function.append([])

    def _leave_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        literals = self.in_function.pop()
        if node.name in self.enumerators:
            self.calls += [[node.name, literal] for literal in literals]
        if self.in_function:
            self.in_function[-1].extend(literals)
        self.functions.pop()

    def _constant(self, node: ast.Constant) -> None:
        value = node.value
        if not isinstance(value, str) or len(value) > 300:
            return
        if _DOTTED.match(value):
            self.facts["names"].append(value)
            if self.in_function:
                self.in_function[-1].append(value)
        if value.endswith(_NAMED_SUFFIXES) and _PATH.match(value.removeprefix("./")):
            self.facts["paths"].append(value.removeprefix("./"))
        if self.is_package and value.isidentifier():
            self.facts["words"].append(value)

    def _display(self, node: ast.List | ast.Tuple) -> None:
        if node.elts and is_interpreter(node.elts[0], self.interpreters):
            self.launches.argv(node.elts, node.lineno, text_of(node))

    def _call(self, node: ast.Call) -> None:
        name = _called_name(node.func)
        if name is None:
            return
        if name in _ENUMERATORS and self.functions:
            self.enumerators.add(self.functions[-1])
        for arguments in (node.args, node.keywords):
            for argument in arguments:
                value = argument.value if arguments is node.keywords else argument
                if (
                    value.__class__ is ast.Constant
                    and isinstance(value.value, str)
                    and _DOTTED.match(value.value)
                ):
                    self.calls.append([name, value.value])
        os_walk = isinstance(node.func, ast.Name) and node.func.id in self.os_walks
        if os_walk or (name in _LISTINGS and not _is_other_walk(node.func, self.os_walks)):
            self.facts["listings"].append([text_of(node), node.lineno])
        entry = _dynamic(node, name)
        if entry is not None:
            self.facts["dynamic"].append([*entry, node.lineno])
        if name in _FILE_LOADERS:
            self.file_loads.append(node)
        arguments = self.loaders.get(name)
        if arguments is not None and not set(self.functions) & set(self.loaders):
            self.loader_calls.append((node, arguments))
        offset = _LAUNCHERS.get(name)
        if (
            offset is not None
            and len(node.args) > offset
            and is_interpreter(node.args[offset], self.interpreters)
        ):
            self.launches.argv(node.args[offset:], node.lineno, text_of(node))
        if name in _SHELL_LAUNCHERS and node.args:
            self.commands.append((node.args[0], node))
        self._path_call(node, name)

    def _path_call(self, node: ast.Call, name: str) -> None:
        """``sys.path`` edits, ``site.addsitedir``, ``exec``, ``pytest.main``, custom importers."""
        if name not in _PATH_CALLS:
            return
        func, line = node.func, node.lineno
        if isinstance(func, ast.Attribute) and _is_sys_attribute(func.value, "path"):
            if name == "insert" and len(node.args) == 2:
                self.launches.path_entry(node.args[1], line, text_of(node))
            elif name == "append" and len(node.args) == 1:
                self.launches.path_entry(node.args[0], line, text_of(node))
            elif name == "extend" and len(node.args) == 1:
                self.launches.path_entries(node.args[0], line, text_of(node))
            elif name in ("__setitem__", "__iadd__"):
                self.launches.path_unknown(text_of(node), line)
        elif isinstance(func, ast.Attribute) and (
            _is_sys_attribute(func.value, "meta_path")
            or _is_sys_attribute(func.value, "path_hooks")
        ):
            if name in ("insert", "append", "extend"):
                self.facts["unproven"].append(["custom importer", text_of(node), line])
        elif name in ("addsitedir", "syspath_prepend") and node.args:
            self.launches.path_entry(node.args[0], line, text_of(node))
        elif name in ("setenv", "putenv", "setdefault", "__setitem__") and _names_pythonpath(
            node.args[:1]
        ):
            value = node.args[1] if len(node.args) > 1 else None
            self.pythonpath.append((value, line, text_of(node)))
        elif isinstance(func, ast.Name) and func.id == "exec":
            self.launches.exec_code(node, line)
        elif (
            name == "main"
            and isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "pytest"
        ):
            self.launches.pytest_main(node, line)

    def _assign(self, node: ast.Assign | ast.AugAssign | ast.AnnAssign) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            kind = target.__class__
            if kind is ast.Name:
                if node.value is not None:
                    self.assigned.setdefault(target.id, []).append(node.value)
                continue
            place = target.value if kind is ast.Subscript else target
            if _is_sys_attribute(place, "path"):
                self.launches.path_entries(node.value, node.lineno, text_of(node))
            elif _is_sys_attribute(place, "meta_path") or _is_sys_attribute(place, "path_hooks"):
                self.facts["unproven"].append(["custom importer", text_of(node), node.lineno])
            elif kind is ast.Subscript and _names_pythonpath([target.slice]):
                self.pythonpath.append((node.value, node.lineno, text_of(node)))

    def _dict(self, node: ast.Dict) -> None:
        for key, value in zip(node.keys, node.values, strict=True):
            if key is not None and _names_pythonpath([key]):
                self.pythonpath.append((value, getattr(node, "lineno", 0), text_of(node)))

    def _keyword(self, node: ast.keyword) -> None:
        if node.arg == "PYTHONPATH":
            self.pythonpath.append((node.value, getattr(node, "lineno", 0), text_of(node)))

    # ------------------------------------------------------------------ after the pass

    def _finish(self) -> None:
        for node, arguments in self.loader_calls:
            self._loader_call(node, arguments)
        for node in self.file_loads:
            self._file_load(node)
        for argument, call in self.commands:
            for text in self._command_texts(argument, 0):
                if mentions_python(text):
                    self.launches.command(text, call.lineno, text_of(call))
        for value, line, shown in self.pythonpath:
            self._pythonpath(value, line, shown)

    def _values(self, node: ast.expr) -> list[ast.expr]:
        """What a name may hold: every value assigned to it in the file (any scope)."""
        if isinstance(node, ast.Name):
            return self.assigned.get(node.id, [])
        return [node]

    def _command_texts(self, node: ast.expr, depth: int) -> list[str]:
        """The command lines a launcher argument may be: a literal, an f-string, or what a
        name was assigned; a list is read as an argument list where it is written."""
        if depth > _MAX_NAME_DEPTH:
            return []
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.JoinedStr):
            return [joined_command(node, self.interpreters)]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            lefts = self._command_texts(node.left, depth + 1) or [COMPUTED]
            rights = self._command_texts(node.right, depth + 1) or [COMPUTED]
            return [left + right for left in lefts for right in rights][:_MAX_NAME_DEPTH]
        if isinstance(node, ast.Name):
            return [t for v in self._values(node) for t in self._command_texts(v, depth + 1)]
        return []

    def imported_path(self, node: ast.expr) -> str | None:
        """``REPO_ROOT``, ``str(REPO_ROOT / "tools")`` with ``REPO_ROOT`` imported from another
        module: ``"module:REPO_ROOT/tools"``, for the graph to resolve; None otherwise."""
        segments: list[str] = []
        for _ in range(_MAX_NAME_DEPTH):
            if (
                isinstance(node, ast.Call)
                and _called_name(node.func) in ("str", "fspath", "resolve", "absolute")
                and len(node.args) <= 1
            ):
                node = node.args[0] if node.args else node.func.value  # type: ignore[union-attr]
            elif (
                isinstance(node, ast.BinOp)
                and isinstance(node.op, ast.Div)
                and isinstance(node.right, ast.Constant)
                and isinstance(node.right.value, str)
            ):
                segments.insert(0, node.right.value)
                node = node.left
            elif (
                isinstance(node, ast.Name)
                and node.id not in self.from_imports
                and node.id in self.paths().bound  # a module-level name bound once
            ):
                node = self.paths().bound[node.id]
            else:
                break
        if not isinstance(node, ast.Name) or node.id not in self.from_imports:
            return None
        if any(not s or s.startswith("/") or "\0" in s for s in segments):
            return None
        return "/".join([self.from_imports[node.id], *segments])

    def places(self) -> dict[str, str]:
        """Module-level names bound once to a path spelled from the file's location, relative
        to the file's directory (``REPO_ROOT = Path(__file__).parents[2]``: ``"../.."``)."""
        found = {name: f"@{origin}" for name, origin in self.from_imports.items()}  # re-exports
        for name, value in self.paths().bound.items():
            relative = self.paths().resolve_dir(value)
            imported = self.imported_path(value) if relative is None else None
            if relative is not None:
                found[name] = relative
            elif imported is not None:
                found[name] = f"@{imported}"
        return found

    def _pythonpath(self, value: ast.expr | None, line: int, shown: str) -> None:
        """``PYTHONPATH`` set to ``value``: directories spelled from the file's location become
        ``syspath`` dirs; what it keeps from the environment is the runner's own setting;
        anything else is an unresolved edit."""
        dirs: list[str] = []
        if value is None or not self._path_parts(value, dirs, 0):
            self.launches.path_unknown(shown, line)
            return
        self.launches.facts.syspath += [
            ["imported", d[len(_IMPORTED) :], line] if d.startswith(_IMPORTED) else ["dir", d, line]
            for d in dirs
        ]

    def _path_parts(self, node: ast.expr, dirs: list[str], depth: int) -> bool:
        """Whether every part of a ``PYTHONPATH`` value is known (module docstring)."""
        if depth > _MAX_NAME_DEPTH:
            return False
        parts: list[ast.expr] | None = None
        if isinstance(node, ast.JoinedStr):
            parts = [v.value if isinstance(v, ast.FormattedValue) else v for v in node.values]
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            parts = [node.left, node.right]
        elif isinstance(node, ast.IfExp):
            parts = [node.body, node.orelse]
        elif _is_join(node) and isinstance(node.args[0], ast.List | ast.Tuple):
            parts = list(node.args[0].elts)
        elif (
            isinstance(node, ast.Call)
            and _called_name(node.func) in ("str", "fspath")
            and len(node.args) == 1
        ):
            parts = [node.args[0]]
        if parts is not None:
            return all(self._path_parts(part, dirs, depth + 1) for part in parts)
        if _is_separator(node) or _reads_pythonpath(node):
            return True
        if (imported := self.imported_path(node)) is not None:
            dirs.append(f"{_IMPORTED}{imported}")
            return True
        if isinstance(node, ast.Name) and node.id in self.assigned:
            values = self.assigned[node.id]
            return all(self._path_parts(v, dirs, depth + 1) for v in values)
        directory = self.paths().resolve_dir(node)
        if directory is None:
            return False
        dirs.append(directory)
        return True

    def _file_load(self, node: ast.Call) -> None:
        """``runpy.run_path``, ``spec_from_file_location``, ...: a literal path is one of the
        file's ``paths``; one spelled from the file's location is a ``files`` fact."""
        position, keyword = _FILE_LOADERS[_called_name(node.func) or ""]
        argument = node.args[position] if len(node.args) > position else None
        argument = argument or next((k.value for k in node.keywords if k.arg == keyword), None)
        if argument is None or isinstance(argument, ast.Starred):
            if argument is None and not any(k.arg is None for k in node.keywords):
                return  # no path: the call fails, or loads by name (a spec's loader)
        elif isinstance(argument, ast.Constant) and isinstance(argument.value, str):
            return
        else:
            local = self.paths().resolve(self.paths().value_of(argument))
            if local is not None:
                self.launches.facts.files.append([local, node.lineno])
                return
        self.facts["unproven"].append(
            ["file loaded by a computed path", text_of(node), node.lineno]
        )

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
                self.facts["kernel"].append(["unresolved", text_of(node), node.lineno])
            elif value is not None:
                for entry in _kernel_entries(value, self.paths()):
                    self.facts["kernel"].append([*entry, node.lineno])


def _is_join(node: ast.expr) -> bool:
    """``os.pathsep.join(...)`` or ``":".join(...)``."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "join"
        and len(node.args) == 1
        and (_is_separator(node.func.value))
    )


def _is_separator(node: ast.expr) -> bool:
    """``os.pathsep``, ``":"`` or ``";"``."""
    if isinstance(node, ast.Attribute):
        return node.attr == "pathsep"
    return isinstance(node, ast.Constant) and node.value in (":", ";", "")


def _reads_pythonpath(node: ast.expr) -> bool:
    """``os.environ.get("PYTHONPATH")``, ``os.getenv("PYTHONPATH")``, ``env["PYTHONPATH"]``:
    the value inherited from the runner's environment."""
    if isinstance(node, ast.Subscript):
        return _names_pythonpath([node.slice])
    if isinstance(node, ast.Call) and _called_name(node.func) in ("get", "getenv"):
        return _names_pythonpath(node.args[:1])
    return False


def _names_pythonpath(nodes: list[ast.expr]) -> bool:
    return any(isinstance(n, ast.Constant) and n.value == "PYTHONPATH" for n in nodes)


def parse_source(source: bytes | str) -> ast.Module | dict:
    """The syntax tree of ``source``, or the facts of a file that does not parse."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        return {"error": f"cannot parse it ({type(exc).__name__} at line {line})"}
    except RecursionError:
        return {"error": "cannot parse it (nested too deeply for Python's parser)"}


def file_facts(source: bytes | str, loaders: tuple[KernelLoader, ...], is_package: bool) -> dict:
    """The dependency facts of one Python file's source (see the module docstring)."""
    tree = parse_source(source)
    return tree if isinstance(tree, dict) else tree_facts(tree, source, loaders, is_package)


def tree_facts(
    tree: ast.Module, source: bytes | str, loaders: tuple[KernelLoader, ...], is_package: bool
) -> dict:
    """:func:`file_facts` of a parsed ``source``."""
    try:
        reader = _Reader(
            tree, {loader.function: loader.arguments for loader in loaders}, is_package
        )
        reader.read()
        launched = reader.launches.facts
        for code, line in launched.code:
            _merge_code(reader.facts, launched, code, line, loaders)
    except RecursionError:
        return {"error": "cannot read it (nested too deeply)"}
    facts = {key: _unique(values) for key, values in reader.facts.items()}
    places = (
        reader.places()
        if _may_bind_paths(_as_bytes(source))
        else {name: f"@{origin}" for name, origin in reader.from_imports.items()}
    )
    facts["dynamic"] = _unique(facts["dynamic"] + launched.dynamic)
    facts["unproven"] = _unique(facts["unproven"] + launched.unproven)
    return {
        **facts,
        "syspath": _unique(launched.syspath),
        "files": _unique(launched.files),
        "places": places,
        "enumerators": sorted(reader.enumerators),
        "calls": _unique(reader.calls),
        "error": None,
    }


def _may_bind_paths(source: bytes) -> bool:
    """Whether a module-level name may be bound to a path (``__file__`` is written, or a path
    is joined: ``ROOT / "x"``); reading the bindings costs two walks of the tree."""
    return b"__file__" in source or b' / "' in source or b" / '" in source


def _as_bytes(source: bytes | str) -> bytes:
    return source if isinstance(source, bytes) else source.encode("utf-8", "surrogateescape")


def _merge_code(
    facts: dict[str, list], launched: LaunchFacts, code: str, line: int, loaders
) -> None:
    """The facts of ``-c`` / ``exec`` code, as if the file held it at ``line``; code that does
    not parse runs nothing."""
    inner = file_facts(code, loaders, is_package=False)
    if inner.get("error"):
        return
    for level, module, names, _line in inner["imports"]:
        if not level:  # ``-c`` code is no package: a relative import in it fails
            facts["imports"].append([level, module, names, line])
    for key in ("names", "paths"):
        facts[key] += inner[key]
    for key in ("dynamic", "kernel", "listings", "unproven"):
        facts[key] += [[*entry[:-1], line] for entry in inner[key]]
    # ``-c`` code has no ``__file__``: a path it spells from there resolves to nothing
    launched.syspath += [["unresolved", str(entry[1]), line] for entry in inner["syspath"]]
    facts["unproven"] += [
        ["file loaded by a computed path", path, line] for path, _line in inner["files"]
    ]


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
    "syspath": frozenset({"dir", "imported", "unresolved"}),
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
            len(row) == 4
            and _whole(row[0], MAX_LEVEL)
            and isinstance(row[1], str)
            and (row[2] is None or (isinstance(row[2], list) and all(isinstance(n, str) for n in row[2])))
            and _whole(row[3], 2**31)
        )  # fmt: skip
        return None if ok else "is not [level, module, names, line]"
    if key in _KINDS:
        ok = len(row) == 3 and row[0] in _KINDS[key] and isinstance(row[1], str)
        return None if ok and _whole(row[2], 2**31) else "is not [kind, text, line]"
    if key == "unproven":
        ok = len(row) == 3 and isinstance(row[0], str) and isinstance(row[1], str)
        return None if ok and _whole(row[2], 2**31) else "is not [what, text, line]"
    if key in ("listings", "files"):
        ok = len(row) == 2 and isinstance(row[0], str) and _whole(row[1], 2**31)
        return None if ok else "is not [text, line]"
    ok = len(row) == 2 and all(isinstance(part, str) for part in row)  # calls
    return None if ok else "is not [function, name]"


FACT_KEYS = (
    "imports", "dynamic", "names", "paths", "words", "kernel", "listings", "enumerators", "calls",
    "unproven", "syspath", "files",
)  # fmt: skip


def facts_problem(facts: object) -> str | None:
    """Why ``facts`` (read from a cache) is not of the shape :func:`file_facts` returns, else
    None; the dependency graph reads only facts that pass."""
    if not isinstance(facts, dict):
        return "the facts are not an object"
    unknown = sorted(str(key) for key in facts if key not in (*FACT_KEYS, "places", "error"))
    if unknown:
        return f"unknown key {unknown[0]!r}"
    error = facts.get("error", ...)
    if isinstance(error, str) and error:
        return None  # a file that could not be read: nothing else is used
    if error is not None:
        return "'error' is neither null nor a reason"
    places = facts.get("places")
    if not isinstance(places, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in places.items()
    ):
        return "'places' is not an object of names to paths"
    for key in FACT_KEYS:
        rows = facts.get(key)
        if not isinstance(rows, list):
            return f"{key!r} is not a list"
        for index, row in enumerate(rows):
            problem = _row_problem(key, row)
            if problem:
                return f"{key}[{index}] {problem}"
    return None
