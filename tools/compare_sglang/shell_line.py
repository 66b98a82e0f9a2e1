"""Moved to :mod:`ci_runner.workflows.shell_line` (``init`` reads workflows too); re-exported."""

from ci_runner.workflows.shell_line import *  # noqa: F403
