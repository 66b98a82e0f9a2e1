"""What a started Python process loads, and where a ``sys.path`` edit points, read from syntax.

A file that starts Python (``subprocess.run([sys.executable, "-c", code])``, ``os.system("python3
-m pkg.tool")``, ``pytest.main([path])``) or edits the import path (``sys.path.insert(0, d)``,
``site.addsitedir``, ``PYTHONPATH`` in an environment) loads code its imports do not name. Each
is read here into facts the dependency graph can follow, or into an *unproven* entry (the file
is then kept for every change):

* ``-c CODE`` with a literal CODE: the facts of CODE itself, as if the file held it;
* ``-m MODULE``: an import of MODULE (and its ``__main__``); a computed MODULE is an import by a
  computed name (``["unresolved", ...]`` in the ``dynamic`` facts, under the catalog's
  ``dynamic-imports`` policy);
* a script: a literal ``*.py`` is a file name the file writes (its ``paths`` facts already hold
  it); a path spelled from the file's location (``Path(__file__).parent / "x.py"``) is a
  ``files`` fact; anything else is unproven;
* a ``sys.path`` entry spelled from the file's location is a ``syspath`` ``["dir", relative]``
  fact (the graph resolves imports there too); one spelled from a module-level path constant
  another module defines (``from helpers import REPO_ROOT``, then ``str(REPO_ROOT / "tools")``)
  is ``["imported", "module:NAME/tools"]``, resolved by the graph through that module's
  ``places``; any other entry is ``["unresolved", text]``.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from ci_runner.impact.local_paths import LocalPaths

_INTERPRETER = re.compile(r"(?:.*/)?python(?:\d+(?:\.\d+)*)?\Z")
_SHELL_PYTHON = re.compile(r"(?:^|[\s;&|(`'\"])((?:[\w./-]*/)?python(?:\d+(?:\.\d+)*)?)\s+-?\S")
_OPTIONS_WITH_VALUE = frozenset({"-X", "-W", "--check-hash-based-pycs"})
_PYTEST_OPTIONS_WITH_VALUE = frozenset(
    {"-k", "-m", "-W", "-o", "-c", "--tb", "--rootdir", "--confcutdir", "--junitxml", "-n"}
)
COMPUTED = "\0"  # stands for a computed part of a command line
_MAX_TEXT = 120


def text_of(node: ast.AST) -> str:
    """``node`` as source text, shortened for a message."""
    try:
        text = ast.unparse(node)
    except (ValueError, RecursionError):
        return "<expression>"
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "..."


@dataclass
class LaunchFacts:
    """What the launches and path edits of one file add to its facts."""

    dynamic: list[list] = field(default_factory=list)  # [kind, module, line]
    unproven: list[list] = field(default_factory=list)  # [what, text, line]
    files: list[list] = field(default_factory=list)  # [path relative to the file's dir, line]
    syspath: list[list] = field(default_factory=list)  # ["dir", relative, line] / ["unresolved"]
    code: list[tuple[str, int]] = field(default_factory=list)  # (-c / exec code, line)


def is_interpreter(node: ast.AST, names: frozenset[str]) -> bool:
    """``sys.executable``, a literal ``python3``, ``shutil.which("python")``, or a name bound to one."""
    if isinstance(node, ast.Attribute):
        return (
            node.attr == "executable"
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        )
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and bool(_INTERPRETER.match(node.value))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
        called = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
        return called == "which" and len(node.args) == 1 and is_interpreter(node.args[0], names)
    return False


def interpreter_names(tree: ast.Module) -> frozenset[str]:
    """Module-level names bound to an interpreter (``PYTHON = sys.executable``) and
    ``from sys import executable``."""
    found: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom) and statement.module == "sys":
            found.update(a.asname or a.name for a in statement.names if a.name == "executable")
        elif (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and is_interpreter(statement.value, frozenset(found))
        ):
            found.add(statement.targets[0].id)
    return frozenset(found)


class LaunchReader:
    """Reads the launches and ``sys.path`` edits found while a file is read (see the module
    docstring); ``paths`` gives the file's :class:`LocalPaths`, built only when needed."""

    def __init__(
        self, paths: Callable[[], LocalPaths], imported: Callable[[ast.expr], str | None]
    ) -> None:
        self._paths = paths
        self.imported = imported  # a path named by a constant of another module, or None
        self.facts = LaunchFacts()

    # ------------------------------------------------------------------ argument lists

    def argv(self, items: list[ast.expr], line: int, text: str) -> None:
        """``[python, *options, -c CODE | -m MODULE | script, *arguments]``; a list that starts
        with a literal ``"python"`` but goes on with a plain word (``["python", "rust"]``) is
        no command line."""
        if isinstance(items[0], ast.Constant) and len(items) > 1:
            second = self._literal(items[1]) if not isinstance(items[1], ast.Starred) else None
            if second is not None and not _starts_a_program(second):
                return
        index = 1
        while index < len(items):
            item = items[index]
            if isinstance(item, ast.Starred):
                self._unproven("Python started with spread arguments", text, line)
                return
            word = self._literal(item)
            if word is None:
                self._script(item, line, text)
                return
            if word in ("-c", "-m") or (word[:2] in ("-c", "-m") and len(word) > 2):
                value: ast.expr | str | None = word[2:] or (
                    items[index + 1] if index + 1 < len(items) else None
                )
                self._program(word[:2], value, line, text)
                return
            if word in _OPTIONS_WITH_VALUE:
                index += 2
                continue
            if word.startswith("-") and word != "-":
                index += 1
                continue
            self._script_word(word, line, text)
            return
        self._unproven("Python started with no program named", text, line)

    def _program(self, flag: str, value: ast.expr | str | None, line: int, text: str) -> None:
        if value is None:
            self._unproven(f"Python started with {flag} and nothing after it", text, line)
            return
        literal = value if isinstance(value, str) else self._literal(value)
        if flag == "-m":
            if literal is None or COMPUTED in literal:
                self.facts.dynamic.append(["unresolved", f"python -m {text}", line])
            else:
                self.module(literal, line)
        elif literal is None or COMPUTED in literal:
            self._unproven("Python started with computed -c code", text, line)
        else:
            self.facts.code.append((literal, line))

    def module(self, name: str, line: int) -> None:
        """``python -m name``: the module, and its ``__main__`` when it is a package."""
        self.facts.dynamic += [["module", name, line], ["module", f"{name}.__main__", line]]

    def _script(self, item: ast.expr, line: int, text: str) -> None:
        paths = self._paths()
        if paths.is_own_file(item):
            return
        local = paths.resolve(paths.value_of(item))
        imported = self.imported(item) if local is None else None
        if local is not None:
            self.facts.files.append([local, line])
        elif imported is not None:
            self.facts.files.append([f"@{imported}", line])
        else:
            self._unproven("Python started on a computed script path", text, line)

    def _script_word(self, word: str, line: int, text: str) -> None:
        if COMPUTED in word or word == "-":
            self._unproven("Python started on a computed script path", text, line)
        elif not word.endswith(".py"):
            self._unproven("Python started on a script that is not a .py file", text, line)
        # a literal *.py is one of the file's ``paths`` facts: a file it names

    def _literal(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Constant):
            return node.value if isinstance(node.value, str) else None
        if isinstance(node, ast.Name):
            value = self._paths().value_of(node)
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                return value.value
        return _dedented(node)

    def _unproven(self, what: str, text: str, line: int) -> None:
        self.facts.unproven.append([what, text, line])

    # ------------------------------------------------------------------ command strings

    def command(self, text: str, line: int, shown: str) -> None:
        """A shell command line (``os.system``, ``shell=True``, a script) that runs Python;
        computed parts are ``COMPUTED``."""
        for match in _SHELL_PYTHON.finditer(text):
            rest = text[match.start(1) :]
            try:
                words = shlex.split(rest, comments=False)
            except ValueError:
                words = rest.split()
            words = _until_shell_operator(words)
            if len(words) > 1 and _starts_a_program(words[1]):
                self.argv([ast.Constant(w) for w in words], line, shown)

    # ------------------------------------------------------------------ pytest.main

    def pytest_main(self, node: ast.Call, line: int) -> None:
        """``pytest.main([args])``: the test files it collects, in this process: a path spelled
        from the file's location is a ``files`` fact, ``-p plugin`` an import by name; a test
        file it runs by a computed path is not seen (as with ``python -m pytest PATH``)."""
        if not node.args:
            return
        items = self._paths().value_of(node.args[0])
        if not isinstance(items, ast.List | ast.Tuple):
            return
        after = ""  # the option whose value comes next
        for item in items.elts:
            word = None if isinstance(item, ast.Starred) else self._literal(item)
            if after:
                if after == "-p" and word is not None:
                    self.module(word, line)
                after = ""
            elif word is None:
                local = None if isinstance(item, ast.Starred) else self._local(item)
                if local is not None:
                    self.facts.files.append([local, line])
            elif word == "-p" or word in _PYTEST_OPTIONS_WITH_VALUE:
                after = word
            elif word.startswith("-p") and not word.startswith("--"):
                self.module(word[2:], line)

    def _local(self, node: ast.expr) -> str | None:
        paths = self._paths()
        return paths.resolve(paths.value_of(node))

    # ------------------------------------------------------------------ sys.path

    def path_entry(self, node: ast.expr, line: int, text: str) -> None:
        """One directory put on ``sys.path``."""
        relative = self._paths().resolve_dir(node)
        imported = self.imported(node) if relative is None else None
        if relative is not None:
            self.facts.syspath.append(["dir", relative, line])
        elif imported is not None:
            self.facts.syspath.append(["imported", imported, line])
        else:
            self.facts.syspath.append(["unresolved", text, line])

    def path_entries(self, node: ast.expr, line: int, text: str) -> None:
        """Several directories (``sys.path.extend([...])``, ``sys.path[:0] = [...]``)."""
        value = self._paths().value_of(node)
        if isinstance(value, ast.List | ast.Tuple) and not any(
            isinstance(e, ast.Starred) for e in value.elts
        ):
            for element in value.elts:
                self.path_entry(element, line, text)
        else:
            self.facts.syspath.append(["unresolved", text, line])

    def path_unknown(self, text: str, line: int) -> None:
        self.facts.syspath.append(["unresolved", text, line])

    def exec_code(self, node: ast.Call, line: int) -> None:
        """``exec(CODE)``: a literal CODE is read like the file's own; anything else unproven."""
        literal = self._literal(node.args[0]) if node.args else None
        if literal is None:
            self._unproven("exec of computed code", text_of(node), line)
        else:
            self.facts.code.append((literal, line))


def _dedented(node: ast.expr) -> str | None:
    """``textwrap.dedent("...")`` / ``dedent("...")`` of a literal, which is that literal."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute | ast.Name)
        and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "dedent"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        import textwrap

        return textwrap.dedent(node.args[0].value)
    return None


def _starts_a_program(word: str) -> bool:
    """After ``python`` in a command line: an option, a script or a computed part (prose such
    as "python 3.10 or newer" is none of these)."""
    return word.startswith("-") or word.endswith(".py") or COMPUTED in word


def _until_shell_operator(words: list[str]) -> list[str]:
    for index, word in enumerate(words):
        if word in ("&&", "||", ";", "|", "&", ">", ">>", "<", "2>&1") or word.endswith(";"):
            return words[:index] + ([word[:-1]] if word.endswith(";") and word != ";" else [])
    return words


def joined_command(node: ast.JoinedStr, interpreters: frozenset[str]) -> str:
    """An f-string as a command line: ``{sys.executable}`` is ``python``, any other
    placeholder ``COMPUTED``."""
    parts: list[str] = []
    for part in node.values:
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            parts.append(part.value)
        elif isinstance(part, ast.FormattedValue) and is_interpreter(part.value, interpreters):
            parts.append("python")
        else:
            parts.append(COMPUTED)
    return "".join(parts)


def mentions_python(text: str) -> bool:
    """Whether a string may hold a command line that starts Python."""
    return "python" in text and bool(_SHELL_PYTHON.search(text))
