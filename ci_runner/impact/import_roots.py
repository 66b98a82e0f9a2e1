"""Where the repository says its Python imports resolve: its packaging, wherever it lives.

Every ``pyproject.toml``, ``setup.cfg`` and ``setup.py`` of the tree (``python/pyproject.toml``
as well as the root's) declares packages and the directory they are installed from; pytest's
``pythonpath`` option (``pytest.ini``, ``tox.ini``, ``setup.cfg``, ``[tool.pytest.ini_options]``)
puts directories on ``sys.path`` too. :func:`read_import_roots` gathers:

* ``roots``: directories ``import x`` resolves in (setuptools ``packages.find where`` and
  ``package-dir``, scikit-build ``wheel.packages``, maturin ``python-source``, hatch and poetry
  package locations, pytest ``pythonpath``; otherwise the packaging directory itself or its
  ``src/`` and ``python/``), each kept only when it holds a Python package or module;
* ``names``: the top-level import names the packaging declares (project names with ``-`` as
  ``_``, declared packages and modules, maturin module names, the packages found in the roots):
  an import of one of them that resolves nowhere is *unproven*, never "outside the repository".

Nothing here runs the packaging: ``setup.py`` is read as syntax (literal keywords only).
"""

from __future__ import annotations

import ast
import configparser
import posixpath
import re
import tomllib
from dataclasses import dataclass

from ci_runner.file_safety import read_regular_text
from ci_runner.impact.index import RepoIndex

PACKAGING_FILES = ("pyproject.toml", "setup.cfg", "setup.py")
CONFIG_FILES = (*PACKAGING_FILES, "pytest.ini", "tox.ini")  # pytest reads the first three too
_CONVENTIONAL = ("", "src")  # setuptools' automatic discovery: flat and src layouts
_BUILD_TOOLS = ("setuptools", "poetry", "flit", "hatch", "maturin", "scikit-build", "pdm")


@dataclass(frozen=True)
class ImportRoots:
    """The import roots and top-level names the repository's packaging declares."""

    roots: tuple[str, ...]  # root-relative POSIX directories, "" never among them
    packages: tuple[tuple[str, str], ...]  # (top-level name, directory): roots for one package
    names: frozenset[str]
    sources: dict[str, tuple[str, ...]]  # root -> the packaging files that declare it


@dataclass(frozen=True)
class _Place:
    """Where packaging puts packages: a directory relative to the packaging file, serving
    every package in it, or (``package``) only that dotted package, which must lie there."""

    directory: str
    package: str = ""


def read_import_roots(index: RepoIndex) -> ImportRoots:
    """The roots and names of every packaging and pytest file of the tree (module docstring)."""
    sources: dict[str, list[str]] = {}
    packages: dict[tuple[str, str], None] = {}
    names: set[str] = set()
    for path in sorted({p for name in CONFIG_FILES for p in index.by_name.get(name, ())}):
        try:
            text = read_regular_text(index.root / path)
        except (OSError, UnicodeDecodeError):
            continue
        parsed = _parse(path, text)
        if not path.endswith(("pytest.ini", "tox.ini")):
            places, declared = _declared(index, path, parsed)
            names.update(declared)
            for root, package in places:
                if package:
                    packages[package, root] = None
                    sources.setdefault(f"{root}/{package}".lstrip("/"), []).append(path)
                else:
                    sources.setdefault(root, []).append(path)
        for root in _pytest_pythonpath(index, path, parsed):
            sources.setdefault(root, []).append(path)
    roots = tuple(sorted(r for r in sources if r and r in index.dirs and _is_root(r, packages)))
    for root in roots:
        names.update(_top_level_names(index, root))
    names.update(name for name, _root in packages)
    return ImportRoots(
        roots,
        tuple(sorted(packages)),
        frozenset(n for n in names if n.isidentifier()),
        {root: tuple(dict.fromkeys(paths)) for root, paths in sources.items() if root},
    )


def _is_root(directory: str, packages: dict[tuple[str, str], None]) -> bool:
    """A directory of ``sources`` that is a whole root, not one package's own directory."""
    return not any(f"{root}/{name}".lstrip("/") == directory for name, root in packages)


def _parse(path: str, text: str) -> object:
    """A configuration file read once: TOML as a dict, INI as a ConfigParser, ``setup.py`` as
    syntax; None when it does not parse (it then declares nothing)."""
    try:
        if path.endswith(".toml"):
            return tomllib.loads(text)
        if path.endswith("setup.py"):
            return ast.parse(text)
        parser = configparser.ConfigParser(interpolation=None)
        parser.read_string(text)
        return parser
    except (tomllib.TOMLDecodeError, configparser.Error, SyntaxError, ValueError, RecursionError):
        return None


def _declared(
    index: RepoIndex, path: str, parsed: object
) -> tuple[list[tuple[str, str]], set[str]]:
    """The ``(root, top-level package or "")`` pairs and the names one packaging file declares;
    a file that does not parse declares nothing."""
    directory = posixpath.dirname(path)
    if parsed is None:
        return [], set()
    if isinstance(parsed, dict):
        explicit, names = _from_pyproject(parsed)
    elif isinstance(parsed, configparser.ConfigParser):
        explicit, names = _from_setup_cfg(parsed)
    else:
        explicit, names = _from_setup_py(parsed)
    if explicit is None:  # nothing says where: the conventional layouts
        explicit = [_Place(d) for d in _CONVENTIONAL]
    found = []
    for place in explicit:
        root = posixpath.normpath(posixpath.join(directory, place.directory))
        root = "" if root == "." else root
        top = place.package.split(".")[0]
        if place.package:  # the package's directory must end with its dotted name
            tail = place.package.replace(".", "/")
            if root != tail and not root.endswith("/" + tail):
                continue
            root = root[: -len(tail)].rstrip("/")
            if not root.startswith("..") and f"{root}/{top}".lstrip("/") in index.dirs:
                found.append((root, top))
        elif not root.startswith("..") and _holds_python(index, root):
            found.append((root, ""))
    return found, names


def _identifier(name: object) -> str | None:
    """A distribution or package name as the import name it usually is (``sglang-router`` ->
    ``sglang_router``); only its top level."""
    if not isinstance(name, str):
        return None
    top = re.sub(r"[-.]+", "_", name.strip())
    return top if top.isidentifier() else None


def _top(dotted: object) -> str | None:
    return dotted.split(".")[0] if isinstance(dotted, str) and dotted else None


def _from_pyproject(data: dict) -> tuple[list[_Place] | None, set[str]]:
    tool = _table(data.get("tool"))
    project = _table(data.get("project"))
    names = {n for n in [_identifier(project.get("name"))] if n}
    roots: list[_Place] = []
    said = False
    if not project and "build-system" not in data and not any(k in tool for k in _BUILD_TOOLS):
        return [], names  # configuration of other tools only (a catalog, a linter): no package
    setuptools = _table(tool.get("setuptools"))
    find = _table(_table(setuptools.get("packages")).get("find"))
    if find:
        said = True
        roots += [_Place(d) for d in _strings(find.get("where", ["."]))]
    packages = setuptools.get("packages")
    if isinstance(packages, list):
        said = True
        names.update(t for t in map(_top, packages) if t)
    names.update(t for t in map(_top, _strings(setuptools.get("py-modules", []))) if t)
    for package, location in _table(setuptools.get("package-dir")).items():
        said = True
        roots += _mapped_root(package, location)
        if package:
            names.add(package.split(".")[0])
    wheel = _table(_table(tool.get("scikit-build")).get("wheel"))
    for location in _strings(wheel.get("packages", [])):
        said = True
        roots.append(_Place(location.rstrip("/"), posixpath.basename(location.rstrip("/"))))
        names.add(posixpath.basename(location.rstrip("/")))
    maturin = _table(tool.get("maturin"))
    if maturin:
        source = maturin.get("python-source")
        roots += [_Place(d) for d in (_strings([source]) if source is not None else [""])]
        said = True
        names.update(t for t in [_top(maturin.get("module-name"))] if t)
    hatch = _table(
        _table(_table(_table(tool.get("hatch")).get("build")).get("targets")).get("wheel")
    )
    for location in _strings(hatch.get("packages", [])):
        said = True
        roots.append(_Place(location.rstrip("/"), posixpath.basename(location.rstrip("/"))))
        names.add(posixpath.basename(location.rstrip("/")))
    poetry = _table(tool.get("poetry"))
    names.update(n for n in [_identifier(poetry.get("name"))] if n)
    for entry in poetry.get("packages", []) if isinstance(poetry.get("packages"), list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("include"), str):
            said = True
            include = entry["include"].split("/")[0]
            where = entry.get("from", "") if isinstance(entry.get("from", ""), str) else ""
            roots.append(_Place(posixpath.join(where, include), include))
            names.add(include)
    flit = _table(_table(tool.get("flit")).get("module"))
    names.update(n for n in [_top(flit.get("name"))] if n)
    return (roots if said else None), names


def _mapped_root(package: str, location: object) -> list[_Place]:
    """``package-dir``: ``{"" = "src"}`` is a root; ``{"a.b" = "x/a/b"}`` (or ``"."`` in
    ``x/a/b/``) puts package ``a`` in ``x``; a package renamed to another directory is in no
    root (its name stays unresolved: unproven)."""
    if not isinstance(location, str):
        return []
    location = location.strip("/") or "."
    return [_Place(location, package)] if package else [_Place(location)]


def _from_setup_cfg(parser: configparser.ConfigParser) -> tuple[list[_Place] | None, set[str]]:
    names = {n for n in [_identifier(parser.get("metadata", "name", fallback=None))] if n}
    roots: list[_Place] = []
    said = False
    if not parser.has_section("metadata") and not parser.has_section("options"):
        return [], names  # pytest's or flake8's configuration only: no package
    for line in parser.get("options", "package_dir", fallback="").splitlines():
        package, _, location = line.partition("=")
        if location:
            said = True
            roots += _mapped_root(package.strip(), location.strip())
    where = parser.get("options.packages.find", "where", fallback=None)
    if where is not None:
        said = True
        roots += [_Place(w.strip()) for w in where.splitlines() if w.strip()]
    packages = parser.get("options", "packages", fallback="")
    for line in packages.replace(",", "\n").splitlines():
        if line.strip() and not line.strip().startswith("find"):
            names.add(line.strip().split(".")[0])
    return (roots if said else None), names


def _from_setup_py(tree: ast.Module) -> tuple[list[_Place] | None, set[str]]:
    """The literal keywords of a ``setup(...)`` call: name, packages, package_dir,
    py_modules, ``find_packages(where)``."""
    roots: list[_Place] = []
    names: set[str] = set()
    said = False
    calls_setup = False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        called = (
            node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        )
        if called in ("find_packages", "find_namespace_packages"):
            said = True
            where = (
                node.args[0]
                if node.args
                else next((k.value for k in node.keywords if k.arg == "where"), None)
            )
            literal = isinstance(where, ast.Constant) and isinstance(where.value, str)
            roots.append(_Place(where.value if literal else "."))
        if called != "setup":
            continue
        calls_setup = True
        for keyword in node.keywords:
            value = _literal(keyword.value)
            if keyword.arg == "name":
                names.update(n for n in [_identifier(value)] if n)
            elif keyword.arg in ("packages", "py_modules") and isinstance(value, list):
                names.update(t for t in map(_top, value) if t)
                said = said or keyword.arg == "packages"
            elif keyword.arg == "package_dir" and isinstance(value, dict):
                said = True
                for package, location in value.items():
                    roots += _mapped_root(package, location)
                    if package:
                        names.add(package.split(".")[0])
    if not calls_setup:
        return [], names
    return (roots if said else None), names


def _pytest_pythonpath(index: RepoIndex, path: str, parsed: object) -> list[str]:
    """pytest's ``pythonpath`` option in one configuration file: directories relative to it."""
    value: object = None
    if isinstance(parsed, dict):
        options = _table(_table(_table(parsed.get("tool")).get("pytest")).get("ini_options"))
        value = options.get("pythonpath")
    elif isinstance(parsed, configparser.ConfigParser):
        section = "tool:pytest" if path.endswith("setup.cfg") else "pytest"
        value = parsed.get(section, "pythonpath", fallback=None)
    entries = value.split() if isinstance(value, str) else _strings(value or [])
    directory = posixpath.dirname(path)
    found = []
    for entry in entries:
        root = posixpath.normpath(posixpath.join(directory, entry))
        root = "" if root == "." else root
        if not root.startswith("..") and (root == "" or root in index.dirs):
            found.append(root)
    return found


def _holds_python(index: RepoIndex, directory: str) -> bool:
    """Whether ``directory`` holds a package (a directory with ``__init__.py``) or a module."""
    prefix = directory + "/" if directory else ""
    return any(
        f"{prefix}{child}/__init__.py" in index.files or f"{prefix}{child}.py" in index.files
        for child in index.children.get(prefix, ())
    )


def _top_level_names(index: RepoIndex, root: str) -> set[str]:
    prefix = root + "/"
    return {
        child
        for child in index.children.get(prefix, ())
        if f"{prefix}{child}/__init__.py" in index.files or f"{prefix}{child}.py" in index.files
    }


def _table(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _literal(node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None
