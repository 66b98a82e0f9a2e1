"""Stage 4, planning: the selected files packed onto shards, and how that is shown.

* :mod:`.packing`: the deterministic shard plan (:func:`~ci_runner.plan.packing.plan`);
* :mod:`.matrix`: GitHub Actions shard matrices sized from the plan (``--print-matrix``);
* :mod:`.report`: the selection and plan as text, or as the ``--dry-run --format json`` object.
"""

from ci_runner.plan.matrix import MatrixError, build_matrix
from ci_runner.plan.packing import Plan, lpt_plan, plan
from ci_runner.plan.report import dry_run_document, plan_lines, selection_lines

__all__ = [
    "MatrixError",
    "Plan",
    "build_matrix",
    "dry_run_document",
    "lpt_plan",
    "plan",
    "plan_lines",
    "selection_lines",
]
