"""The ``TIMINGS`` block printed at the end of a shard (catalog: ``timings-block = true``).

SGLang's dashboards (sglang-ci-stats) scrape it from the job log to refresh est_time::

    ========== TIMINGS BEGIN ==========
    {"file": "test/registered/x/test_a.py", "passed": true, "elapsed": 42}
    ========== TIMINGS END ==========

One line per file that ran, in run order: ``file`` relative to the repository root, ``passed``
(passed, or passed on a retry), ``elapsed`` whole seconds of its last attempt (the time limit
when that attempt timed out). Files never started (fail-fast, skipped, disabled) are left out.
"""

from __future__ import annotations

import json

from ci_runner.model import FLAKY, NOT_RUN, PASSED, TIMEOUT, FileResult
from ci_runner.safe_text import printable

BEGIN = "========== TIMINGS BEGIN =========="
END = "========== TIMINGS END =========="


def timings_block(results: list[FileResult]) -> str:
    """The block's text (with its BEGIN/END lines) for the shard's results."""
    lines = [BEGIN]
    for result in results:
        ran = [a for a in result.attempts if a.status != NOT_RUN]
        if not ran:
            continue
        last = ran[-1]
        elapsed = last.timeout_limit if last.status == TIMEOUT else last.elapsed
        record = {
            "file": printable(result.path),
            "passed": result.status in (PASSED, FLAKY),
            "elapsed": round(elapsed),
        }
        lines.append(json.dumps(record))
    lines.append(END)
    return "\n".join(lines)
