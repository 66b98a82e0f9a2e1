"""Moved to :mod:`ci_runner.workflows.expressions` (``init`` reads workflows too); re-exported."""

from ci_runner.workflows.expressions import *  # noqa: F403
from ci_runner.workflows.expressions import UNKNOWN, evaluate  # noqa: F401
