"""Stage 3, selection: the files one invocation runs, by backend (``--hw``), suites
(``--suite a,b``) and cadence (``--nightly``).

* :mod:`.suites`: the requested suites, checked against the catalog;
* :mod:`.files`: the registrations of those suites merged to one entry per file.
"""

from ci_runner.select.files import Selection, gpu_need, select
from ci_runner.select.suites import SelectionError, parse_suite_list, resolve_suites

__all__ = [
    "Selection",
    "SelectionError",
    "gpu_need",
    "parse_suite_list",
    "resolve_suites",
    "select",
]
