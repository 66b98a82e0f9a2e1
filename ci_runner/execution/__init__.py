"""Running one shard's files: the seam between planning (cli) and execution.

The CLI calls exactly three things from here:

* :func:`add_execution_arguments` to add the execution flags to the parser,
* :func:`validate_execution_arguments` after parsing (usage errors exit 2 via ``parser.error``),
* :func:`execute_shard` with the shard's files (longest first) and the plan context; its return
  value is the process exit code.
"""

from ci_runner.execution.api import (
    add_execution_arguments,
    execute_shard,
    validate_execution_arguments,
)
from ci_runner.model import DisabledFile, FileToRun, ShardContext

__all__ = [
    "DisabledFile",
    "FileToRun",
    "ShardContext",
    "add_execution_arguments",
    "execute_shard",
    "validate_execution_arguments",
]
