"""What the change analysis needs to know about a repository: ``[tool.ci-runner.change-impact]``.

Every key is optional; without the table the analysis still follows Python imports (import
roots from the packaging, wherever it lives: :mod:`.import_roots`) and fails open on everything
else it cannot attribute. The keys:

``python-roots``
    more directories ``import x`` resolves in, besides the root (the runner puts it on
    PYTHONPATH), each test file's own directory (``sys.path[0]`` of ``python <file>``) and the
    roots the packaging declares (``python/pyproject.toml``'s ``packages.find``, ...).
``kernel-source-dirs``
    where the relative file names given to a kernel loader resolve (``jit_kernel/csrc``).
``kernel-include-dirs``
    the ``-I`` directories of kernel builds (``jit_kernel/include``).
``kernel-loaders``
    the functions whose arguments name kernel sources: ``{function = "load_jit", arguments =
    ["cpp_files", "cuda_files"]}``; an argument is a keyword or a 0-based position.
``run-everything``
    paths whose change selects the whole suite (the runner and the toolchain themselves), as
    ``.gitignore`` patterns relative to the root (:mod:`.path_rules`).
``ignore``
    paths whose change affects no test (documentation), as ``.gitignore`` patterns; a path a
    test is known to read is not ignored (see :mod:`.selection`).
``dynamic-imports``
    ``"fail-open"`` (default) or ``"named-modules"``: what an import whose module name is computed
    at run time may load (see docs/change-impact.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ci_runner.catalog import Catalog, CatalogError
from ci_runner.catalog.keys import unknown_keys_message
from ci_runner.impact.path_rules import PatternError, check_patterns

TABLE = "change-impact"
FAIL_OPEN = "fail-open"
NAMED_MODULES = "named-modules"
DYNAMIC_IMPORT_POLICIES = (FAIL_OPEN, NAMED_MODULES)
DEFAULT_LOADERS: tuple[tuple[str, tuple[str | int, ...]], ...] = (
    ("load_jit", ("cpp_files", "cuda_files")),
)
_KEYS = {
    "python-roots",
    "kernel-source-dirs",
    "kernel-include-dirs",
    "kernel-loaders",
    "run-everything",
    "ignore",
    "dynamic-imports",
}


@dataclass(frozen=True)
class KernelLoader:
    """A function whose arguments (keywords or 0-based positions) name kernel source files."""

    function: str
    arguments: tuple[str | int, ...]


@dataclass(frozen=True)
class ImpactConfig:
    """The repository's layout as the change analysis sees it; paths POSIX, relative to the root."""

    root: Path
    registered_dir: str
    python_roots: tuple[str, ...]
    kernel_source_dirs: tuple[str, ...] = ()
    kernel_include_dirs: tuple[str, ...] = ()
    kernel_loaders: tuple[KernelLoader, ...] = ()
    run_everything: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    dynamic_imports: str = FAIL_OPEN

    @property
    def kernel_dirs(self) -> tuple[str, ...]:
        return (*self.kernel_source_dirs, *self.kernel_include_dirs)


def load_impact_config(catalog: Catalog) -> ImpactConfig:
    """The ``change-impact`` table of the catalog, checked; raises :class:`CatalogError` naming
    the key."""
    table = catalog.table.get(TABLE, {})
    where = catalog.where(TABLE)
    if not isinstance(table, dict):
        raise CatalogError(f"{where}: must be a table")
    if message := unknown_keys_message(table, sorted(_KEYS), where):
        raise CatalogError(message)
    root = catalog.root
    policy = table.get("dynamic-imports", FAIL_OPEN)
    if policy not in DYNAMIC_IMPORT_POLICIES:
        raise CatalogError(
            f"{where}: dynamic-imports must be one of {', '.join(map(repr, DYNAMIC_IMPORT_POLICIES))}, "
            f"got {policy!r}"
        )
    return ImpactConfig(
        root=root,
        registered_dir=catalog.registered_dir,
        python_roots=_dirs(root, table.get("python-roots", []), where, "python-roots"),
        kernel_source_dirs=_dirs(
            root, table.get("kernel-source-dirs", []), where, "kernel-source-dirs"
        ),
        kernel_include_dirs=_dirs(
            root, table.get("kernel-include-dirs", []), where, "kernel-include-dirs"
        ),
        kernel_loaders=_loaders(table.get("kernel-loaders"), where),
        run_everything=_globs(table.get("run-everything", []), where, "run-everything"),
        ignore=_globs(table.get("ignore", []), where, "ignore"),
        dynamic_imports=policy,
    )


def _relative(root: Path, value: object, where: str, key: str) -> str:
    """A relative path inside the repository, POSIX, without ``..``."""
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        raise CatalogError(f"{where}: each {key} entry must be a non-empty path, got {value!r}")
    path = PurePosixPath(value)
    if path.is_absolute() or ".." in path.parts:
        raise CatalogError(
            f"{where}: {key} entry {value!r} must be a relative path inside the repository "
            "(not absolute, no '..')"
        )
    return path.as_posix()


def _dirs(root: Path, values: object, where: str, key: str) -> tuple[str, ...]:
    """Existing directories of the repository, in order, each once."""
    if not isinstance(values, list):
        raise CatalogError(f"{where}: {key} must be a list of directories, got {values!r}")
    found: list[str] = []
    for value in values:
        path = _relative(root, value, where, key)
        if not (root / path).is_dir():
            raise CatalogError(f"{where}: {key} entry {value!r} is not a directory under {root}")
        if path not in found:
            found.append(path)
    return tuple(found)


def _globs(values: object, where: str, key: str) -> tuple[str, ...]:
    example = '["docs/**", "*.md"]' if key == "ignore" else '["ci_runner/**", "/run_suite.py"]'
    if not isinstance(values, list) or not all(isinstance(v, str) and v.strip() for v in values):
        raise CatalogError(
            f"{where}: {key} must be a list of non-empty .gitignore patterns (relative to the "
            f"root, e.g. {example}), got {values!r}"
        )
    try:
        check_patterns(tuple(values))
    except PatternError as exc:
        raise CatalogError(f"{where}: {key} entry {exc}") from None
    return tuple(values)


def _loaders(values: object, where: str) -> tuple[KernelLoader, ...]:
    if values is None:
        return tuple(KernelLoader(name, args) for name, args in DEFAULT_LOADERS)
    expected = (
        'a list of tables like {function = "load_jit", arguments = ["cpp_files", "cuda_files"]} '
        "(each argument a keyword or a 0-based position)"
    )
    if not isinstance(values, list):
        raise CatalogError(f"{where}: kernel-loaders must be {expected}, got {values!r}")
    loaders = []
    for index, entry in enumerate(values):
        spot = f"{where}: kernel-loaders[{index}]"
        if not isinstance(entry, dict) or set(entry) != {"function", "arguments"}:
            raise CatalogError(f"{spot} must be {expected}, got {entry!r}")
        function, arguments = entry["function"], entry["arguments"]
        if not isinstance(function, str) or not function.isidentifier():
            raise CatalogError(f"{spot}: function must be a Python name, got {function!r}")
        if (
            not isinstance(arguments, list)
            or not arguments
            or not all(
                (isinstance(a, str) and a.isidentifier())
                or (isinstance(a, int) and not isinstance(a, bool) and 0 <= a < 64)
                for a in arguments
            )
        ):
            raise CatalogError(
                f"{spot}: arguments must be a non-empty list of keyword names and 0-based "
                f"positions (0 to 63), got {arguments!r}"
            )
        loaders.append(KernelLoader(function, tuple(arguments)))
    return tuple(loaders)
