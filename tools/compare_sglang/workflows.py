"""Moved to :mod:`ci_runner.workflows.invocations` (``init`` reads workflows too); re-exported."""

from ci_runner.workflows.invocations import (  # noqa: F401
    WORKFLOW_DIR,
    Invocation,
    PartitionsFor,
    Unresolved,
    WorkflowScan,
    load_workflows,
    scan_workflows,
)
