"""Stage 3, selection: the files one invocation runs, by backend (``--hw``), suites
(``--suite a,b``) and cadence (``--nightly``).

* :mod:`.suites`: the requested suites, checked against the catalog once (:class:`SuiteRequest`);
* :mod:`.files`: the registrations of those suites merged to one entry per file.
"""

from ci_runner.select.files import Selection, empty_notice, gpu_need, select, select_files
from ci_runner.select.suites import (
    SelectionError,
    SuiteRequest,
    parse_suite_list,
    request_from_text,
    request_suites,
    resolve_suites,
)

__all__ = [
    "Selection",
    "SelectionError",
    "SuiteRequest",
    "empty_notice",
    "gpu_need",
    "parse_suite_list",
    "request_from_text",
    "request_suites",
    "resolve_suites",
    "select",
    "select_files",
]
