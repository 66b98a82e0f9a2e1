"""Stage 1, the suite catalog: ``[tool.ci-runner]`` in the repository's ``pyproject.toml``.

* :mod:`.suites`: the suites and where registered files live, read and validated from the table;
* :mod:`.syntax`: what a registration call may look like there (markers, ``suite-template``,
  ``ignored-arguments``).

The catalog is data, so another repository adopts the runner by writing its own table.
"""

from ci_runner.catalog.suites import (
    ALL_GPUS,
    BACKENDS,
    CATALOG_FILE,
    DEFAULT_FILE_PATTERNS,
    DEFAULT_TIMEOUT_PER_FILE,
    NEVER_COLLECTED,
    Catalog,
    CatalogError,
    Suite,
    find_root,
    load_catalog,
    load_syntax,
    parse_catalog,
    unknown_suite_message,
)
from ci_runner.catalog.syntax import (
    DEFAULT_SYNTAX,
    RegistrationSyntax,
    SuiteTemplate,
    SyntaxConfigError,
    parse_syntax,
    parse_template,
)

__all__ = [
    "ALL_GPUS",
    "BACKENDS",
    "CATALOG_FILE",
    "DEFAULT_FILE_PATTERNS",
    "DEFAULT_SYNTAX",
    "DEFAULT_TIMEOUT_PER_FILE",
    "NEVER_COLLECTED",
    "Catalog",
    "CatalogError",
    "RegistrationSyntax",
    "Suite",
    "SuiteTemplate",
    "SyntaxConfigError",
    "find_root",
    "load_catalog",
    "load_syntax",
    "parse_catalog",
    "parse_syntax",
    "parse_template",
    "unknown_suite_message",
]
