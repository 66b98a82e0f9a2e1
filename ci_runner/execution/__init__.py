"""Stage 5, execution: running one shard's files, each in its own process session.

* :mod:`.shard`: :func:`execute_shard`, the entry point: files, plan context, options, listener;
* :mod:`.options`: :class:`ExecutionOptions`, how files run (built once by the CLI);
* :mod:`.listener`: :class:`ShardListener`, what the executor tells about the run (the reports
  implement it; the CLI connects them);
* :mod:`.shard_runner`: the loop handing files to free GPU slots, fail-fast and stops;
* :mod:`.file_runner`: one file's attempts; :mod:`.process_tree`, :mod:`.timeouts`,
  :mod:`.retry`, :mod:`.gpu_slots`, :mod:`.signals`, :mod:`.pytest_results`,
  :mod:`.captured_output`: their parts.

The return value of :func:`execute_shard` is the process exit code.
"""

from ci_runner.execution.listener import ShardListener
from ci_runner.execution.options import ExecutionOptions
from ci_runner.execution.shard import execute_shard

__all__ = ["ExecutionOptions", "ShardListener", "execute_shard"]
