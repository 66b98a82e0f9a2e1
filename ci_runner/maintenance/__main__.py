"""``python -m ci_runner.maintenance COMMAND [ARGS]``: the maintenance tools.

The workflows, this repository's pre-commit hooks and those of ``.pre-commit-hooks.yaml`` (in
another repository, where pre-commit installs this package) all run them this way.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from ci_runner.cli_errors import robust_output

# command -> (module in ci_runner.maintenance, its entry function)
COMMANDS: dict[str, tuple[str, str]] = {
    "check-no-registered-tests-in-package": ("registration_lints", "main_no_tests_in_package"),
    "check-registered-tests": ("registration_lints", "main_registered_tests"),
    "check-workflow-dispatch": ("workflow_coverage", "main"),
    "flaky-report": ("flaky_report", "main"),
    "merge-junit": ("junit_merge", "main"),
    "update-est-time": ("est_time", "main"),
}


def main(argv: Sequence[str] | None = None) -> int:
    robust_output()  # before anything prints: usage, --help, a closed pipe
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in COMMANDS:
        asked_for_help = bool(args) and args[0] in ("-h", "--help")
        unknown = f"unknown command {args[0]!r}; " if args and not asked_for_help else ""
        print(
            f"usage: python -m ci_runner.maintenance COMMAND [ARGS]\n{unknown}commands: "
            + ", ".join(COMMANDS),
            file=sys.stderr,
        )
        return 0 if asked_for_help else 2
    module, function = COMMANDS[args[0]]
    entry = getattr(importlib.import_module(f"ci_runner.maintenance.{module}"), function)
    return entry(args[1:])


if __name__ == "__main__":
    sys.exit(main())
